import ArgumentParser

/// The verbs that talk HTTP, for `vault-net`'s root command (`Root.configuration(networkVerbs:)`).
package var networkCommands: [any ParsableCommand.Type] {
    [Login.self, Fetch.self, Logout.self, CredentialHelper.self, Device.self, DockerCredentialHelper.self, OTPCommand.self, Sync.self, Import.self, Export.self]
}

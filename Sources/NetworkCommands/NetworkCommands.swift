import ArgumentParser

/// The verbs only `vault-net` runs, in the order of their rows in `RoutedVerb.all` (`Root.vaultNetConfiguration`).
package var networkCommands: [any ParsableCommand.Type] {
    [Login.self, Fetch.self, Logout.self, Device.self, OTPCommand.self, Sync.self, RemoteCommand.self, Import.self, Export.self, SSHCommand.self, SecretServiceCommand.self]
}

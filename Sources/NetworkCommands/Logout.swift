import ArgumentParser
import Foundation
import VaultAuth
import VaultCommands
import VaultCore

// `vault logout`: forget the credentials of an origin (VaultAuth; see docs/AUTH.md).

package struct Logout: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: RoutedVerb.named("logout").abstract,
        discussion: "Exit 2 when none is stored.")

    @Argument(help: "A URL of the origin (scheme, host and port count; the path does not).")
    var url: String

    @OptionGroup var options: VaultOptions

    package func run() async throws {
        try await reportingErrors(json: options.json) {
            guard let parsed = URL(string: url), let origin = Origin(parsed) else {
                throw AuthenticationError.unsupportedURL(url)
            }
            let vault = try openVault(options)
            defer { vault.close() }
            let credentials = VaultCredentialStore(store: vault)
            let stored = try credentials.storedSpaces().filter { $0.origin == origin }
            // With docker's registry entries on that origin (docker-credential-vault's), in one write.
            var changes = SecureKeyValueStore.Changes()
            if !stored.isEmpty { try credentials.stageRemoval(of: stored, into: &changes) }
            let spaces = stored + (try DockerRegistryEntries(vault: vault).logout(of: origin, with: changes))
            guard !spaces.isEmpty else {
                throw NetworkCLIError.noCredential(origin: origin.description, path: vault.path)
            }
            if options.json {
                try writeJSON(["origin": origin.description, "removed": spaces.map { ["realm": $0.realm] }])
            } else {
                try writeToStdout(spaces.map { "logged out of \($0)\n" }.joined())
            }
        }
    }
}

import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore
import VaultCredentials
import VaultTerminal

/// `docker-credential-vault store|get|erase|list|version` (a symbolic link to `vault`, which dispatches on its
/// name: ``RoutedVerb/programName``), also `vault docker-credential ACTION`: the credential-helper protocol of
/// docker-credential-helpers (`credentials/credentials.go`), which the docker CLI and containers/image
/// (podman, skopeo, buildah) run for `credsStore`/`credHelpers`.
///
/// As that library does: the action is the one argument; `store` reads `{"ServerURL","Username","Secret"}`,
/// `get` and `erase` read the server URL (surrounding white space trimmed), `get` prints
/// `{"ServerURL","Username","Secret"}`, `list` prints `{"<server URL>":"<username>",...}`; every failure is one
/// line **on stdout** and exit 1, and a miss is exactly `credentials not found in native keychain`.
/// A `Username` of `<token>` marks an identity token in `Secret`; it is kept and returned as given.
///
/// Each login is one entry per registry, `docker/<host[:port]>` with fields `server_url` (exactly as the client gave
/// it: `list` gives it back), `username` and `secret` (``DockerRegistryEntries``, which also reads and migrates the
/// two entries per login of earlier versions); `vault logout` of the registry's origin removes it too.
package struct DockerCredentialHelper: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "docker-credential",
        abstract: RoutedVerb.named("docker-credential").abstract,
        discussion: """
            Link vault as docker-credential-vault on PATH (scripts/install does) and name it in ~/.docker/config.json ("credsStore": "vault") or in a credHelpers entry of containers' auth.json. The vault is VAULT_PATH or the default; the passphrase comes from the agent (vault unlock), VAULT_PASSPHRASE or the terminal. `list` never asks: with the vault locked it fails.
            """)

    @Argument(help: "store, get, erase, list or version.")
    var action: String

    /// The message every helper prints for a miss; clients compare it exactly.
    static let notFound = "credentials not found in native keychain"
    /// Pseudo-realm prefix of the helper's entries.
    static let realmPrefix = "docker/"
    /// The most stdin accepted (a `store` request), in bytes.
    static let maximumInputByteCount = 1 << 20

    @OptionGroup var options: VaultOptions

    package mutating func run() throws {
        options.caller = "docker credential helper"
        do {
            try perform()
        } catch let error as DockerHelperFailure {
            // One line, whatever the input held (a server URL with a newline or NUL is echoed escaped).
            try? writeToStdout(TerminalText.escaped(error.message) + "\n")
            throw ExitCode(1)
        } catch let error as ExitCode {
            throw error
        } catch {
            // Library errors: the words the CLI uses (message, hint), as one line on stdout.
            let reportable = error as? any CLIReportable
            let text = (reportable?.message ?? "\(error)") + (reportable?.hint.map { " (\($0))" } ?? "")
            try? writeToStdout(TerminalText.escaped(text) + "\n")
            throw ExitCode(1)
        }
    }

    func perform() throws {
        switch action {
        case "store":
            let input = try SecretInput.read(fd: 0, limit: Self.maximumInputByteCount, untilNewline: false, name: "stdin")
            let fields = try JSONStringObject.parse(input)
            guard let serverURL = fields["ServerURL"]?.stringValue, !serverURL.isEmpty else {
                throw DockerHelperFailure("no credentials server URL")
            }
            guard let username = fields["Username"]?.stringValue, !username.isEmpty else {
                throw DockerHelperFailure("no credentials username")
            }
            let space = try Self.space(for: serverURL)
            try withVault(mayPrompt: true, createIfMissing: true) { registries in
                let secret = fields["Secret"] ?? SecureBytes(count: 0) { _ in }
                try registries.store(Credential(username: username, password: secret), for: serverURL, space: space)
            }
        case "get":
            let serverURL = try Self.readServerURL()
            let space = try Self.space(for: serverURL)
            let credential = try withVault(mayPrompt: true) { try $0.credential(for: serverURL, space: space) }
            guard let credential = credential ?? nil else { throw DockerHelperFailure(Self.notFound) }
            var json = JSONObjectWriter()
            json.add("ServerURL", serverURL)
            json.add("Username", credential.username)
            json.add("Secret", credential.password)
            try json.bytes().withUnsafeBytes { try writeToStdout($0) }
        case "erase":
            let serverURL = try Self.readServerURL()
            let space = try Self.space(for: serverURL)
            let removed = try withVault(mayPrompt: true) { try $0.erase(serverURL, space: space) }
            guard removed == true else { throw DockerHelperFailure(Self.notFound) }
        case "list":
            let logins = try withVault(mayPrompt: false) { try $0.logins() } ?? []
            var json = JSONObjectWriter()
            for login in logins { json.add(login.serverURL, login.username) }
            try json.bytes().withUnsafeBytes { try writeToStdout($0) }
        case "version":
            try writeToStdout("docker-credential-vault (vault) 1\n")
        default:
            throw DockerHelperFailure("Unknown credential action `\(action)`")
        }
    }

    /// Runs `body` on the vault's credentials; `nil` without running it when there is no vault file (unless
    /// `createIfMissing`, where opening reports the missing vault). `mayPrompt: false`: the agent or a
    /// passphrase source only, else a failure that names `vault unlock`.
    func withVault<R>(
        mayPrompt: Bool, createIfMissing: Bool = false, _ body: (DockerRegistryEntries) throws -> R
    ) throws -> R? {
        if !createIfMissing && !options.makeStore().exists { return nil }
        let vault: any KeyValueVault
        if mayPrompt || options.hasPassphraseSource {
            vault = try openVault(options)
        } else if let unlocked = try AgentAccess.vault(for: options, mayPrompt: false) {
            vault = unlocked
        } else {
            throw DockerHelperFailure("the vault '\(options.resolvedPath)' is locked (run 'vault unlock'); not asking")
        }
        defer { vault.close() }
        return try body(DockerRegistryEntries(vault: vault))
    }

    /// The server URL on stdin, white space around it trimmed.
    static func readServerURL() throws -> String {
        let input = try SecretInput.read(fd: 0, limit: maximumInputByteCount, untilNewline: false, name: "stdin")
        let text = input.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw DockerHelperFailure("no credentials server URL") }
        return trimmed
    }

    /// The protection space of `serverURL`: `[http(s)://]host[:port][/path]`, its origin exactly the host named
    /// (``Origin/init(scheme:authority:)``), realm `docker/<serverURL>`.
    static func space(for serverURL: String) throws -> ProtectionSpace {
        let refused = DockerHelperFailure("not a registry server URL (scheme://host[:port][/path]): '\(serverURL)'")
        guard !serverURL.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { throw refused }
        var scheme = "https"
        var rest = Substring(serverURL)
        if let separator = serverURL.firstRange(of: "://") {
            scheme = String(serverURL[..<separator.lowerBound])
            rest = serverURL[separator.upperBound...]
        }
        let authority = rest.prefix { $0 != "/" }
        guard let origin = Origin(scheme: scheme, authority: String(authority)) else { throw refused }
        return ProtectionSpace(origin: origin, realm: realmPrefix + serverURL)
    }

    /// The server URL a space of this helper was stored for, or `nil` for another realm.
    static func serverURL(of space: ProtectionSpace) -> String? {
        guard space.realm.hasPrefix(realmPrefix) else { return nil }
        let serverURL = String(space.realm.dropFirst(realmPrefix.count))
        guard (try? Self.space(for: serverURL)) == space else { return nil }
        return serverURL
    }
}

/// A failure reported the way docker-credential-helpers does: the message alone, on stdout, exit 1.
struct DockerHelperFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

import ArgumentParser
import Foundation
import MobileServices
import VaultAgent
import VaultAuth
import VaultCore
import VaultTerminal

// The SAP mobile-services tutorials' DemoApp on a terminal: on start it opens the vault, checks a stored
// registration once (or logs in and registers), then lists the back end's travel agencies as a table. The second
// run asks nothing.
//
// It is written as an embedder writes: on the package's library products only (VaultCore, VaultAgent,
// VaultTerminal, VaultAuth, MobileServices) and ArgumentParser, with its own options, prompt and error texts. The
// build enforces it: this target is compiled under a package name of its own, so the package-internal API of
// the `vault` CLI (`package` declarations) is out of its reach (Package.swift).

struct DemoApp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "DemoApp",
        abstract: "The tutorials' DemoApp: register this device with mobile services, then list the travel agencies.",
        discussion: """
            On start: open the vault (created when missing; the one `vault unlock` holds is used without a
            passphrase), check a stored registration once, or else log in (stored credentials, --username with
            --password-file/--password-fd, or a prompt on the terminal) and register; then print the travel
            agencies as a table on stdout. Status lines go to stderr. --server and --app-id are needed once;
            they are remembered in the vault.

            Exit status: 0 success, 1 failure (message and hint on stderr).
            """)

    @Option(help: ArgumentHelp("The vault file (default: $VAULT_PATH, else vault's default vault).", valueName: "path"))
    var vault: String?

    @Option(name: .customLong("passphrase-file"), help: ArgumentHelp("Read the vault passphrase from the first line of this file.", valueName: "path"))
    var passphraseFile: String?

    @Option(name: .customLong("passphrase-fd"), help: ArgumentHelp("Read the vault passphrase from this descriptor.", valueName: "n"))
    var passphraseFD: Int32?

    @Option(help: ArgumentHelp("The mobile-services base URL (default: the one remembered in the vault).", valueName: "url"))
    var server: String?

    @Option(name: .customLong("app-id"), help: ArgumentHelp("The application id (default: the remembered one).", valueName: "id"))
    var applicationId: String?

    @Option(help: ArgumentHelp("The user to log in as.", valueName: "name"))
    var username: String?

    @Option(name: .customLong("password-file"), help: ArgumentHelp("Read the password from the first line of this file.", valueName: "path"))
    var passwordFile: String?

    @Option(name: .customLong("password-fd"), help: ArgumentHelp("Read the password from this descriptor.", valueName: "n"))
    var passwordFD: Int32?

    @Option(help: ArgumentHelp("A PEM file of CA certificates to trust besides the system's.", valueName: "path"))
    var cacert: String?

    @Option(name: .customLong("pinned-pubkey"), help: ArgumentHelp("The server's public key must also match: sha256//BASE64.", valueName: "hashes"))
    var pinnedPublicKey: String?

    @Flag(name: .customLong("allow-insecure-http"), help: "Allow plain http to a loopback address (credentials go unencrypted).")
    var allowInsecureHTTP = false

    @Option(help: ArgumentHelp("Seconds the exchange may take.", valueName: "seconds"))
    var timeout: Double = 30

    @Flag(help: "Print the agencies as one JSON array.")
    var json = false

    func validate() throws {
        if (server == nil) != (applicationId == nil) { throw ValidationError("--server and --app-id go together") }
        if (passwordFile != nil || passwordFD != nil) && username == nil {
            throw ValidationError("--password-fd and --password-file need --username")
        }
        if let fd = passwordFD, fd == passphraseFD {
            throw ValidationError("the passphrase and the password need different descriptors")
        }
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be more than 0 and at most 3600 seconds") }
    }

    func run() async throws {
        do {
            try await start()
        } catch {
            // The library's errors describe themselves; the hints are this program's (they name its options).
            status("DemoApp: \(error)")
            if let hint = Self.hint(for: error) { status("hint: \(hint)") }
            throw ExitCode.failure
        }
    }

    private func start() async throws {
        var configuration: MobileServicesConfiguration?
        if let server, let applicationId {
            configuration = try MobileServicesConfiguration(server: server, applicationId: applicationId)
        }
        let tls = try TLSOptions(caCertificatesFile: cacert, pinnedPublicKey: pinnedPublicKey)
        // The password is read before the vault's passphrase prompt, so a pipe is drained first.
        var given: Credential?
        if let username, let password = try SecretInput.read(fd: passwordFD, file: passwordFile) {
            given = Credential(username: username, password: password)
        }
        let prompt = OnceThenTerminal(given: given, suggestedUsername: username)

        let store = try await openVault()
        defer { store.close() }

        let result = try await MobileServicesStartup.start(
            store: store, passphrase: nil, configuration: configuration, prompt: prompt,
            options: KeystoreAuthenticator.Options(allowInsecureLoopbackHTTP: allowInsecureHTTP),
            timeout: timeout, tls: tls)
        let target = result.client.configuration
        switch result.outcome {
        case .verified: status("registration with \(target.server) verified")
        case .registered: status("registered with \(target.server) (application \(target.applicationId))")
        case .reregistered: status("the registration was removed on the server; registered again with \(target.server)")
        }
        let agencies = try await result.client.travelAgencies()
        if json {
            let objects = agencies.map {
                ["agency": $0.agencyNumber, "name": $0.name, "city": $0.city, "country": $0.country, "telephone": $0.telephone]
            }
            let data = try JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .withoutEscapingSlashes])
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        } else {
            FileHandle.standardOutput.write(Data(Self.table(agencies).utf8))
        }
    }

    /// The vault: the one the agent holds unlocked (`vault unlock`), else opened here with the passphrase (and
    /// created, in the current format, when missing).
    private func openVault() async throws -> any KeyValueVault {
        let path = Self.absolute(vault ?? ProcessInfo.processInfo.environment["VAULT_PATH"].flatMap { $0.isEmpty ? nil : $0 }
            ?? SecureKeyValueStore.defaultDirectory + "/default.vault")
        // A missing or broken agent never stands in the way: the vault is then opened here.
        if let client = try? AgentClient.connect(), let unlocked = try? client.vault(at: path) { return unlocked }

        // `VAULT_TESTING_INSECURE_KDF=1`: vault's explicit test hook (cheap Argon2id), honoured as the CLI does.
        var options = ProcessInfo.processInfo.environment["VAULT_TESTING_INSECURE_KDF"] == "1"
            ? VaultStoreOptions.insecureForTesting : VaultStoreOptions()
        options.rollbackProtection = .standard  // as the CLI: the last generation seen is remembered
        let store = SecureKeyValueStore(path: path, options: options)
        let creating = !store.exists
        let passphrase = try readPassphrase(creating: creating)
        // The library's front door: any format version, a new vault in the current one (another process may
        // create it first: then that one is opened); Argon2id off the cooperative pool.
        try await store.perform { try $0.open(with: passphrase) }
        if creating { status("created vault '\(path)'") }
        return store
    }

    /// The passphrase from --passphrase-fd/--passphrase-file, $VAULT_PASSPHRASE or the terminal (twice for a new vault).
    private func readPassphrase(creating: Bool) throws -> SecureBytes {
        if let given = try SecretInput.read(fd: passphraseFD, file: passphraseFile) { return given }
        if let value = ProcessInfo.processInfo.environment["VAULT_PASSPHRASE"] { return SecureBytes(string: value) }
        guard let terminal = Terminal.controlling() else { throw DemoAppError.noPassphrase }
        guard let first = try terminal.readSecret(prompt: creating ? "New vault passphrase: " : "Vault passphrase: "),
              first.count > 0 else { throw DemoAppError.noPassphrase }
        if creating {
            guard let second = try terminal.readSecret(prompt: "Repeat the passphrase: "), second == first
            else { throw DemoAppError.passphrasesDiffer }
        }
        return first
    }

    private func status(_ line: String) {
        FileHandle.standardError.write(Data("\(TerminalText.escaped(line, keepingBackslashes: true))\n".utf8))
    }

    private static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    static func hint(for error: any Error) -> String? {
        switch error {
        case AuthenticationError.noPromptAvailable:
            return "pass --username NAME with --password-fd N or --password-file PATH, or run on a terminal"
        case DemoAppError.noPassphrase:
            return "run 'vault unlock' once, or pass --passphrase-fd N or --passphrase-file PATH, or set VAULT_PASSPHRASE"
        default:
            return nil
        }
    }

    /// The agencies as a plain-text table with a header row, columns padded with spaces.
    static func table(_ agencies: [TravelAgency]) -> String {
        let header = ["AGENCY", "NAME", "CITY", "COUNTRY", "TELEPHONE"]
        // The server's text, escaped: a cell cannot send control sequences to the terminal (``TerminalText``).
        let rows = agencies.map {
            [$0.agencyNumber, $0.name, $0.city, $0.country, $0.telephone].map { TerminalText.escaped($0) }
        }
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}

enum DemoAppError: Error, CustomStringConvertible {
    case noPassphrase, passphrasesDiffer

    var description: String {
        switch self {
        case .noPassphrase: return "no passphrase: there is no terminal to ask on"
        case .passphrasesDiffer: return "the passphrases differ"
        }
    }
}

@main
enum DemoAppMain {
    static func main() async {
        _ = ProcessHardening.apply()  // it holds the user's password: no core dumps, no ptrace
        await DemoApp.main()  // from an async context: the async entry point of AsyncParsableCommand
    }
}

import ArgumentParser
import Foundation
import MobileServices
import VaultAuth
import VaultCore
import VaultTerminal
import VaultCommands

// The seeds' DemoApp on a terminal: on start it opens the vault, checks a stored registration once (or logs in
// and registers), then lists the back end's travel agencies as a table. The second run asks nothing.

/// The vault and passphrase options of `vault` (a copy of its small `VaultOptions`).
struct VaultOptions: ParsableArguments {
    @Option(name: .customLong("vault"), help: ArgumentHelp("The vault file.", valueName: "path"))
    var vaultPath: String?

    @Option(
        name: .customLong("passphrase-fd"),
        help: ArgumentHelp("Read the passphrase from this file descriptor (first line).", valueName: "n"))
    var passphraseFD: Int32?

    @Option(
        name: .customLong("passphrase-file"),
        help: ArgumentHelp("Read the passphrase from the first line of this file (mode 0600).", valueName: "path"))
    var passphraseFile: String?

    func validate() throws {
        if passphraseFD != nil && passphraseFile != nil {
            throw ValidationError("--passphrase-fd and --passphrase-file cannot be used together")
        }
        if let fd = passphraseFD, fd < 0 { throw ValidationError("--passphrase-fd must be a file descriptor (0 or more)") }
        if let path = vaultPath, path.isEmpty { throw ValidationError("--vault needs a path") }
    }

    /// --vault, else $VAULT_PATH, else `$XDG_DATA_HOME/vault/default.vault`.
    var resolvedPath: String {
        let environment = ProcessInfo.processInfo.environment
        let path = vaultPath ?? environment["VAULT_PATH"].flatMap { $0.isEmpty ? nil : $0 }
            ?? SecureKeyValueStore.defaultDirectory + "/default.vault"
        return path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// `VAULT_TESTING_INSECURE_KDF=1` is the explicit test hook (cheap Argon2id), as for `vault`.
    var storeOptions: SecureKeyValueStore.Options {
        ProcessInfo.processInfo.environment["VAULT_TESTING_INSECURE_KDF"] == "1"
            ? .insecureForTesting : SecureKeyValueStore.Options()
    }

    /// --passphrase-fd, --passphrase-file, $VAULT_PASSPHRASE or the terminal (twice when `confirm`).
    func passphrase(confirm: Bool) throws -> SecureBytes {
        let secret: SecureBytes
        if let given = try SecretInput.read(fd: passphraseFD, file: passphraseFile) {
            secret = given
        } else if let value = ProcessInfo.processInfo.environment["VAULT_PASSPHRASE"] {
            secret = SecureBytes(string: value)
        } else {
            guard let terminal = Terminal.controlling() else { throw DemoError.noPassphraseSource }
            guard let first = try terminal.readSecret(prompt: confirm ? "New vault passphrase: " : "Vault passphrase: ")
            else { throw DemoError.emptyPassphrase }
            if confirm {
                let second = try terminal.readSecret(prompt: "Repeat to confirm: ") ?? SecureBytes([])
                guard first == second else { throw DemoError.passphrasesDiffer }
            }
            secret = first
        }
        guard secret.count > 0 else { throw DemoError.emptyPassphrase }
        return secret
    }
}

enum DemoError: Error, CustomStringConvertible {
    case noPassphraseSource
    case emptyPassphrase
    case passphrasesDiffer

    var description: String {
        switch self {
        case .noPassphraseSource:
            return "no passphrase: there is no terminal to ask on\n"
                + "hint: pass --passphrase-fd N or --passphrase-file PATH, or set VAULT_PASSPHRASE"
        case .emptyPassphrase: return "the passphrase is empty"
        case .passphrasesDiffer: return "the passphrases do not match"
        }
    }
}

struct DemoApp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "DemoApp",
        abstract: "The tutorials' DemoApp: register this device with mobile services, then list the travel agencies.",
        discussion: """
            On start: open the vault (created when missing), check a stored registration once, or else log
            in (stored credentials, --username with --password-fd/--password-file, or a prompt on the
            terminal) and register; then print the travel agencies as a table on stdout. Status lines go
            to stderr. --server and --app-id are needed once; they are remembered in the vault.

            Exit status: 0 success, 1 failure (message and hint on stderr).
            """)

    @OptionGroup var vault: VaultOptions

    @Option(help: ArgumentHelp("The mobile-services base URL (default: the one remembered in the vault).", valueName: "url"))
    var server: String?

    @Option(name: .customLong("app-id"), help: ArgumentHelp("The application id (default: the remembered one).", valueName: "id"))
    var appId: String?

    @Option(help: ArgumentHelp("The user to log in as, when a login is needed.", valueName: "name"))
    var username: String?

    @Option(name: .customLong("password-fd"), help: ArgumentHelp("Read the login password from this file descriptor.", valueName: "n"))
    var passwordFD: Int32?

    @Option(name: .customLong("password-file"), help: ArgumentHelp("Read the login password from the first line of this file.", valueName: "path"))
    var passwordFile: String?

    @Flag(
        name: .customLong("allow-insecure-http"),
        help: "Allow credentials over plain http to a loopback address (127.0.0.0/8, ::1, localhost) only.")
    var allowInsecureHTTP = false

    @Option(help: ArgumentHelp("Seconds a request may stay idle before it fails.", valueName: "seconds"))
    var timeout: Double = 30

    func validate() throws {
        if (server == nil) != (appId == nil) { throw ValidationError("--server and --app-id go together") }
        if passwordFD != nil && passwordFile != nil {
            throw ValidationError("--password-fd and --password-file cannot be used together")
        }
        if (passwordFD != nil || passwordFile != nil) && username == nil {
            throw ValidationError("--password-fd and --password-file need --username")
        }
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be in (0, 3600]") }
    }

    func run() async throws {
        do {
            try await start()
        } catch {
            var text = "DemoApp: \(error)\n"
            if let hint = (error as? any CLIReportable)?.hint { text += "hint: \(hint)\n" }
            if case AuthenticationError.noPromptAvailable = error {
                text = "DemoApp: " + String(describing: error).components(separatedBy: "\nhint: ")[0] + "\n"
                    + "hint: pass --username NAME with --password-fd N or --password-file PATH, or run on a terminal\n"
            }
            FileHandle.standardError.write(Data(text.utf8))
            throw ExitCode.failure
        }
    }

    private func start() async throws {
        var configuration: MobileServicesConfiguration?
        if let server, let appId {
            configuration = try MobileServicesConfiguration(server: server, applicationId: appId)
        }
        var prompt: any CredentialPrompting = TerminalCredentialPrompt()
        if let username, passwordFD != nil || passwordFile != nil {
            let password = try SecretInput.read(fd: passwordFD, file: passwordFile)!
            prompt = OnceCredentialPrompt(Credential(username: username, password: password))
        }

        let store = SecureKeyValueStore(path: vault.resolvedPath, options: vault.storeOptions)
        let creating = !store.exists
        try store.open(with: vault.passphrase(confirm: creating), createIfMissing: true)
        defer { store.close() }
        if creating { status("created vault '\(store.path)'") }

        let result = try await MobileServicesStartup.start(
            store: store, passphrase: nil, configuration: configuration, prompt: prompt,
            options: KeystoreAuthenticator.Options(allowInsecureLoopbackHTTP: allowInsecureHTTP), timeout: timeout)
        let target = result.client.configuration
        switch result.outcome {
        case .verified:
            status("registration with \(target.server) verified")
        case .registered:
            status("registered with \(target.server) (application \(target.applicationId))")
        case .reregistered:
            status("the registration was removed on the server; registered again with \(target.server)")
        }
        let agencies = try await result.client.travelAgencies()
        FileHandle.standardOutput.write(Data(Self.table(agencies).utf8))
    }

    private func status(_ line: String) {
        FileHandle.standardError.write(Data("\(line)\n".utf8))
    }

    /// The agencies as a plain-text table with a header row, columns padded with spaces.
    static func table(_ agencies: [TravelAgency]) -> String {
        let header = ["AGENCY", "NAME", "CITY", "COUNTRY", "TELEPHONE"]
        let rows = agencies.map { [$0.agencyNumber, $0.name, $0.city, $0.country, $0.telephone] }
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}

@main
enum DemoAppMain {
    static func main() async {
        ProcessHardening.apply()  // it holds the user's password: no core dumps, no ptrace
        await DemoApp.main()  // from an async context: the async entry point of AsyncParsableCommand
    }
}

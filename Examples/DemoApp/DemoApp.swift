import ArgumentParser
import Foundation
import MobileServices
import VaultAuth
import VaultCore
import VaultTerminal
import VaultCommands
import NetworkCommands

// The SAP mobile-services tutorials' DemoApp on a terminal: on start it opens the vault, checks a stored
// registration once (or logs in and registers), then lists the back end's travel agencies as a table. The second
// run asks nothing. Options, the credential prompt and the error texts are vault-net's (NetworkCommands).

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
    @OptionGroup var http: HTTPOptions

    @OptionGroup var target: ServerOptions

    @OptionGroup var credential: CredentialOptions

    func validate() throws {
        try credential.validate(against: vault)
    }

    func run() async throws {
        do {
            try await start()
        } catch {
            // vault's presentation (one conformance per error type), under this program's name.
            report(error, json: vault.json, program: "DemoApp")
            throw ExitCode.failure
        }
    }

    private func start() async throws {
        let configuration = try target.configuration()
        let tls = try http.tlsOptions()
        // The password is read before the vault's passphrase prompt, so a pipe is drained first.
        let prompt = try credential.prompt(terminal: true)

        // With the vault unlocked in the agent (`vault unlock`), the second start asks nothing at all.
        let store: any KeyValueVault
        if let unlocked = try AgentAccess.vault(for: vault) {
            store = unlocked
        } else {
            let path = vault.resolvedPath, options = vault.storeOptions
            let creating = !vault.makeStore().exists
            let passphrase = try vault.passphrase(
                prompt: creating ? "New vault passphrase: " : "Vault passphrase: ", confirm: creating)
            // The library's front door: any format version, a new vault the current one (another process may
            // create it first: then that one is opened); Argon2id off the cooperative pool.
            let local = SecureKeyValueStore(path: path, options: options)
            try await local.perform { try $0.open(with: passphrase) }
            store = local
            if creating { status("created vault '\(path)'") }
        }
        defer { store.close() }

        let result = try await MobileServicesStartup.start(
            store: store, passphrase: nil, configuration: configuration, prompt: prompt,
            options: http.authenticatorOptions, timeout: http.timeout, tls: tls)
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
        if vault.json {  // the shared vault options' --json: the agencies as one JSON array
            try writeJSON(agencies.map {
                ["agency": $0.agencyNumber, "name": $0.name, "city": $0.city, "country": $0.country,
                 "telephone": $0.telephone]
            })
        } else {
            FileHandle.standardOutput.write(Data(Self.table(agencies).utf8))
        }
    }

    private func status(_ line: String) {
        FileHandle.standardError.write(Data("\(TerminalText.escaped(line, keepingBackslashes: true))\n".utf8))
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

@main
enum DemoAppMain {
    static func main() async {
        ProcessHardening.apply()  // it holds the user's password: no core dumps, no ptrace
        await DemoApp.main()  // from an async context: the async entry point of AsyncParsableCommand
    }
}

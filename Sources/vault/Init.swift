import ArgumentParser
import VaultCore

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a new, empty vault.",
        discussion: "The passphrase is asked twice on the terminal, or read once from --passphrase-fd/--passphrase-file/VAULT_PASSPHRASE.")

    @OptionGroup var options: VaultOptions

    @Option(help: ArgumentHelp("Argon2id cost: interactive (2 passes, 64 MiB), moderate (3, 256 MiB) or sensitive (4, 1 GiB).", valueName: "preset"))
    var kdf: KDFPreset?

    enum KDFPreset: String, ExpressibleByArgument, CaseIterable {
        case interactive, moderate, sensitive

        var parameters: Argon2id.Parameters {
            switch self {
            case .interactive: return .interactive
            case .moderate: return .moderate
            case .sensitive: return .sensitive
            }
        }
    }

    func run() async throws {
        try await reportingErrors(json: options.json) {
            let store = options.makeStore()
            if store.exists { throw VaultError.vaultAlreadyExists(path: store.path) }
            let passphrase = try options.passphrase(prompt: "New passphrase: ", confirm: true)
            try store.create(with: passphrase, parameters: kdf?.parameters)
            let parameters = store.kdfParameters!
            if options.json {
                try writeJSON([
                    "path": store.path, "kdf": "argon2id",
                    "opslimit": parameters.opsLimit, "memlimit": parameters.memLimitBytes,
                ])
            } else {
                try writeToStdout("created vault '\(store.path)' (Argon2id \(parameters))\n")
            }
        }
    }
}

import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore

package struct Init: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a new, empty vault.",
        discussion: """
            The passphrase is asked twice on the terminal, or read once from --passphrase-fd/--passphrase-file/VAULT_PASSPHRASE. Its strength is estimated (the guesses an attacker needs, as zxcvbn counts them: common passwords, keyboard walks, sequences, repeats, dates, length): the vault file goes to git, S3 or backups, where a copy can be guessed offline, so one found in fewer than 10^10 guesses is weak. On the terminal a weak one is explained and you are asked whether to keep it; given by file, fd or environment it is refused (exit 1, nothing created). --force keeps it without asking. Asked on the terminal, it also unlocks the new vault in the agent (started if none runs; VAULT_AGENT=off: not), so the next commands ask nothing for 15 minutes without use, 8 hours at most.

            --kdf calibrate:500ms (or calibrate:1s) measures Argon2id here and picks the parameters whose unlock takes about that long: memory first (64 MiB ... 1 GiB, as libsodium's guide advises), then passes (2 ... 4).
            """)

    @Flag(name: .shortAndLong, help: "Keep a passphrase the strength check finds weak, without asking.")
    var force = false

    @Option(name: .customLong("format"), help: ArgumentHelp(
        "The file format: 3 (the default: entries with ids, fields and history, and what sync needs to forget deletions safely), 2 (for a vault command that reads version 2 but not 3) or 1 (for one older than version 2).",
        valueName: "version"))
    var formatVersion: Int = Int(DocumentFormat.currentVersion)

    @Option(help: ArgumentHelp(
        "Argon2id cost: interactive (2 passes, 64 MiB), moderate (3, 256 MiB), sensitive (4, 1 GiB), or calibrate:TIME (e.g. calibrate:500ms).",
        valueName: "preset"))
    var kdf: KDFPreset?

    @OptionGroup var options: VaultOptions

    enum KDFPreset: ExpressibleByArgument, Equatable {
        case interactive, moderate, sensitive
        /// Measure here and pick parameters taking about this many seconds.
        case calibrate(seconds: Double)

        init?(argument: String) {
            switch argument {
            case "interactive": self = .interactive
            case "moderate": self = .moderate
            case "sensitive": self = .sensitive
            default:
                guard argument.hasPrefix("calibrate:") else { return nil }
                let time = argument.dropFirst("calibrate:".count)
                let seconds: Double?
                if time.hasSuffix("ms") { seconds = Double(time.dropLast(2)).map { $0 / 1000 } }
                else if time.hasSuffix("s") { seconds = Double(time.dropLast()) }
                else { seconds = nil }
                guard let seconds, seconds > 0, seconds <= 60 else { return nil }
                self = .calibrate(seconds: seconds)
            }
        }

        static var allValueStrings: [String] { ["interactive", "moderate", "sensitive", "calibrate:500ms"] }

        var parameters: Argon2id.Parameters? {
            switch self {
            case .interactive: return .interactive
            case .moderate: return .moderate
            case .sensitive: return .sensitive
            case .calibrate: return nil
            }
        }
    }

    package func validate() throws {
        guard (1...3).contains(formatVersion) else {
            throw ValidationError("--format takes 1, 2 or 3 (the format version), not \(formatVersion)")
        }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let store = options.makeStore()
            if store.exists { throw VaultError.vaultAlreadyExists(path: store.path) }
            let passphrase = try NewPassphrase.read(options, force: force)
            var parameters = kdf?.parameters
            if case .calibrate(let seconds)? = kdf {
                parameters = try Argon2id.Parameters.calibrated(targetSeconds: seconds, progress: progressOnStderr)
            }
            let created: Argon2id.Parameters
            var vaultID: DocumentID?
            if formatVersion == 1 {
                let one = FormatOneStore(path: store.path, options: options.storeOptions)
                try one.create(with: passphrase, parameters: parameters)
                defer { one.close() }
                created = one.kdfParameters!
            } else {
                let made = try VaultOpener.create(
                    path: store.path, passphrase: passphrase, parameters: parameters, options: options.storeOptions,
                    formatVersion: UInt16(formatVersion))
                created = made.parameters
                vaultID = made.vaultID
            }
            if options.json {
                var object: [String: Any] = [
                    "path": store.path, "kdf": "argon2id", "format_version": formatVersion,
                    "opslimit": created.opsLimit, "memlimit": created.memLimitBytes,
                ]
                if let vaultID { object["vault_id"] = vaultID.description }
                try writeJSON(object)
            } else {
                try writeToStdout("created vault '\(store.path)' (format version \(formatVersion), key derivation: Argon2id, \(created))\n")
            }
            AgentAccess.unlockAfterInit(options, passphrase: passphrase)
        }
    }
}

/// Calibration progress lines on stderr.
package func progressOnStderr(_ line: String) {
    writeToStderr(line + "\n")
}

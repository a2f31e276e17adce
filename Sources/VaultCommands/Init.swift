import ArgumentParser
import Foundation
import VaultCore

package struct Init: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        abstract: "Create a new, empty vault.",
        discussion: """
            The passphrase is asked twice on the terminal, or read once from --passphrase-fd/--passphrase-file/VAULT_PASSPHRASE.

            --kdf calibrate:500ms (or calibrate:1s) measures Argon2id here and picks the parameters whose unlock takes
            about that long: memory first (64 MiB ... 1 GiB, as libsodium's guide advises), then passes (2 ... 4).
            """)

    @OptionGroup var options: VaultOptions

    @Option(help: ArgumentHelp(
        "Argon2id cost: interactive (2 passes, 64 MiB), moderate (3, 256 MiB), sensitive (4, 1 GiB), or calibrate:TIME (e.g. calibrate:500ms).",
        valueName: "preset"))
    var kdf: KDFPreset?

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

    package func run() async throws {
        try await reportingErrors(json: options.json) {
            let store = options.makeStore()
            if store.exists { throw VaultError.vaultAlreadyExists(path: store.path) }
            let passphrase = try options.passphrase(prompt: "New passphrase: ", confirm: true)
            var parameters = kdf?.parameters
            if case .calibrate(let seconds)? = kdf {
                parameters = try KDFCalibration.calibrate(targetSeconds: seconds, progress: KDFCalibration.progressOnStderr)
            }
            try store.create(with: passphrase, parameters: parameters)
            let created = store.kdfParameters!
            if options.json {
                try writeJSON([
                    "path": store.path, "kdf": "argon2id",
                    "opslimit": created.opsLimit, "memlimit": created.memLimitBytes,
                ])
            } else {
                try writeToStdout("created vault '\(store.path)' (Argon2id \(created))\n")
            }
        }
    }
}

/// Picks Argon2id parameters that take about a given time on this machine, and measures one derivation.
package enum KDFCalibration {
    /// The range a vault accepts (docs/FORMAT.md, step 6).
    package static let minimum = Argon2id.Parameters.interactive
    package static let maximum = Argon2id.Parameters.sensitive

    /// Seconds one Argon2id with `parameters` takes here (one run, wall clock).
    package static func measure(_ parameters: Argon2id.Parameters) throws -> Double {
        let salt = [UInt8](repeating: 0x5A, count: Argon2id.saltByteCount)
        let passphrase = SecureBytes(string: "calibration")
        let start = DispatchTime.now().uptimeNanoseconds
        _ = try Argon2id.deriveKey(from: passphrase, salt: salt, parameters: parameters)
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    package static func progressOnStderr(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Memory first: the largest memlimit (1 MiB steps, 64 MiB ... 1 GiB, and at most half the available
    /// memory) that fits the target with 2 passes; only when memory is at its maximum, more passes (up to 4).
    /// Argon2id's time is close to proportional to passes × memory, so one measurement predicts the next;
    /// each prediction is measured, and the estimate refined, before it is kept.
    package static func calibrate(targetSeconds: Double, progress: (String) -> Void) throws -> Argon2id.Parameters {
        let mib: UInt64 = 1 << 20
        let memoryCap = min(maximum.memLimitBytes, max(minimum.memLimitBytes, availableMemoryBytes() / 2 / mib * mib))
        var candidate = Argon2id.Parameters(opsLimit: minimum.opsLimit, memLimitBytes: minimum.memLimitBytes)
        var best = candidate
        for round in 1...4 {
            let seconds = try measure(candidate)
            progress("calibrating Argon2id (\(round)/4): \(candidate) takes \(Int((seconds * 1000).rounded())) ms"
                + " (target \(Int((targetSeconds * 1000).rounded())) ms)")
            // Keep the costliest candidate measured within the target (the minimum if none is).
            let cost = { (p: Argon2id.Parameters) in Double(p.opsLimit) * Double(p.memLimitBytes) }
            if seconds <= targetSeconds * 1.05 && cost(candidate) > cost(best) { best = candidate }
            // Seconds per (pass × byte), from this measurement.
            let rate = seconds / (Double(candidate.opsLimit) * Double(candidate.memLimitBytes))
            var memory = UInt64(targetSeconds / (rate * Double(minimum.opsLimit))) / mib * mib
            memory = min(max(memory, minimum.memLimitBytes), memoryCap)
            var passes = minimum.opsLimit
            if memory == memoryCap {
                passes = UInt64(targetSeconds / (rate * Double(memory)))
                passes = min(max(passes, minimum.opsLimit), maximum.opsLimit)
            }
            let next = Argon2id.Parameters(opsLimit: passes, memLimitBytes: memory)
            if next == candidate { break }
            candidate = next
        }
        return best
    }

    /// MemAvailable from /proc/meminfo, or 1 GiB when it cannot be read.
    package static func availableMemoryBytes() -> UInt64 {
        guard let text = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8) else { return 1 << 30 }
        for line in text.split(separator: "\n") where line.hasPrefix("MemAvailable:") {
            if let kib = line.split(separator: " ").dropFirst().first.flatMap({ UInt64($0) }) { return kib * 1024 }
        }
        return 1 << 30
    }
}

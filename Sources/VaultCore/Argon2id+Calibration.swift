import FoundationEssentials

/// Picks Argon2id parameters that take about a given time on this machine, and measures one derivation.
extension Argon2id.Parameters {
    /// Seconds one Argon2id with these parameters takes here (one run, wall clock; blocks that long).
    public func measureSeconds() throws -> Double {
        let parameters = self
        let salt = [UInt8](repeating: 0x5A, count: Argon2id.saltByteCount)
        let passphrase = SecureBytes(string: "calibration")
        let elapsed = try ContinuousClock().measure {
            _ = try Argon2id.deriveKey(from: passphrase, salt: salt, parameters: parameters)
        }
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Memory first: the largest memlimit (1 MiB steps, 64 MiB ... 1 GiB, and at most half the available
    /// memory) that fits the target with 2 passes; only when memory is at its maximum, more passes (up to 4).
    /// Argon2id's time is close to proportional to passes × memory, so one measurement predicts the next;
    /// each prediction is measured, and the estimate refined, before it is kept.
    ///
    /// The result is within the range every vault accepts (``interactive`` to ``sensitive``, docs/FORMAT.md).
    /// Blocks for several derivations. `progress` gets one line per measurement.
    public static func calibrated(
        targetSeconds: Double, progress: (String) -> Void = { _ in }
    ) throws -> Argon2id.Parameters {
        let minimum = Argon2id.Parameters.interactive
        let maximum = Argon2id.Parameters.sensitive
        let mib: UInt64 = 1 << 20
        let memoryCap = min(maximum.memLimitBytes, max(minimum.memLimitBytes, availableMemoryBytes() / 2 / mib * mib))
        var candidate = Argon2id.Parameters(opsLimit: minimum.opsLimit, memLimitBytes: minimum.memLimitBytes)
        var best = candidate
        for round in 1...4 {
            let seconds = try candidate.measureSeconds()
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
    static func availableMemoryBytes() -> UInt64 {
        guard let text = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8) else { return 1 << 30 }
        for line in text.split(separator: "\n") where line.hasPrefix("MemAvailable:") {
            if let kib = line.split(separator: " ").dropFirst().first.flatMap({ UInt64($0) }) { return kib * 1024 }
        }
        return 1 << 30
    }
}

import VaultSodium
/// Entry points for the libFuzzer targets in `Fuzz/` (not API: `@_spi(Fuzzing)`).
///
/// They call the functions the store uses to open a file (``VaultEnvelope``), with a fixed data key instead
/// of the KDF, so that a fuzzer spends its time in the parsers of the code that ships.
@_spi(Fuzzing) public enum FuzzEntryPoints {
    static let path = "<fuzz>"

    /// Parses a header under both KDF policies (standard first, then the test policy, which accepts more).
    public static func parseHeader(_ bytes: [UInt8]) throws {
        let standard = try? bytes.withUnsafeBytes { try VaultFormat.Header.parse($0, path: path, policy: .standard) }
        let header = try bytes.withUnsafeBytes {
            try VaultFormat.Header.parse($0, path: path, policy: .insecureForTesting)
        }
        // A header that parses must re-encode to exactly its bytes, under either policy.
        precondition(Array(bytes.prefix(VaultFormat.headerByteCount)) == header.encoded())
        if let standard { precondition(standard == header) }
    }

    /// Opens `file` with `dataKey` (32 bytes) through the store's own path (``VaultEnvelope``): header, body
    /// box, binding to the header, entries; then reads every value. Returns the number of entries.
    @discardableResult
    public static func openBody(_ file: [UInt8], dataKey: [UInt8]) throws -> Int {
        precondition(dataKey.count == VaultFormat.dataKeyByteCount)
        try sodium { try Sodium.ensureInitialized() }
        _ = try VaultEnvelope.parseHeader(file, path: path, policy: .insecureForTesting)
        let contents = try VaultEnvelope.openBody(file, dataKey: SecureBytes(dataKey), path: path)
        for name in contents.order {
            guard contents.withValue(name, { $0.count }) != nil else { preconditionFailure("listed name missing") }
        }
        return contents.count
    }

    /// Makes a file that `openBody` can decrypt from a fuzzer input laid out as header (124 bytes), body nonce
    /// (24), then plaintext: the plaintext is zero-padded to a multiple of 256 bytes (at least 256), its first
    /// 32 bytes are set to the header's hash when `bindHeader` (so that the entries are reached), and it is
    /// sealed under `dataKey`. Returns nil when the input is shorter than header and nonce.
    public static func sealedFile(fromInput input: [UInt8], dataKey: [UInt8], bindHeader: Bool) -> [UInt8]? {
        let bodyStart = VaultFormat.headerByteCount + VaultFormat.nonceByteCount
        guard input.count >= bodyStart, dataKey.count == VaultFormat.dataKeyByteCount else { return nil }
        var plaintext = Array(input[bodyStart...])
        let quantum = VaultFormat.paddingQuantum
        let padded = max(quantum, (plaintext.count + quantum - 1) / quantum * quantum)
        plaintext += [UInt8](repeating: 0, count: padded - plaintext.count)
        if bindHeader {
            let hash = input.withUnsafeBytes {
                Sodium.blake2b256(UnsafeRawBufferPointer(rebasing: $0[0..<VaultFormat.headerByteCount]))
            }
            plaintext.replaceSubrange(0..<VaultFormat.headerHashByteCount, with: hash)
        }
        var file = Array(input[0..<bodyStart]) + [UInt8](repeating: 0, count: plaintext.count + VaultFormat.macByteCount)
        let nonce = Array(input[VaultFormat.headerByteCount..<bodyStart])
        file.withUnsafeMutableBytes { out in
            let box = UnsafeMutableRawBufferPointer(rebasing: out[bodyStart...])
            plaintext.withUnsafeBytes { p in
                nonce.withUnsafeBytes { n in
                    dataKey.withUnsafeBytes { k in try! Sodium.secretBoxSeal(p, nonce: n, key: k, into: box) }
                }
            }
        }
        return file  // the input's own nonce (a fuzzer needs determinism), so not VaultEnvelope.seal
    }
}

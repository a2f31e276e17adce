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

    // MARK: - Format version 2 (VaultDocument)

    /// A version-2 header's fixed stanza for the fuzz targets: argon2id with the test parameters and any bytes.
    static let fuzzStanza = Argon2idStanza(
        parameters: .insecureForTesting, salt: [UInt8](repeating: 1, count: 16), keyNonce: [UInt8](repeating: 2, count: 24),
        wrappedKey: [UInt8](repeating: 3, count: 48)).stanza

    /// Opens a version-2 `file` with `dataKey` (32 bytes) as the store would (header, MAC, body, every rule), then
    /// reads every value and checks the round trip: sealed again and reopened, the document holds the same
    /// entries, fields, values, history, tombstones and replicas. Returns the number of entries.
    @discardableResult
    public static func openDocument(_ file: [UInt8], dataKey: [UInt8]) throws -> Int {
        precondition(dataKey.count == VaultFormat.dataKeyByteCount)
        try sodium { try Sodium.ensureInitialized() }
        let standard = try? DocumentHeader.parse(file, label: path, policy: .standard)
        let header = try DocumentHeader.parse(file, label: path, policy: .insecureForTesting)
        if let standard { precondition(standard.bytes == header.bytes) }
        let key = SecureBytes(dataKey)
        let (document, _) = try VaultDocument.open(file, with: .dataKey(key), label: path, policy: .insecureForTesting)
        let again = try VaultDocument.open(try document.seal(dataKey: key), with: .dataKey(key), label: path, policy: .insecureForTesting).document
        precondition(again.names == document.names && again.tombstones == document.tombstones && again.replicas == document.replicas)
        precondition(again.seen == document.seen && again.dropped == document.dropped && again.deleted == document.deleted)
        for name in document.names {
            let entry = document.entry(name)!
            precondition(again.entry(name) == entry)
            for field in entry.fields {
                precondition(again.value(of: field.name, in: name)!.unprotectedBytes == document.value(of: field.name, in: name)!.unprotectedBytes)
            }
            precondition(again.history(of: name) == document.history(of: name))
        }
        return document.count
    }

    /// A version-2 file that ``openDocument(_:dataKey:)`` can decrypt, from a fuzzer input that is the body's
    /// plaintext: behind a fixed header (one argon2id stanza) with its MAC under `dataKey`, the plaintext
    /// zero-padded to a multiple of 256, its first 32 bytes set to the binding hash when `bindHeader`, sealed under
    /// the body key with a fixed nonce (a fuzzer needs determinism).
    public static func sealedDocument(fromPlaintext input: [UInt8], dataKey: [UInt8], bindHeader: Bool) -> [UInt8]? {
        guard dataKey.count == VaultFormat.dataKeyByteCount else { return nil }
        let key = SecureBytes(dataKey)
        let header = DocumentHeader.encode(
            vaultID: DocumentID(high: 1, low: 2), generation: 1, dataKeyID: DocumentID(high: 3, low: 4),
            version: DocumentFormat.currentVersion, stanzas: [fuzzStanza])
        let prefix = header + VaultDocument.mac(of: header, dataKey: key)
        var plaintext = input
        let quantum = VaultFormat.paddingQuantum
        let padded = max(quantum, (plaintext.count + quantum - 1) / quantum * quantum)
        plaintext += [UInt8](repeating: 0, count: padded - plaintext.count)
        if bindHeader { plaintext.replaceSubrange(0..<32, with: prefix.withUnsafeBytes { Sodium.blake2b256($0) }) }
        let nonce = [UInt8](repeating: 7, count: VaultFormat.nonceByteCount)
        var file = prefix + nonce + [UInt8](repeating: 0, count: plaintext.count + VaultFormat.macByteCount)
        let bodyKey = VaultDocument.subkey(key, DocumentFormat.bodyKeyContext)
        file.withUnsafeMutableBytes { out in
            let box = UnsafeMutableRawBufferPointer(rebasing: out[(prefix.count + nonce.count)...])
            plaintext.withUnsafeBytes { p in
                nonce.withUnsafeBytes { n in
                    bodyKey.withUnsafeBytes { k in try! Sodium.secretBoxSeal(p, nonce: n, key: k, into: box) }
                }
            }
        }
        return file
    }
}

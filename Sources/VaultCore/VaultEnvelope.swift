import VaultSodium

/// The cryptographic envelope of a vault file (docs/FORMAT.md): the data key wrapped under a key derived from
/// the passphrase, and the body sealed under the data key and bound to the header. No I/O and no state: the
/// store (``SecureKeyValueStore``) and the fuzzers call the same functions.
enum VaultEnvelope {
    /// Where the sealed body starts: after the header and the body nonce.
    static let bodyStart = VaultFormat.headerByteCount + VaultFormat.nonceByteCount

    /// Parses the header of `file` (every check that needs no key: magic, version, lengths, KDF range).
    static func parseHeader(_ file: [UInt8], path: String, policy: Argon2id.KDFPolicy) throws -> VaultFormat.Header {
        try file.withUnsafeBytes { try VaultFormat.Header.parse($0, path: path, policy: policy) }
    }

    /// Derives the key-encryption key with a fresh salt and wraps `dataKey` under it.
    static func wrap(
        _ dataKey: SecureBytes, passphrase: SecureBytes, parameters: Argon2id.Parameters, generation: UInt64
    ) throws -> VaultFormat.Header {
        let kek = try PassphraseKey.fresh(from: passphrase, parameters: parameters)
        let (keyNonce, wrapped) = try kek.wrap(dataKey)
        return VaultFormat.Header(parameters: parameters, salt: kek.salt, generation: generation, keyNonce: keyNonce, wrappedKey: wrapped)
    }

    /// Derives the key-encryption key from `passphrase` and unwraps the data key of `header`.
    ///
    /// - Throws: ``VaultError/wrongPassphrase(path:)`` when the wrapped key does not open.
    static func unwrapDataKey(of header: VaultFormat.Header, passphrase: SecureBytes, path: String) throws -> SecureBytes {
        let kek = try PassphraseKey.derive(from: passphrase, salt: header.salt, parameters: header.parameters)
        guard let dataKey = kek.unwrap(header.wrappedKey, nonce: header.keyNonce) else { throw VaultError.wrongPassphrase(path: path) }
        return dataKey
    }

    /// Opens the body of `file` (whose header has been parsed) with `dataKey`, checks its binding to the header
    /// and parses the entries.
    ///
    /// - Throws: ``VaultError/wrongPassphrase(path:)`` when the body does not open (another vault's key, or a
    ///   tampered file); ``VaultError/corrupt(path:reason:)`` for a body that opens but does not parse.
    static func openBody(_ file: [UInt8], dataKey: SecureBytes, path: String) throws -> VaultContents {
        let plaintext = try file.withUnsafeBytes { (bytes) throws in
            let nonce = UnsafeRawBufferPointer(rebasing: bytes[VaultFormat.headerByteCount..<bodyStart])
            let box = UnsafeRawBufferPointer(rebasing: bytes[bodyStart...])
            return try SecureBytes(count: box.count - VaultFormat.macByteCount) { (out) throws in
                let ok = dataKey.withUnsafeBytes { key in Sodium.secretBoxOpen(box, nonce: nonce, key: key, into: out) }
                guard ok else { throw VaultError.wrongPassphrase(path: path) }
            }
        }
        let hash = file.withUnsafeBytes { Sodium.blake2b256(UnsafeRawBufferPointer(rebasing: $0[0..<VaultFormat.headerByteCount])) }
        return try VaultContents(plaintext: plaintext, headerHash: hash, path: path)
    }

    /// The file: `header`, a fresh body nonce, then `plaintext` sealed under `dataKey`, in one allocation
    /// with no zero-fill and no copy.
    static func seal(header: VaultFormat.Header, plaintext: SecureBytes, dataKey: SecureBytes) throws -> [UInt8] {
        try seal(prefix: header.encoded(), plaintext: plaintext, key: dataKey)
    }

    /// `prefix` (a header, and in version 2 its MAC), a fresh nonce, then `plaintext` sealed under `key`
    /// (`crypto_secretbox_easy`), in one allocation with no zero-fill and no copy.
    static func seal(prefix: [UInt8], plaintext: SecureBytes, key: SecureBytes) throws -> [UInt8] {
        let nonceStart = prefix.count
        let boxStart = nonceStart + VaultFormat.nonceByteCount
        let fileCount = boxStart + plaintext.count + VaultFormat.macByteCount
        return try [UInt8](unsafeUninitializedCapacity: fileCount) { (buffer, initialized) throws in
            let bytes = UnsafeMutableRawBufferPointer(buffer)
            prefix.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: bytes[0..<nonceStart]).copyMemory(from: $0) }
            let nonce = UnsafeMutableRawBufferPointer(rebasing: bytes[nonceStart..<boxStart])
            Sodium.fillRandom(nonce)
            let out = UnsafeMutableRawBufferPointer(rebasing: bytes[boxStart...])
            try plaintext.withUnsafeBytes { (plaintext) throws in
                try key.withUnsafeBytes { (key) throws in
                    try sodium { try Sodium.secretBoxSeal(plaintext, nonce: UnsafeRawBufferPointer(nonce), key: key, into: out) }
                }
            }
            initialized = fileCount
        }
    }

    /// The hash that binds a body to `header`.
    static func hash(_ header: VaultFormat.Header) -> [UInt8] {
        header.encoded().withUnsafeBytes { Sodium.blake2b256($0) }
    }
}

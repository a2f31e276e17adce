internal import CSodium

extension Sodium {
    // MARK: crypto_aead_chacha20poly1305_ietf (ChaCha20-Poly1305, RFC 8439)

    /// The size of a ChaCha20-Poly1305 key.
    package static let chaCha20Poly1305KeyByteCount = Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES)
    /// The size of a ChaCha20-Poly1305 (IETF) nonce.
    package static let chaCha20Poly1305NonceByteCount = Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES)
    /// The size of a ChaCha20-Poly1305 tag, appended to the ciphertext.
    package static let chaCha20Poly1305TagByteCount = Int(crypto_aead_chacha20poly1305_ietf_ABYTES)

    /// Encrypts and authenticates `plaintext` (and authenticates `additionalData`) under `key` and `nonce`,
    /// writing the ciphertext then the 16-byte tag into `output`.
    ///
    /// `output.count` must be `plaintext.count + chaCha20Poly1305TagByteCount`. A key must never see the same
    /// nonce twice; age's fixed all-zero nonce is safe only because each of its keys is used once.
    ///
    /// - Throws: ``SodiumFailure`` if libsodium reports a failure (a message beyond its 256 GiB limit).
    ///
    /// The corresponding libsodium function is `crypto_aead_chacha20poly1305_ietf_encrypt`.
    package static func chaCha20Poly1305Seal(
        _ plaintext: UnsafeRawBufferPointer,
        additionalData: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
        nonce: UnsafeRawBufferPointer,
        key: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws(SodiumFailure) {
        try ensureInitialized()
        precondition(key.count == chaCha20Poly1305KeyByteCount && nonce.count == chaCha20Poly1305NonceByteCount)
        precondition(output.count == plaintext.count + chaCha20Poly1305TagByteCount)
        var written: UInt64 = 0
        let result = crypto_aead_chacha20poly1305_ietf_encrypt(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self), &written,
            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyInput, UInt64(plaintext.count),
            additionalData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(additionalData.count),
            nil,
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard result == 0, written == UInt64(output.count) else {
            throw SodiumFailure(function: "crypto_aead_chacha20poly1305_ietf_encrypt")
        }
    }

    /// Verifies and decrypts `ciphertext` (ciphertext then 16-byte tag; `additionalData` authenticated too) under
    /// `key` and `nonce` into `output`, whose count must be `ciphertext.count - chaCha20Poly1305TagByteCount`.
    ///
    /// Returns `false` when the tag does not verify (the wrong key, or altered data): an outcome, not a failure
    /// of libsodium; `output` is then zeroed. Nothing is written to `output` before the tag is verified.
    ///
    /// The corresponding libsodium function is `crypto_aead_chacha20poly1305_ietf_decrypt`.
    package static func chaCha20Poly1305Open(
        _ ciphertext: UnsafeRawBufferPointer,
        additionalData: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
        nonce: UnsafeRawBufferPointer,
        key: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) -> Bool {
        precondition(initialized, "libsodium failed to initialise")
        precondition(key.count == chaCha20Poly1305KeyByteCount && nonce.count == chaCha20Poly1305NonceByteCount)
        precondition(ciphertext.count >= chaCha20Poly1305TagByteCount)
        precondition(output.count == ciphertext.count - chaCha20Poly1305TagByteCount)
        var written: UInt64 = 0
        let result = crypto_aead_chacha20poly1305_ietf_decrypt(
            output.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyOutput, &written,
            nil,
            ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
            additionalData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(additionalData.count),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        if result != 0, let base = output.baseAddress {
            sodium_memzero(base, output.count)
        }
        return result == 0
    }
}

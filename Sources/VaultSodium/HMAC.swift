internal import CSodium

extension Sodium {
    // MARK: crypto_auth_hmacsha256 (HMAC-SHA-256)

    package static let hmacSHA256ByteCount = Int(crypto_auth_hmacsha256_BYTES)

    /// HMAC-SHA-256 (RFC 2104 with SHA-256) of `message` under `key`, which may have any length (a key longer
    /// than SHA-256's 64-byte block is hashed first, as RFC 2104 says). For AWS Signature Version 4.
    ///
    /// The corresponding libsodium functions are `crypto_auth_hmacsha256_init`, `_update` and `_final` (the
    /// one-shot `crypto_auth_hmacsha256` takes 32-byte keys only).
    package static func hmacSHA256(key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: hmacSHA256ByteCount)
        mac.withUnsafeMutableBytes { hmacSHA256(key: key, message: message, into: $0) }
        return mac
    }

    /// HMAC-SHA-256 of `message` under `key` written into `out` (32 bytes): for a derived key that must stay in
    /// guarded memory (SigV4's signing key is a chain of four of them).
    ///
    /// The corresponding libsodium functions are `crypto_auth_hmacsha256_init`, `_update` and `_final`.
    package static func hmacSHA256(
        key: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) {
        hmacSHA256(key: key, messageParts: CollectionOfOne(message), into: out)
    }

    /// HMAC-SHA-256 of the concatenation of `messageParts` under `key`, written into `out` (32 bytes), without
    /// copying the parts together: HKDF-Expand's blocks are `T(i-1) || info || i`, and `T(i-1)` is secret.
    ///
    /// The corresponding libsodium functions are `crypto_auth_hmacsha256_init`, `_update` (once a part) and `_final`.
    package static func hmacSHA256(
        key: UnsafeRawBufferPointer, messageParts: some Sequence<UnsafeRawBufferPointer>,
        into out: UnsafeMutableRawBufferPointer
    ) {
        precondition(initialized, "libsodium failed to initialise")
        precondition(out.count == hmacSHA256ByteCount)
        // The state holds the padded key's hash contexts: zeroed before it goes.
        var state = crypto_auth_hmacsha256_state()
        defer { withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress!, $0.count) } }
        var result = crypto_auth_hmacsha256_init(
            &state, key.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyInput, key.count)
        precondition(result == 0, "crypto_auth_hmacsha256_init cannot fail")
        for message in messageParts {
            result = crypto_auth_hmacsha256_update(
                &state, message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyInput, UInt64(message.count))
            precondition(result == 0, "crypto_auth_hmacsha256_update cannot fail")
        }
        result = crypto_auth_hmacsha256_final(&state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        precondition(result == 0, "crypto_auth_hmacsha256_final cannot fail")
    }
}

internal import CSodium

extension Sodium {
    // MARK: crypto_scalarmult_curve25519 (X25519, RFC 7748)

    /// The size of an X25519 private scalar.
    package static let x25519ScalarByteCount = Int(crypto_scalarmult_curve25519_SCALARBYTES)
    /// The size of an X25519 public key (a Montgomery u-coordinate) and of a shared secret.
    package static let x25519PointByteCount = Int(crypto_scalarmult_curve25519_BYTES)

    /// X25519(`scalar`, basepoint) (RFC 7748 §5, the scalar clamped as it says): the public key of a private
    /// scalar, written into `publicKey` (32 bytes).
    ///
    /// - Throws: ``SodiumFailure`` if libsodium reports a failure (it does not for a 32-byte scalar).
    ///
    /// The corresponding libsodium function is `crypto_scalarmult_curve25519_base` (`crypto_scalarmult_base`).
    package static func x25519PublicKey(
        scalar: UnsafeRawBufferPointer, into publicKey: UnsafeMutableRawBufferPointer
    ) throws(SodiumFailure) {
        try ensureInitialized()
        precondition(scalar.count == x25519ScalarByteCount && publicKey.count == x25519PointByteCount)
        let result = crypto_scalarmult_curve25519_base(
            publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self),
            scalar.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard result == 0 else {
            sodium_memzero(publicKey.baseAddress!, publicKey.count)
            throw SodiumFailure(function: "crypto_scalarmult_curve25519_base")
        }
    }

    /// X25519(`scalar`, `point`) (RFC 7748 §5): a Diffie-Hellman shared secret, written into `sharedSecret`
    /// (32 bytes).
    ///
    /// - Throws: ``SodiumFailure`` when the result is all zero bytes, as it is for a point of small order (the
    ///   identity, a low-order point, or one of their non-canonical encodings): RFC 7748 §6.1's check, which age
    ///   requires ("If the shared secret is all 0x00 bytes, the identity implementation MUST abort").
    ///   `sharedSecret` is then zero.
    ///
    /// The corresponding libsodium function is `crypto_scalarmult_curve25519` (`crypto_scalarmult`), which returns
    /// -1 for an all-zero result.
    package static func x25519(
        scalar: UnsafeRawBufferPointer, point: UnsafeRawBufferPointer, into sharedSecret: UnsafeMutableRawBufferPointer
    ) throws(SodiumFailure) {
        try ensureInitialized()
        precondition(scalar.count == x25519ScalarByteCount && point.count == x25519PointByteCount)
        precondition(sharedSecret.count == x25519PointByteCount)
        let result = crypto_scalarmult_curve25519(
            sharedSecret.baseAddress!.assumingMemoryBound(to: UInt8.self),
            scalar.baseAddress!.assumingMemoryBound(to: UInt8.self),
            point.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard result == 0 else {
            sodium_memzero(sharedSecret.baseAddress!, sharedSecret.count)
            throw SodiumFailure(function: "crypto_scalarmult_curve25519")
        }
    }
}

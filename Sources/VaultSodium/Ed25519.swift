internal import CSodium

extension Sodium {
    // MARK: crypto_sign (Ed25519, RFC 8032): the signing key of a vault's key links (docs/FORMAT.md, "Key changes")

    /// The size of an Ed25519 seed.
    package static let ed25519SeedByteCount = Int(crypto_sign_SEEDBYTES)
    /// The size of an Ed25519 public key.
    package static let ed25519PublicKeyByteCount = Int(crypto_sign_PUBLICKEYBYTES)
    /// The size of libsodium's Ed25519 secret key (the seed followed by the public key).
    package static let ed25519SecretKeyByteCount = Int(crypto_sign_SECRETKEYBYTES)
    /// The size of a detached Ed25519 signature.
    package static let ed25519SignatureByteCount = Int(crypto_sign_BYTES)

    /// The Ed25519 key pair of a 32-byte seed: the public key (32 bytes) and the secret key (64 bytes), written into
    /// `publicKey` and `secretKey` (the caller's guarded memory for the secret).
    ///
    /// The corresponding libsodium function is `crypto_sign_seed_keypair`.
    package static func ed25519KeyPair(
        seed: UnsafeRawBufferPointer, publicKey: UnsafeMutableRawBufferPointer, secretKey: UnsafeMutableRawBufferPointer
    ) {
        precondition(initialized, "libsodium failed to initialise")
        precondition(seed.count == ed25519SeedByteCount && publicKey.count == ed25519PublicKeyByteCount
            && secretKey.count == ed25519SecretKeyByteCount)
        let result = crypto_sign_seed_keypair(
            publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self), secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self),
            seed.baseAddress!.assumingMemoryBound(to: UInt8.self))
        precondition(result == 0, "crypto_sign_seed_keypair cannot fail")
    }

    /// The detached Ed25519 signature (64 bytes) of `message` under `secretKey` (64 bytes).
    ///
    /// The corresponding libsodium function is `crypto_sign_detached`.
    package static func ed25519Sign(_ message: UnsafeRawBufferPointer, secretKey: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(initialized, "libsodium failed to initialise")
        precondition(secretKey.count == ed25519SecretKeyByteCount)
        var signature = [UInt8](repeating: 0, count: ed25519SignatureByteCount)
        let result = signature.withUnsafeMutableBytes { out in
            crypto_sign_detached(
                out.baseAddress!.assumingMemoryBound(to: UInt8.self), nil,
                message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyInput, UInt64(message.count),
                secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        precondition(result == 0, "crypto_sign_detached cannot fail")
        return signature
    }

    /// Whether `signature` (64 bytes) is a valid Ed25519 signature of `message` under `publicKey` (32 bytes).
    /// Any other length is `false`.
    ///
    /// The corresponding libsodium function is `crypto_sign_verify_detached` (which refuses non-canonical
    /// encodings and small-order public keys).
    package static func ed25519Verify(
        _ signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, publicKey: UnsafeRawBufferPointer
    ) -> Bool {
        precondition(initialized, "libsodium failed to initialise")
        guard signature.count == ed25519SignatureByteCount, publicKey.count == ed25519PublicKeyByteCount else { return false }
        return crypto_sign_verify_detached(
            signature.baseAddress!.assumingMemoryBound(to: UInt8.self),
            message.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyInput, UInt64(message.count),
            publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
    }
}

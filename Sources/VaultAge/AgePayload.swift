import VaultCore
import VaultSodium

/// The binary payload of an age file (C2SP `age.md`, "Payload"): a 16-byte nonce, then the plaintext in chunks of
/// 64 KiB, each sealed with ChaCha20-Poly1305 under
/// `payload key = HKDF-SHA-256(ikm = file key, salt = nonce, info = "payload")` and the 12-byte nonce
/// `chunk counter (11 bytes, big-endian) || last-chunk flag (0x01 on the final chunk, else 0x00)` (a STREAM
/// variant). The final chunk may be shorter than 64 KiB and is empty only when the whole plaintext is.
///
/// Whole buffers, not streams: what a vault shares is small. The payload key lives only in guarded memory and a
/// decrypted payload is ``SecureBytes``.
public enum AgePayload {
    /// The size of the nonce at the start of the payload.
    public static let nonceByteCount = 16
    /// The size of a plaintext chunk (every chunk but the last has exactly this many bytes).
    public static let chunkByteCount = 64 * 1024
    /// The size of a sealed full chunk.
    static let sealedChunkByteCount = chunkByteCount + Sodium.chaCha20Poly1305TagByteCount

    /// The payload's size for `plaintextByteCount` bytes of plaintext: the nonce, the plaintext, a tag a chunk.
    public static func encryptedByteCount(plaintextByteCount: Int) -> Int {
        let chunks = max(1, (plaintextByteCount + chunkByteCount - 1) / chunkByteCount)
        return nonceByteCount + plaintextByteCount + chunks * Sodium.chaCha20Poly1305TagByteCount
    }

    /// The ChaCha20-Poly1305 nonce of chunk `index`.
    static func chunkNonce(index: Int, isFinal: Bool) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: Sodium.chaCha20Poly1305NonceByteCount)
        var counter = UInt64(index)
        for position in stride(from: 10, through: 3, by: -1) {  // bytes 0-2 of the 88-bit counter stay zero
            nonce[position] = UInt8(truncatingIfNeeded: counter)
            counter >>= 8
        }
        nonce[11] = isFinal ? 1 : 0
        return nonce
    }

    /// Runs `body` with the payload key, in guarded scratch memory.
    static func withPayloadKey<R>(
        fileKey: SecureBytes, nonce: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws(AgeError) -> R
    ) throws(AgeError) -> R {
        guard fileKey.count == AgeHeader.fileKeyByteCount else {
            throw .wrongKeyLength(expected: AgeHeader.fileKeyByteCount, actual: fileKey.count)
        }
        return try withGuardedScratch(byteCount: Sodium.chaCha20Poly1305KeyByteCount) { (key) throws(AgeError) in
            fileKey.withUnsafeBytes { ikm in
                Array("payload".utf8).withUnsafeBytes { info in
                    Sodium.hkdfSHA256(inputKeyingMaterial: ikm, salt: nonce, info: info, into: key)
                }
            }
            return try body(UnsafeRawBufferPointer(key))
        }
    }

    // MARK: Encryption

    /// Encrypts `plaintext` under `fileKey` (16 bytes) with a fresh random nonce: the payload that follows a header
    /// whose stanzas wrap `fileKey`.
    ///
    /// - Throws: ``AgeError/wrongKeyLength(expected:actual:)`` unless `fileKey` is 16 bytes.
    public static func encrypt(_ plaintext: UnsafeRawBufferPointer, fileKey: SecureBytes) throws(AgeError) -> [UInt8] {
        try encrypt(plaintext, fileKey: fileKey, nonce: Sodium.randomBytes(count: nonceByteCount))
    }

    /// Encrypts `plaintext` held in guarded memory; see ``encrypt(_:fileKey:)-(UnsafeRawBufferPointer,_)``.
    public static func encrypt(_ plaintext: SecureBytes, fileKey: SecureBytes) throws(AgeError) -> [UInt8] {
        try plaintext.withUnsafeBytes { (bytes) throws(AgeError) in try encrypt(bytes, fileKey: fileKey) }
    }

    /// Encrypts under a given nonce: for reproducible tests only (a nonce must never be used twice with one key).
    package static func encrypt(
        _ plaintext: UnsafeRawBufferPointer, fileKey: SecureBytes, nonce: [UInt8]
    ) throws(AgeError) -> [UInt8] {
        precondition(nonce.count == nonceByteCount)
        var output = nonce
        output += [UInt8](repeating: 0, count: encryptedByteCount(plaintextByteCount: plaintext.count) - nonceByteCount)
        let chunkCount = max(1, (plaintext.count + chunkByteCount - 1) / chunkByteCount)
        try nonce.withBytes { (nonce) throws(AgeError) in
            try withPayloadKey(fileKey: fileKey, nonce: nonce) { (key) throws(AgeError) in
                try output.withMutableBytes { (output) throws(AgeError) in
                    for index in 0..<chunkCount {
                        let start = index * chunkByteCount
                        let chunk = UnsafeRawBufferPointer(rebasing: plaintext[start..<min(start + chunkByteCount, plaintext.count)])
                        let sealedStart = nonceByteCount + index * sealedChunkByteCount
                        let sealed = UnsafeMutableRawBufferPointer(
                            rebasing: output[sealedStart..<sealedStart + chunk.count + Sodium.chaCha20Poly1305TagByteCount])
                        do throws(SodiumFailure) {
                            try chunkNonce(index: index, isFinal: index == chunkCount - 1).withBytes { (nonce) throws(SodiumFailure) in
                                try Sodium.chaCha20Poly1305Seal(chunk, nonce: nonce, key: key, into: sealed)
                            }
                        } catch {
                            throw AgeError(error)
                        }
                    }
                }
            }
        }
        return output
    }

    // MARK: Decryption

    /// Decrypts a whole payload (what follows the header) under `fileKey` into guarded memory, with the checks of
    /// age's reader: a final chunk must end the payload, only the final chunk may be short, and it may be empty
    /// only when it is the only chunk.
    ///
    /// - Throws: ``AgeError/malformedPayload(_:)`` (`.missingNonce`, `.truncated`, `.emptyFinalChunk`,
    ///   `.chunkAuthenticationFailed(index:)`, `.trailingData`); ``AgeError/wrongKeyLength(expected:actual:)``
    ///   unless `fileKey` is 16 bytes.
    public static func decrypt(_ payload: UnsafeRawBufferPointer, fileKey: SecureBytes) throws(AgeError) -> SecureBytes {
        guard payload.count >= nonceByteCount else { throw .malformedPayload(.missingNonce) }
        let nonce = UnsafeRawBufferPointer(rebasing: payload[0..<nonceByteCount])
        let chunks = UnsafeRawBufferPointer(rebasing: payload[nonceByteCount...])
        guard !chunks.isEmpty else { throw .malformedPayload(.truncated) }
        let chunkCount = (chunks.count + sealedChunkByteCount - 1) / sealedChunkByteCount
        let lastSealedCount = chunks.count - (chunkCount - 1) * sealedChunkByteCount
        let tag = Sodium.chaCha20Poly1305TagByteCount
        let plaintextCount = (chunkCount - 1) * chunkByteCount + max(0, lastSealedCount - tag)

        return try withPayloadKey(fileKey: fileKey, nonce: nonce) { (key) throws(AgeError) in
            try SecureBytes(count: plaintextCount) { (plaintext) throws(AgeError) in
                func open(_ index: Int, isFinal: Bool) -> Bool {
                    let start = index * sealedChunkByteCount
                    let sealed = UnsafeRawBufferPointer(rebasing: chunks[start..<min(start + sealedChunkByteCount, chunks.count)])
                    let outputStart = index * chunkByteCount
                    let output = UnsafeMutableRawBufferPointer(rebasing: plaintext[outputStart..<outputStart + sealed.count - tag])
                    return chunkNonce(index: index, isFinal: isFinal).withUnsafeBytes { nonce in
                        Sodium.chaCha20Poly1305Open(sealed, nonce: nonce, key: key, into: output)
                    }
                }
                for index in 0..<chunkCount {
                    let isLast = index == chunkCount - 1
                    // Too short for a tag: reached only after every chunk before it opened as a non-final one.
                    if isLast && lastSealedCount < tag { throw .malformedPayload(.chunkAuthenticationFailed(index: index)) }
                    if open(index, isFinal: isLast) {
                        if isLast && lastSealedCount == tag && index > 0 { throw .malformedPayload(.emptyFinalChunk) }
                        continue
                    }
                    // Tell why from the other flag: a final chunk before the end, or the end without a final chunk.
                    if open(index, isFinal: !isLast) {
                        throw .malformedPayload(isLast ? .truncated : .trailingData)
                    }
                    throw .malformedPayload(.chunkAuthenticationFailed(index: index))
                }
            }
        }
    }

    /// Decrypts a whole payload held in an array; see ``decrypt(_:fileKey:)-(UnsafeRawBufferPointer,_)``.
    public static func decrypt(_ payload: [UInt8], fileKey: SecureBytes) throws(AgeError) -> SecureBytes {
        try payload.withBytes { (bytes) throws(AgeError) in try decrypt(bytes, fileKey: fileKey) }
    }
}

import Testing
import VaultCore
import VaultSodium

@testable import VaultAge

/// age's STREAM payload: round trips around the 64 KiB chunk, and the exact error of each malformation.
@Suite("age payload (STREAM)")
struct AgePayloadTests {
    static let fileKey = X25519StanzaTests.fileKey
    static let chunk = AgePayload.chunkByteCount
    static let sealed = chunk + 16

    static func encrypt(_ plaintext: [UInt8], nonce: [UInt8] = [UInt8](repeating: 7, count: 16)) throws -> [UInt8] {
        try plaintext.withUnsafeBytes { try AgePayload.encrypt($0, fileKey: fileKey, nonce: nonce) }
    }

    @Test(arguments: [0, 1, 100, 65_535, 65_536, 65_537, 131_072, 200_000])
    func plaintextsRoundTrip(count: Int) throws {
        let plaintext = AgeTestSupport.pattern(count: count, seed: 5)
        let payload = try AgePayload.encrypt(SecureBytes(plaintext), fileKey: Self.fileKey)
        #expect(payload.count == AgePayload.encryptedByteCount(plaintextByteCount: count))
        let chunks = max(1, (count + Self.chunk - 1) / Self.chunk)
        #expect(payload.count == 16 + count + 16 * chunks, "one tag per chunk, no empty final chunk after a full one")
        #expect(try AgePayload.decrypt(payload, fileKey: Self.fileKey).unprotectedBytes == plaintext)
    }

    @Test func aFreshNonceEachTime() throws {
        let a = try AgePayload.encrypt(SecureBytes([1, 2, 3]), fileKey: Self.fileKey)
        let b = try AgePayload.encrypt(SecureBytes([1, 2, 3]), fileKey: Self.fileKey)
        #expect(a[..<16] != b[..<16] && a[16...] != b[16...])
        #expect(try Self.encrypt([1, 2, 3]) == Self.encrypt([1, 2, 3]), "a given nonce is deterministic")
    }

    /// Chunk `index` sealed with the final flag set or not, under the payload key of `nonce`.
    static func seal(_ plaintext: [UInt8], index: Int, isFinal: Bool, nonce: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        try nonce.withUnsafeBytes { nonceBytes in
            try AgePayload.withPayloadKey(fileKey: fileKey, nonce: nonceBytes) { (key) throws(AgeError) in
                do {
                    try plaintext.withUnsafeBytes { p in
                        try AgePayload.chunkNonce(index: index, isFinal: isFinal).withUnsafeBytes { n in
                            try out.withUnsafeMutableBytes { try Sodium.chaCha20Poly1305Seal(p, nonce: n, key: key, into: $0) }
                        }
                    }
                } catch {
                    throw .cryptoFailure(function: "seal")
                }
            }
        }
        return out
    }

    @Test func malformedPayloadsFailExactly() throws {
        let nonce = [UInt8](repeating: 7, count: 16)
        let full = AgeTestSupport.pattern(count: Self.chunk)
        let two = try Self.encrypt(full + [1, 2, 3], nonce: nonce)  // a full chunk and a short final one
        let one = try Self.encrypt(full, nonce: nonce)  // one full final chunk
        let three = try Self.encrypt(full + full + [9], nonce: nonce)
        var tampered = three
        tampered[16 + Self.sealed + 100] ^= 1
        let cases: [([UInt8], AgeError.PayloadFailure)] = try [
            ([], .missingNonce),
            (Array(nonce.prefix(15)), .missingNonce),
            (nonce, .truncated),
            (Array(two.prefix(16 + Self.sealed)), .truncated),  // the final chunk cut off: a non-final chunk ends it
            (Array(two.dropLast()), .chunkAuthenticationFailed(index: 1)),
            (Array(two.prefix(16 + Self.sealed + 15)), .chunkAuthenticationFailed(index: 1)),  // shorter than a tag
            (one + [0], .trailingData),
            (one + one[16...], .trailingData),  // two final chunks
            (tampered, .chunkAuthenticationFailed(index: 1)),
            (nonce + Self.seal(full, index: 0, isFinal: false, nonce: nonce) + Self.seal([], index: 1, isFinal: true, nonce: nonce), .emptyFinalChunk),
            (nonce + Self.seal([1], index: 1, isFinal: true, nonce: nonce), .chunkAuthenticationFailed(index: 0)),  // chunks out of order
        ]
        for (payload, failure) in cases {
            #expect(throws: AgeError.malformedPayload(failure), "\(payload.count) bytes") { try AgePayload.decrypt(payload, fileKey: Self.fileKey) }
        }
        // The empty plaintext is one empty final chunk, and that alone.
        #expect(try AgePayload.decrypt(nonce + Self.seal([], index: 0, isFinal: true, nonce: nonce), fileKey: Self.fileKey).count == 0)
        #expect(throws: AgeError.malformedPayload(.chunkAuthenticationFailed(index: 0))) { try AgePayload.decrypt(one, fileKey: .random(count: 16)) }
        #expect(throws: AgeError.wrongKeyLength(expected: 16, actual: 32)) { try AgePayload.decrypt(one, fileKey: .random(count: 32)) }
    }
}

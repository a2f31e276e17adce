import Testing
import VaultCore
import VaultSodium

@testable import VaultAge

/// The X25519 stanza: wrap and unwrap, and every way a stanza can be wrong, each with its exact error.
@Suite("X25519 stanza")
struct X25519StanzaTests {
    static let identity = try! AgeIdentity(parsing: AgeKeyTests.specIdentity)
    static let fileKey = SecureBytes(Array("YELLOW SUBMARINE".utf8))

    @Test func aWrappedKeyUnwrapsWithItsIdentityOnly() throws {
        let stanza = try X25519Stanza.wrap(Self.fileKey, for: Self.identity.recipient)
        #expect(stanza.ephemeralShare.count == 32 && stanza.body.count == 32)
        #expect(try stanza.unwrap(with: Self.identity) == Self.fileKey)
        #expect(throws: AgeError.noMatch) { try stanza.unwrap(with: AgeIdentity.generate()) }
        // A fresh ephemeral secret each time: two wraps of one key for one recipient share nothing.
        let again = try X25519Stanza.wrap(Self.fileKey, for: Self.identity.recipient)
        #expect(again.ephemeralShare != stanza.ephemeralShare && again.body != stanza.body)
    }

    @Test func theStanzaIsAgesTwoArgumentForm() throws {
        let stanza = try X25519Stanza.wrap(Self.fileKey, for: Self.identity.recipient).stanza
        #expect(stanza.type == "X25519" && stanza.arguments.count == 1 && stanza.arguments[0].utf8.count == 43)
        #expect(!stanza.arguments[0].contains("="))
        #expect(try X25519Stanza(stanza).stanza == stanza)
    }

    /// The construction itself, recomputed from the spec's formulas with the primitives, for a fixed ephemeral
    /// secret: `wrap key = HKDF-SHA-256(X25519(e, R), e·G || R, "age-encryption.org/v1/X25519")`, body =
    /// ChaCha20-Poly1305 with the zero nonce.
    @Test func theConstructionIsTheSpecs() throws {
        let ephemeral = SecureBytes(AgeTestSupport.pattern(count: 32, seed: 3))
        let stanza = try X25519Stanza.wrap(Self.fileKey, for: Self.identity.recipient, ephemeralSecret: ephemeral)
        let share = try AgeIdentity(secretKey: ephemeral).recipient.publicKey
        #expect(stanza.ephemeralShare == share)
        var shared = [UInt8](repeating: 0, count: 32), wrapKey = [UInt8](repeating: 0, count: 32)
        try ephemeral.withUnsafeBytes { e in
            try Self.identity.recipient.publicKey.withUnsafeBytes { r in try shared.withUnsafeMutableBytes { try Sodium.x25519(scalar: e, point: r, into: $0) } }
        }
        let salt = share + Self.identity.recipient.publicKey
        shared.withUnsafeBytes { ikm in
            salt.withUnsafeBytes { salt in
                Array("age-encryption.org/v1/X25519".utf8).withUnsafeBytes { info in
                    wrapKey.withUnsafeMutableBytes { Sodium.hkdfSHA256(inputKeyingMaterial: ikm, salt: salt, info: info, into: $0) }
                }
            }
        }
        var body = [UInt8](repeating: 0, count: 32)
        try Self.fileKey.withUnsafeBytes { p in
            try [UInt8](repeating: 0, count: 12).withUnsafeBytes { n in
                try wrapKey.withUnsafeBytes { k in try body.withUnsafeMutableBytes { try Sodium.chaCha20Poly1305Seal(p, nonce: n, key: k, into: $0) } }
            }
        }
        #expect(stanza.body == body)
    }

    static func stanza(_ arguments: [String], body: [UInt8]) -> AgeStanza {
        AgeStanza(type: arguments[0], arguments: Array(arguments.dropFirst()), body: body)
    }

    @Test func tamperingIsNoMatch() throws {
        let good = try X25519Stanza.wrap(Self.fileKey, for: Self.identity.recipient).stanza
        let share = good.arguments[0]
        for index in [0, 15, 16, 31] {  // the ciphertext and the tag
            var body = good.body
            body[index] ^= 0x01
            #expect(throws: AgeError.noMatch, "body byte \(index)") {
                try X25519Stanza(Self.stanza(["X25519", share], body: body)).unwrap(with: Self.identity)
            }
        }
        // Another valid share: another shared secret and another salt, so the body does not open.
        let otherShare = AgeBase64.encode(AgeIdentity.generate().recipient.publicKey)
        #expect(throws: AgeError.noMatch) {
            try X25519Stanza(Self.stanza(["X25519", otherShare], body: good.body)).unwrap(with: Self.identity)
        }
        // One bit of the share (bit 255 is ignored by X25519, but it is in the HKDF salt).
        var flipped = try X25519Stanza(good).ephemeralShare
        flipped[31] ^= 0x80
        #expect(throws: AgeError.noMatch) {
            try X25519Stanza(Self.stanza(["X25519", AgeBase64.encode(flipped)], body: good.body)).unwrap(with: Self.identity)
        }
    }

    /// Shares of small order make the shared secret all zero: refused before any key is derived, whoever the
    /// identity (the spec: "MUST abort").
    @Test(arguments: [
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",  // 0, the identity (CCTV x25519_identity)
        "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",  // 1
        "X5yVvKNQjCSx0LFVnIPvWwREXMRYHI6G2CJO3dCfEdc",  // order 8 (CCTV x25519_low_order)
        "7P///////////////////////////////////////38",  // p - 1
        "7f///////////////////////////////////////38",  // p, a non-canonical 0
    ])
    func lowOrderSharesAreRefused(share: String) throws {
        let stanza = try X25519Stanza(Self.stanza(["X25519", share], body: [UInt8](repeating: 0, count: 32)))
        #expect(throws: AgeError.malformedStanza(.lowOrderShare)) { try stanza.unwrap(with: Self.identity) }
        #expect(throws: AgeError.malformedStanza(.lowOrderShare)) { try stanza.unwrap(with: AgeIdentity.generate()) }
    }

    @Test func aRecipientOfSmallOrderIsRefused() throws {
        let recipient = try AgeRecipient(publicKey: [UInt8](repeating: 0, count: 32))
        #expect(throws: AgeError.invalidRecipientKey) { try X25519Stanza.wrap(Self.fileKey, for: recipient) }
    }

    @Test func malformedStanzasFailExactly() throws {
        let good = try X25519Stanza.wrap(Self.fileKey, for: Self.identity.recipient).stanza
        let share = good.arguments[0], shareBytes = try X25519Stanza(good).ephemeralShare
        let cases: [(AgeStanza, AgeError.StanzaFailure)] = [
            (Self.stanza(["x25519", share], body: good.body), .notX25519),
            (Self.stanza(["X25519"], body: good.body), .wrongArgumentCount),
            (Self.stanza(["X25519", share, share], body: good.body), .wrongArgumentCount),
            (Self.stanza(["X25519", share + "="], body: good.body), .shareNotCanonical),
            (Self.stanza(["X25519", String(share.dropLast()) + "/"], body: good.body), .shareNotCanonical),  // trailing bits
            (Self.stanza(["X25519", String(share.dropLast(2))], body: good.body), .shareNotCanonical),  // 41 characters
            (Self.stanza(["X25519", AgeBase64.encode(shareBytes.dropLast())], body: good.body), .wrongShareLength),
            (Self.stanza(["X25519", AgeBase64.encode(shareBytes + [0])], body: good.body), .wrongShareLength),
            (Self.stanza(["X25519", share], body: Array(good.body.dropLast())), .wrongBodyLength),
            (Self.stanza(["X25519", share], body: good.body + [0]), .wrongBodyLength),
            (Self.stanza(["X25519", share], body: []), .wrongBodyLength),
        ]
        for (stanza, failure) in cases {
            #expect(throws: AgeError.malformedStanza(failure), "\(stanza.arguments)") { try X25519Stanza(stanza) }
        }
    }

    @Test func fileKeysOfAnotherLengthAreRefused() {
        for count in [0, 15, 17, 32] {
            #expect(throws: AgeError.wrongKeyLength(expected: 16, actual: count)) {
                try X25519Stanza.wrap(.random(count: count), for: Self.identity.recipient)
            }
        }
    }
}

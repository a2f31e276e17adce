import Foundation
import Testing
import VaultAge
import VaultCore
import VaultSodium
import VaultTestSupport

@testable import VaultAgePQ

/// C2SP's CCTV age vectors for the `mlkem768x25519` stanza (`Tests/Vectors/age/hybrid*`, see the README there),
/// read with VaultAgePQ's identities (and the X25519 ones a vector also names): every vector gives its `expect:`
/// outcome through the exact ``AgeError`` listed below; on `success` the file key is `file key:` and the payload
/// decrypts to `payload:` (`hybrid_multiple_recipients` is stored zlib-compressed: inflated first).
@Suite("C2SP CCTV age vectors: mlkem768x25519")
struct HybridCCTVTests {
    struct Outcome: Equatable {
        var error: AgeError?
        var fileKey: [UInt8]?
        var payloadHash: [UInt8]?
    }

    static func expect(for error: AgeError?) -> String {
        switch error {
        case nil: return "success"
        case .noMatch: return "no match"
        case .headerMACMismatch: return "HMAC failure"
        case .malformedHeader, .malformedStanza: return "header failure"
        case .malformedPayload: return "payload failure"
        case let error?: return "unexpected error: \(error)"
        }
    }

    /// Reads `vector` as age's `Decrypt` does: the header, the file key from the identities in the order listed,
    /// the MAC, the payload.
    static func read(_ vector: CCTVAgeVector) throws -> Outcome {
        let identities = try vector.identities.map { line in
            try SecureBytes(string: line).withUnsafeBytes { (bytes) throws(AgeError) in try AgeIdentities.parse(bytes) }
        }
        var outcome = Outcome()
        do throws(AgeError) {
            let (header, byteCount) = try AgeHeader.parse(vector.file)
            let fileKey = try header.unwrapFileKey(with: identities)
            outcome.fileKey = fileKey.unprotectedBytes
            let plaintext = try AgePayload.decrypt(Array(vector.file[byteCount...]), fileKey: fileKey)
            outcome.payloadHash = plaintext.withUnsafeBytes { Sodium.sha256($0) }
        } catch {
            outcome.error = error
        }
        return outcome
    }

    /// The exact error of every vector that fails, and nil for those that succeed. A new vector must be added here.
    static let exactOutcomes: [String: AgeError?] = [
        "hybrid": nil,
        "hybrid_and_x25519": nil,
        "hybrid_bad_tag": .noMatch,
        "hybrid_currupted_enc_mlkem": .noMatch,
        "hybrid_currupted_enc_x25519": .noMatch,
        "hybrid_extra_argument": .malformedStanza(.wrongArgumentCount),
        "hybrid_grease": nil,
        "hybrid_identity": .malformedStanza(.decapsulationFailed),
        "hybrid_long_file_key": .malformedStanza(.wrongBodyLength),
        "hybrid_long_share": .malformedStanza(.wrongEncapsulationLength),
        "hybrid_low_order": .malformedStanza(.decapsulationFailed),
        "hybrid_multiple_recipients": nil,
        "hybrid_no_match": .noMatch,
        "hybrid_not_canonical_body": .malformedHeader(line: 3, reason: .malformedBodyLine),
        "hybrid_not_canonical_enc": .malformedStanza(.encapsulationNotCanonical),
        "hybrid_short_share": .malformedStanza(.wrongEncapsulationLength),
        "hybrid_uppercase": .noMatch,
        "hybrid_x25519_arg": .malformedStanza(.wrongShareLength),
    ]

    static let hybridVectors = CCTVAgeVector.names(["hybrid"])

    @Test func everyHybridVectorIsHereAndListed() {
        #expect(Self.hybridVectors.count == 18)
        #expect(Set(Self.hybridVectors) == Set(Self.exactOutcomes.keys))
    }

    @Test(arguments: hybridVectors)
    func theVectorGivesItsOutcome(name: String) throws {
        let vector = try CCTVAgeVector(name: name)
        let outcome = try Self.read(vector)
        #expect(Self.expect(for: outcome.error) == vector.expect, "\(name): \(outcome.error.map(String.init(describing:)) ?? "success")")
        let exact = try #require(Self.exactOutcomes[name], "\(name) is not in exactOutcomes")
        #expect(outcome.error == exact, "\(name)")
        if vector.expect == "success" {
            #expect(outcome.fileKey != nil && outcome.fileKey == vector.fileKey, "\(name): the file key")
            #expect(outcome.payloadHash != nil && outcome.payloadHash == vector.payloadHash, "\(name): the payload")
        }
    }

    /// A header with a hybrid stanza that parses is canonical: it serialises back to the very bytes read.
    @Test(arguments: hybridVectors)
    func aParsedHeaderSerialisesToTheBytesRead(name: String) throws {
        let vector = try CCTVAgeVector(name: name)
        guard let (header, byteCount) = try? AgeHeader.parse(vector.file) else { return }
        #expect(header.serialized() == Array(vector.file[..<byteCount]), "\(name)")
    }
}

/// Keys and stanzas against age's own: the key pair of age's `cmd/age/testdata/hybrid.txt` (age 1.3, commit
/// 10561a7 of FiloSottile/age), and stanzas we write, read back.
@Suite("age hybrid keys and stanzas")
struct HybridKeyTests {
    /// `key.txt` of age's `hybrid.txt`: the identity and the `# public key:` line age-keygen wrote above it.
    static let ageIdentity = "AGE-SECRET-KEY-PQ-16XDSLZ3XCSZ3236YJ5J0T9NAPLZTP96LJKQCVHJYUDTQVJR5J5PQTDPQCX"
    static let ageRecipient = "age1pq1044e3hfmq2tltgck54m0gnpv8rfrwkdxjgl38psnwg8zfyv4uqdu63kk0u94ztt0q35k9dzuwgv405kxq6due2sre2kfsjftf7k2vz2mdpetku9pufy9d6ny6k5ss0cghpxdxrux0yd5xy40f8fu8ch9xn2rczyek2pqetqk0l9fqj0e3hfhkyfmcf9j6cpe5mf5stt9cymfq3xm276x4sramhn8srr42g78q9rkmqesevy33p4kdhkuggl99x9zx7j05uflx3s8q558xeaq9q9ctxqx52rzg6yffwykxngvxf7g3n83ddawagq2lnk59kcnexm54jrsmkjk9nemlge9v6p7fxu5z6yvq3ghpet8ww2c3h9fylvjx6j9njwz744376ap5r3xcpzh7qlk0kq3gknzfqhmxmjqypf6xz6geffdmy25apzsfr4ce0x825njkf62mgzx0x9n3zt0490u4dnt4468zse4zvd9sv0ycx2u2wsseuy4yymrg0nmfuxcwq9q0jykq7g5f59vunf95vnmcw336ksrh43fgapsd40u4227ymx56xtudtrte39twnq6fdfdj4p9pgx7pcqdk953za76fqcnvatx2cmywurag7ky4y8ecq5lvf25rydhxg6gmcn6vf78vtsqw79hp3mzv2u4v4jzn0nk50kl4gpv7k60cgz79c6k30jzy8dyetqtwg04tguxkv2p4hqj02yvsz2szaqdn9flu24rhth3v0t33023nwy27gt0x32eqpa5tpz6ygz3yzcsa3w889drpynzd5hlywuk9dwgafuax7upfnnxch4znrx4vactasg32u7vl886pxfswskk7wjgqkggrewtnaecfusl3nmg0xxh8e5nl5eft0xqwj5rk9ajn2j6yxehhgg5k6kpw5pk382hxmpu8wcd3rqx6m8905c7f8v0x2z9gyduxtqp2fdy9w2z4g2rrgu4d5cqes5tnwag007h2f326s3j9p6970xyd73rv5awx27zzezrax467c6vuye62ha88pzhw9xytjpezw3vg3l6x4k9rxwm9f6lwj6j7r9makg59rhgt0355s3jx9vw3raz5qdk5cnpny56q5h3dyd75suskuz63wmmfp9333tx4ry38vnh7jxy0j0cka99y7v2dmyjldjy0mqjetcefsmmg3pw0h9ll0rtskpmxz2cs8vmx6lu4v5rjtzpzgaqt46cwvnmhy5e3ye0tv6sre342lwg0tfd0yjkfz2haqc3hprpqf5ce8c9lx076dnk5cukn3tu38jgprrxt9sk9nqzt8grvkc4qzlg8jjf638v07ej9cf4eu48kphrgyjy83qm822xq8v9k22zwa7txr439x74j2f9ay7frkwtfdwn02enyx8stjpr4wgg25n5tj7uxyx0dqt3hnrqf7dcgt9fqnkjgemjfzyck6pawewptcayxm49sq3477f4cvm2p8fmg27rcmwm5l2vmzvdmymvkrr3aywu04y3zlhs7awu3r9u9lseheqpffvm2xf8y6w2qaj9g22pcu0sdsnqseusrxq9awru5lyqxnzftlslgpe3njegxkze98rveswp3u0xgx69wkg38vgp4k55lwwgv5l7ccv503mh9q23nud4xtm499xq276u40rxyrzaqfyuz2f3v5qr2vq00xs4g3ruynmq0c6nprvjcwqc5zrdn4cnzeeuwumjvqfjdpxr739n4cqcwytc8pjmfcj2qs3l2a8p5fzq7nvtng2jvvklx0x5ypnlkeuegsm587f6d4dkwel2es0lwwt88y2jdg8enjyph02tnjyndlx34h52fngjk96ggtu6vcxqkreqcxs4gwa8ww40t0kzlxfzyfhtjmfdm5fcrr5pt2xm4yslfynr0h9wkranhyadxf33kjn9xpg2fq5hnlq0"

    @Test func theRecipientOfAgesIdentityIsAgesPublicKey() throws {
        let identity = try AgeHybridIdentity(parsing: Self.ageIdentity)
        #expect(identity.recipient.description == Self.ageRecipient)
        #expect(try AgeHybridRecipient(parsing: Self.ageRecipient) == identity.recipient)
        #expect(identity.encoded().unprotectedBytes == Array(Self.ageIdentity.utf8))
        #expect(!String(describing: identity).contains("AGE-SECRET"))
        #expect(Self.ageRecipient.utf8.count == 1959)
    }

    @Test func aStanzaWrittenHereOpensWithItsIdentityOnly() throws {
        let identity = AgeHybridIdentity.generate()
        let other = AgeHybridIdentity.generate()
        let fileKey = SecureBytes.random(count: 16)
        let stanza = try MLKEM768X25519Stanza.wrap(fileKey, for: identity.recipient)
        #expect(stanza.encapsulation.count == 1120 && stanza.body.count == 32)
        let reread = try MLKEM768X25519Stanza(stanza.stanza)
        #expect(reread == stanza)
        #expect(try reread.unwrap(with: identity) == fileKey)
        #expect(throws: AgeError.noMatch) { try reread.unwrap(with: other) }
        // Through a whole header, with an X25519 identity tried first.
        let header = try AgeHeader(stanzas: [stanza.stanza], fileKey: fileKey)
        let parsed = try AgeHeader.parse(header.serialized()).header
        #expect(try parsed.unwrapFileKey(with: [AgeIdentity.generate(), identity]) == fileKey)
        #expect(throws: AgeError.noMatch) { try parsed.unwrapFileKey(with: [AgeIdentity.generate(), other]) }
        // A second wrap of the same key uses fresh randomness.
        #expect(try MLKEM768X25519Stanza.wrap(fileKey, for: identity.recipient).encapsulation != stanza.encapsulation)
    }

    @Test func malformedRecipientsAreRefused() throws {
        let good = Self.ageRecipient
        // One character changed: the checksum.
        var typo = Array(good.utf8)
        typo[100] = typo[100] == UInt8(ascii: "q") ? UInt8(ascii: "p") : UInt8(ascii: "q")
        #expect(throws: AgeError.invalidBech32(.invalidChecksum)) { try AgeHybridRecipient(parsing: String(decoding: typo, as: UTF8.self)) }
        #expect(throws: AgeError.invalidBech32(.mixedCase)) { try AgeHybridRecipient(parsing: "age1pq1" + good.dropFirst(7).uppercased()) }
        #expect(throws: AgeError.wrongKeyType(expected: "age1pq1")) { try AgeHybridRecipient(parsing: good.uppercased()) }
        #expect(throws: AgeError.wrongKeyType(expected: "age1pq1")) { try AgeHybridRecipient(parsing: AgeIdentity.generate().recipient.description) }
        // A valid Bech32 string of the wrong length (32 bytes, an X25519 key's size, under age1pq).
        let short = Bech32.encode(humanReadablePart: "age1pq", data: [UInt8](repeating: 7, count: 32))
        #expect(throws: AgeError.wrongKeyLength(expected: 1216, actual: 32)) { try AgeHybridRecipient(parsing: short) }
        // The right length, but ML-KEM coefficients out of range (all bits set: 4095 > q = 3329).
        let bad = Bech32.encode(humanReadablePart: "age1pq", data: [UInt8](repeating: 0xFF, count: 1216))
        #expect(throws: AgeError.invalidHybridRecipientKey) { try AgeHybridRecipient(parsing: bad) }
        // The either-type parser sends each to its own.
        #expect(try AnyAgeRecipient(parsing: good).isPostQuantum)
        #expect(try !AnyAgeRecipient(parsing: AgeIdentity.generate().recipient.description).isPostQuantum)
    }

    @Test func identitiesOfTheWrongKindAreRefused() throws {
        let x25519 = AgeIdentity.generate().encoded()
        #expect(throws: AgeError.wrongKeyType(expected: "AGE-SECRET-KEY-PQ-1")) {
            try x25519.withUnsafeBytes { (bytes) throws(AgeError) in try AgeHybridIdentity(parsing: bytes) }
        }
        #expect(throws: AgeError.wrongKeyType(expected: "AGE-SECRET-KEY-PQ-1")) { try AgeHybridIdentity(parsing: Self.ageIdentity.lowercased()) }
        let long = Bech32.encode(humanReadablePart: "AGE-SECRET-KEY-PQ-", data: [UInt8](repeating: 1, count: 33))
        #expect(throws: AgeError.wrongKeyLength(expected: 32, actual: 33)) { try AgeHybridIdentity(parsing: long) }
        // A file of both kinds, with age-keygen's comments.
        let file = SecureBytes(string: "# public key: …\n\(Self.ageIdentity)\n\n" + String(decoding: x25519.unprotectedBytes, as: UTF8.self) + "\r\n")
        let identities = try AgeIdentities.parseFile(file)
        #expect(identities.count == 2)
        #expect(identities[0] is AgeHybridIdentity && identities[1] is AgeIdentity)
        #expect(throws: AgeError.invalidIdentityLine(line: 1, reason: .invalidBech32(.invalidChecksum))) {
            try AgeIdentities.parseFile(SecureBytes(string: String(Self.ageIdentity.dropLast()) + "Q\n"))
        }
    }
}

import Foundation
import Testing
import VaultCore
import VaultTestSupport

@testable import VaultAge

/// C2SP's CCTV age vectors in `Tests/Vectors/age` (see the README there): every `x25519*` vector and every
/// header-grammar vector gives its `expect:` outcome, through the exact ``AgeError`` listed below; on `success` and
/// `HMAC failure` the file key unwrapped is `file key:`, and on `success` the payload decrypts to `payload:`.
@Suite("C2SP CCTV age vectors")
struct CCTVTests {
    typealias Vector = CCTVAgeVector

    /// What a reader made of a vector: the CCTV outcome, the error behind it, the file key and the plaintext's hash.
    struct Result {
        var expect = "success"
        var error: AgeError?
        var fileKey: [UInt8]?
        var payloadHash: [UInt8]?
    }

    static func expect(for error: AgeError) -> String {
        switch error {
        case .noMatch: return "no match"
        case .headerMACMismatch: return "HMAC failure"
        case .malformedHeader, .malformedStanza: return "header failure"
        case .malformedPayload: return "payload failure"
        default: return "unexpected error: \(error)"
        }
    }

    /// Reads `vector` as age's `Decrypt` does, with the X25519 identities it names.
    static func read(_ vector: Vector, identities: [AgeIdentity]) -> Result {
        var result = Result()
        do {
            let (header, byteCount) = try AgeHeader.parse(vector.file)
            let fileKey: SecureBytes
            do {
                fileKey = try header.unwrapFileKey(with: identities)
            } catch {
                if error == .headerMACMismatch {
                    // The key is still there to compare: unwrap the stanzas without the MAC check.
                    result.fileKey = header.stanzas.lazy.compactMap { stanza in
                        identities.lazy.compactMap { try? X25519Stanza(stanza).unwrap(with: $0).unprotectedBytes }.first
                    }.first
                }
                throw error
            }
            result.fileKey = fileKey.unprotectedBytes
            let plaintext = try AgePayload.decrypt(Array(vector.file[byteCount...]), fileKey: fileKey)
            result.payloadHash = AgeTestSupport.sha256(plaintext)
        } catch let error as AgeError {
            result.expect = expect(for: error)
            result.error = error
        } catch {
            result.expect = "unexpected error: \(error)"
        }
        return result
    }

    static func names(_ prefixes: [String]) -> [String] { CCTVAgeVector.names(prefixes) }

    /// The exact error of every vector that fails, and nil for those that succeed. A new vector must be added here.
    static let exactOutcomes: [String: AgeError?] = [
        "x25519": nil,
        "x25519_bad_tag": .noMatch,
        "x25519_extra_argument": .malformedStanza(.wrongArgumentCount),
        "x25519_grease": nil,
        "x25519_identity": .malformedStanza(.lowOrderShare),
        "x25519_long_file_key": .malformedStanza(.wrongBodyLength),
        "x25519_long_share": .malformedStanza(.wrongShareLength),
        "x25519_low_order": .malformedStanza(.lowOrderShare),
        "x25519_lowercase": .noMatch,
        "x25519_multiple_recipients": nil,
        "x25519_no_match": .noMatch,
        "x25519_not_canonical_body": .malformedHeader(line: 3, reason: .malformedBodyLine),
        "x25519_not_canonical_share": .malformedStanza(.shareNotCanonical),
        "x25519_short_share": .malformedStanza(.wrongShareLength),
        "stanza_bad_start": .malformedHeader(line: 4, reason: .unexpectedLine),
        "stanza_base64_padding": .malformedHeader(line: 6, reason: .malformedBodyLine),
        "stanza_empty_argument": .malformedHeader(line: 4, reason: .malformedStanzaLine),
        "stanza_empty_body": nil,
        "stanza_empty_last_line": nil,
        "stanza_invalid_character": .malformedHeader(line: 4, reason: .malformedStanzaLine),
        "stanza_long_line": .malformedHeader(line: 5, reason: .malformedBodyLine),
        "stanza_missing_body": .malformedHeader(line: 5, reason: .malformedBodyLine),
        "stanza_missing_final_line": .malformedHeader(line: 6, reason: .malformedBodyLine),
        "stanza_multiple_short_lines": .malformedHeader(line: 6, reason: .unexpectedLine),
        "stanza_no_arguments": .malformedHeader(line: 4, reason: .malformedStanzaLine),
        "stanza_not_canonical": .malformedHeader(line: 6, reason: .malformedBodyLine),
        "stanza_spurious_cr": .malformedHeader(line: 5, reason: .malformedBodyLine),
        "stanza_valid_characters": nil,
        "hmac_bad": .headerMACMismatch,
        "hmac_extra_space": .malformedHeader(line: 4, reason: .malformedMACLine),
        "hmac_garbage": .malformedHeader(line: 4, reason: .malformedMACLine),
        "hmac_missing": .malformedHeader(line: 4, reason: .malformedMACLine),
        "hmac_no_space": .malformedHeader(line: 4, reason: .malformedMACLine),
        "hmac_not_canonical": .malformedHeader(line: 4, reason: .malformedMACLine),
        "hmac_trailing_space": .malformedHeader(line: 4, reason: .malformedMACLine),
        "hmac_truncated": .malformedHeader(line: 4, reason: .malformedMACLine),
        "header_crlf": .malformedHeader(line: 1, reason: .notAnAgeFile),
        "version_unsupported": .malformedHeader(line: 1, reason: .unsupportedVersion),
        "empty": .malformedHeader(line: 1, reason: .notAnAgeFile),
    ]

    static let x25519AndHeaderVectors = names(["x25519", "stanza_", "hmac_", "header_", "version_", "empty"])

    @Test func everyVectorIsHereAndListed() {
        #expect(Self.names(["x25519"]).count == 14)
        #expect(Self.names(["hybrid"]).count == 18)
        #expect(Set(Self.x25519AndHeaderVectors) == Set(Self.exactOutcomes.keys))
    }

    @Test(arguments: x25519AndHeaderVectors)
    func theVectorGivesItsOutcome(name: String) throws {
        let vector = try Vector(name: name)
        #expect(!vector.compressed)
        let identities = try vector.identities.map { try AgeIdentity(parsing: $0) }
        let result = Self.read(vector, identities: identities)
        #expect(result.expect == vector.expect, "\(name): \(result.error.map(String.init(describing:)) ?? "success")")
        let exact = try #require(Self.exactOutcomes[name], "\(name) is not in exactOutcomes")
        #expect(result.error == exact, "\(name)")
        if vector.expect == "success" || vector.expect == "HMAC failure" {
            #expect(result.fileKey != nil && result.fileKey == vector.fileKey, "\(name): the file key")
        }
        if vector.expect == "success" {
            #expect(result.payloadHash != nil && result.payloadHash == vector.payloadHash, "\(name): the payload")
        }
    }

    /// A header that parses is canonical: it serialises back to the very bytes read (so its MAC covers them).
    @Test(arguments: x25519AndHeaderVectors)
    func aParsedHeaderSerialisesToTheBytesRead(name: String) throws {
        let vector = try Vector(name: name)
        guard let (header, byteCount) = try? AgeHeader.parse(vector.file) else { return }
        #expect(header.serialized() == Array(vector.file[..<byteCount]), "\(name)")
    }

    /// The `mlkem768x25519` vectors, for the post-quantum step: the X25519-only code refuses their identities as
    /// unsupported and never misjudges them. With the X25519 identities a vector names (only `hybrid_x25519_arg`
    /// has one) the outcome is the vector's; without, it is the vector's or `no match` (what a reader without the
    /// hybrid identity must say), never a success or an HMAC failure that age would not report.
    @Test(arguments: names(["hybrid"]))
    func theHybridVectorsAreNotMisjudged(name: String) throws {
        let vector = try Vector(name: name)
        var identities: [AgeIdentity] = []
        for line in vector.identities {
            if line.hasPrefix(AgeIdentity.hybridPrefix) {
                #expect(throws: AgeError.unsupportedKeyType(prefix: "AGE-SECRET-KEY-PQ-1")) { try AgeIdentity(parsing: line) }
            } else {
                identities.append(try AgeIdentity(parsing: line))
            }
        }
        let result = Self.read(vector, identities: identities)
        if identities.isEmpty {
            #expect(result.expect == vector.expect || result.expect == "no match", "\(name): \(String(describing: result.error))")
        } else {
            #expect(result.expect == vector.expect, "\(name): \(String(describing: result.error))")
        }
    }
}

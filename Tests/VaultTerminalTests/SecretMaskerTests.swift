import Testing
import VaultCore
@testable import VaultTerminal

/// `SecretMasker`, the filter of `vault run --mask`, fed by hand (the CLI tests run it on a real command).
@Suite("SecretMasker")
struct SecretMaskerTests {
    static func masked(_ chunks: [String], secrets: [String], end: SecretMasker.Held = .end) -> String {
        let masker = SecretMasker(values: secrets.map { SecureBytes(string: $0) })
        var out: [UInt8] = []
        for (index, chunk) in chunks.enumerated() {
            let held: SecretMasker.Held = index == chunks.count - 1 ? end : .more
            Array(chunk.utf8).withUnsafeBytes { masker.process($0, held: held) { out += $0 } }
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func everyOccurrenceIsReplacedAlsoInsideLongerLines() {
        #expect(Self.masked(["token=ghp_S3CRET; again ghp_S3CRETghp_S3CRET.\n"], secrets: ["ghp_S3CRET"])
            == "token=******; again ************.\n")
    }

    @Test func aSecretSplitAtEveryPossiblePointIsStillMasked() {
        let text = "a ghp_S3CRET b"
        let bytes = Array(text.utf8)
        for first in 0...bytes.count {
            for second in first...bytes.count {
                let chunks = [bytes[..<first], bytes[first..<second], bytes[second...]].map { String(decoding: $0, as: UTF8.self) }
                #expect(Self.masked(chunks, secrets: ["ghp_S3CRET"]) == "a ****** b", "split at \(first), \(second)")
            }
        }
    }

    @Test func theLongestSecretWinsAndAShorterOneWaitsForIt() {
        #expect(Self.masked(["x abc", "def y abc z"], secrets: ["abc", "abcdef"]) == "x ****** y ****** z")
    }

    @Test func aValueEndingInANewlineIsAlsoMaskedWithoutIt() {
        #expect(Self.masked(["T=tok1234 and tok1234\n"], secrets: ["tok1234\n"]) == "T=****** and ******")
        #expect(Self.masked(["crlf pass99\r\n|"], secrets: ["pass99\r\n"]) == "crlf ******|")
    }

    @Test func whatEndsTheStreamAsAStrongStartOfASecretIsMaskedAShortOneShown() {
        #expect(Self.masked(["out: ghp_S3"], secrets: ["ghp_S3CRET"]) == "out: ******")
        #expect(Self.masked(["out: gh"], secrets: ["ghp_S3CRET"]) == "out: gh")
    }

    @Test func aHeldStartIsKeptWhateverThePauseAndPlainTextIsNot() {
        let masker = SecretMasker(values: [SecureBytes(string: "ghp_S3CRET")])
        var out: [UInt8] = []
        // One read at a time, as after any pause: what cannot begin the secret is out at once, the rest is held.
        Array("Password: g".utf8).withUnsafeBytes { masker.process($0, held: .more) { out += $0 } }
        #expect(String(decoding: out, as: UTF8.self) == "Password: ")
        for piece in ["h", "p", "_S3C"] {
            Array(piece.utf8).withUnsafeBytes { masker.process($0, held: .more) { out += $0 } }
            #expect(String(decoding: out, as: UTF8.self) == "Password: ")
        }
        Array("RET!".utf8).withUnsafeBytes { masker.process($0, held: .more) { out += $0 } }
        #expect(String(decoding: out, as: UTF8.self) == "Password: ******!")
        Array("gh".utf8).withUnsafeBytes { masker.process($0, held: .end) { out += $0 } }
        #expect(String(decoding: out, as: UTF8.self) == "Password: ******!gh")
    }

    @Test func emptyValuesMaskNothingAndPlainTextPassesUnchanged() {
        let text = String(repeating: "plain output, no secrets here\n", count: 1000)
        #expect(Self.masked([text], secrets: [""]) == text)
        #expect(Self.masked([text], secrets: ["zzzz-not-there"]) == text)
    }
}

import Foundation
import Testing
import VaultCore

@testable import VaultAge

/// The text header: its exact serialisation (64-column body lines, a final short line), parsing back, the MAC,
/// unwrapping through the stanzas, and the exact error of each way the grammar can break.
@Suite("age header")
struct AgeHeaderTests {
    static let fileKey = X25519StanzaTests.fileKey
    static let identity = X25519StanzaTests.identity

    static func text(_ header: AgeHeader) -> String { String(decoding: header.serialized(), as: UTF8.self) }

    /// Body lengths around the 48-byte (64-column) line: a body that fills its last line exactly is followed by
    /// an empty line.
    @Test func bodiesAreWrappedAt64ColumnsWithAShortLastLine() throws {
        let expectations: [(Int, [Int])] = [(0, [0]), (1, [2]), (47, [63]), (48, [64, 0]), (49, [64, 2]), (96, [64, 64, 0]), (100, [64, 64, 6])]
        for (count, lineLengths) in expectations {
            let stanza = AgeStanza(type: "test", arguments: ["a", "b"], body: AgeTestSupport.pattern(count: count))
            let header = try AgeHeader(stanzas: [stanza], fileKey: Self.fileKey)
            let lines = Self.text(header).split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.first == "age-encryption.org/v1" && lines[1] == "-> test a b")
            #expect(lines[2..<(2 + lineLengths.count)].map(\.count) == lineLengths, "\(count) bytes")
            #expect(lines[2 + lineLengths.count].hasPrefix("--- ") && lines.last == "")
            let (parsed, byteCount) = try AgeHeader.parse(header.serialized())
            #expect(parsed == header && parsed.stanzas[0].body == stanza.body && byteCount == header.serialized().count)
        }
    }

    /// The header of CCTV's `x25519` vector, rebuilt from its stanza and file key, is the very same bytes: the MAC
    /// is age's.
    @Test func theMACIsAges() throws {
        let vector = try CCTVTests.Vector(name: "x25519")
        let (parsed, byteCount) = try AgeHeader.parse(vector.file)
        let rebuilt = try AgeHeader(stanzas: parsed.stanzas, fileKey: SecureBytes(vector.fileKey!))
        #expect(rebuilt.serialized() == Array(vector.file[..<byteCount]))
        #expect(rebuilt.serializedWithoutMAC() == Array(vector.file[..<(byteCount - 45)]))  // " " + 43 + "\n"
        try parsed.verifyMAC(fileKey: SecureBytes(vector.fileKey!))
    }

    @Test func theMACCoversEveryStanza() throws {
        let stanza = try X25519Stanza.wrap(Self.fileKey, for: Self.identity.recipient).stanza
        let header = try AgeHeader(stanzas: [stanza, AgeStanza(type: "grease", arguments: ["x"], body: [1, 2, 3])], fileKey: Self.fileKey)
        try header.verifyMAC(fileKey: Self.fileKey)
        #expect(throws: AgeError.headerMACMismatch) { try header.verifyMAC(fileKey: .random(count: 16)) }
        #expect(throws: AgeError.wrongKeyLength(expected: 16, actual: 32)) { try header.verifyMAC(fileKey: .random(count: 32)) }
        // The same MAC over a header with one byte of the grease stanza changed, or the stanza left out.
        var bytes = header.serialized()
        let greaseLine = bytes.firstRange(of: Array("-> grease x\nAQID\n".utf8))!
        bytes[greaseLine.upperBound - 5] = UInt8(ascii: "B")  // AQID → BQID
        #expect(throws: AgeError.headerMACMismatch) { try AgeHeader.parse(bytes).header.unwrapFileKey(with: [Self.identity]) }
        let dropped = AgeHeader(stanzas: [stanza], mac: header.mac)
        #expect(throws: AgeError.headerMACMismatch) { try dropped.unwrapFileKey(with: [Self.identity]) }
        #expect(try header.unwrapFileKey(with: [Self.identity]) == Self.fileKey)
    }

    /// Identities in order, each over the stanzas in order; stanzas of other types skipped; none: no match.
    @Test func unwrappingTriesEveryIdentityOnEveryX25519Stanza() throws {
        let other = AgeIdentity.generate(), third = AgeIdentity.generate()
        let stanzas = [
            AgeStanza(type: "scrypt", arguments: ["c2FsdA", "18"], body: [UInt8](repeating: 0, count: 32)),
            try X25519Stanza.wrap(Self.fileKey, for: other.recipient).stanza,
            AgeStanza(type: "example.com/enigma", arguments: [], body: []),
            try X25519Stanza.wrap(Self.fileKey, for: Self.identity.recipient).stanza,
        ]
        let header = try AgeHeader(stanzas: stanzas, fileKey: Self.fileKey)
        #expect(try header.unwrapFileKey(with: [third, Self.identity]) == Self.fileKey)
        #expect(try header.unwrapFileKey(with: [other]) == Self.fileKey)
        #expect(throws: AgeError.noMatch) { try header.unwrapFileKey(with: [third]) }
        #expect(throws: AgeError.noMatch) { try header.unwrapFileKey(with: []) }
        // A malformed X25519 stanza anywhere is refused, even after one that would match.
        let bad = AgeStanza(type: "X25519", arguments: ["AAAA"], body: [UInt8](repeating: 0, count: 32))
        let withBad = try AgeHeader(stanzas: stanzas + [bad], fileKey: Self.fileKey)
        #expect(throws: AgeError.malformedStanza(.wrongShareLength)) { try withBad.unwrapFileKey(with: [Self.identity]) }
    }

    @Test func parsingStopsAtTheHeadersEnd() throws {
        let header = try AgeHeader(stanzas: [X25519Stanza.wrap(Self.fileKey, for: Self.identity.recipient).stanza], fileKey: Self.fileKey)
        let file = header.serialized() + [0x00, 0x0A, 0xFF] + Array("--- \n".utf8)
        let (parsed, byteCount) = try AgeHeader.parse(file)
        #expect(parsed == header && byteCount == header.serialized().count)
    }

    static let mac = "--- " + String(repeating: "A", count: 43) + "\n"
    static let stanza = "-> X25519 TEiF0ypqr+bpvcqXNyCVJpL7OuwPdVwPL7KQEbFDOCc\nhjabGXwSLQ9c3S6Lw2i+S2Tu2fiwQHHslbBN6B41FLE\n"
    static let v1 = "age-encryption.org/v1\n"

    @Test func eachBreakOfTheGrammarFailsExactly() {
        let v1 = Self.v1, mac = Self.mac, stanza = Self.stanza
        let full = String(repeating: "A", count: 64)
        let cases: [(String, Int, AgeError.HeaderFailure)] = [
            ("", 1, .notAnAgeFile),
            ("age-encryption.org/v", 1, .truncated),
            ("age-encryption.org/v1", 1, .truncated),
            ("age-encryption.org/v1\r\n", 1, .notAnAgeFile),
            ("age-encryption.org/v2\n", 1, .unsupportedVersion),
            ("age-encryption.org/\n", 1, .notAnAgeFile),
            ("age-encryption.org/v1 \n", 1, .notAnAgeFile),
            ("AGE-ENCRYPTION.ORG/V1\n", 1, .notAnAgeFile),
            ("-----BEGIN AGE ENCRYPTED FILE-----\n", 1, .notAnAgeFile),
            (v1, 2, .truncated),
            (v1 + "---", 2, .truncated),
            (v1 + mac, 2, .noStanzas),
            (v1 + "\n" + mac, 2, .unexpectedLine),
            (v1 + "# comment\n", 2, .unexpectedLine),
            (v1 + "->\n\n" + mac, 2, .malformedStanzaLine),
            (v1 + "-> \n\n" + mac, 2, .malformedStanzaLine),
            (v1 + "->X25519\n\n" + mac, 2, .malformedStanzaLine),
            (v1 + "-> a  b\n\n" + mac, 2, .malformedStanzaLine),
            (v1 + "-> a b \n\n" + mac, 2, .malformedStanzaLine),
            (v1 + "-> a\tb\n\n" + mac, 2, .malformedStanzaLine),
            (v1 + "-> caf\u{E9}\n\n" + mac, 2, .malformedStanzaLine),
            (v1 + "-> a\n", 3, .truncated),
            (v1 + "-> a\n" + full + "\n", 4, .truncated),
            (v1 + "-> a\n" + full + "A\n\n" + mac, 3, .malformedBodyLine),
            (v1 + "-> a\nAAA=\n" + mac, 3, .malformedBodyLine),
            (v1 + "-> a\nAB\n" + mac, 3, .malformedBodyLine),  // trailing bits
            (v1 + "-> a\nA\n" + mac, 3, .malformedBodyLine),  // a length no encoder writes
            (v1 + "-> a\n" + full + "\n" + mac, 4, .malformedBodyLine),  // no short line before the MAC
            (v1 + stanza + "--- " + String(repeating: "A", count: 42) + "\n", 4, .malformedMACLine),
            (v1 + stanza + "--- " + String(repeating: "A", count: 44) + "\n", 4, .malformedMACLine),
            (v1 + stanza + "---  " + String(repeating: "A", count: 43) + "\n", 4, .malformedMACLine),
            (v1 + stanza + "---" + String(repeating: "A", count: 43) + "\n", 4, .malformedMACLine),
            (v1 + stanza + "--- " + String(repeating: "A", count: 42) + "B\n", 4, .malformedMACLine),  // trailing bits
            (v1 + stanza + "--- " + String(repeating: "A", count: 43), 4, .truncated),
            (v1 + stanza + "--- " + String(repeating: "A", count: 43) + "\r\n", 4, .malformedMACLine),
        ]
        for (text, line, failure) in cases {
            #expect(throws: AgeError.malformedHeader(line: line, reason: failure), "\(text.debugDescription)") {
                try AgeHeader.parse(Array(text.utf8))
            }
        }
        #expect(throws: Never.self) { try AgeHeader.parse(Array((Self.v1 + Self.stanza + Self.mac).utf8)) }
    }
}

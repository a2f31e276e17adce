import Testing
import VaultCore

@testable import VaultAge

/// Bech32 as age uses it: BIP 173's checksum and its test vectors, without the 90-character limit, all upper or
/// all lower case, the checksum over the lower-case string.
@Suite("Bech32")
struct Bech32Tests {
    static func check(_ string: String) throws(AgeError) {
        try Array(string.utf8).withBytes { (text) throws(AgeError) in _ = try Bech32.check(text) }
    }

    /// BIP 173's valid strings: their checksums verify (their data need not be whole bytes, so `check` only).
    @Test(arguments: [
        "A12UEL5L", "a12uel5l",
        "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
        "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
        "11" + String(repeating: "q", count: 82) + "c8247j",  // 90 characters, the most BIP 173 allows
        "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w", "?1ezyfcl",
    ])
    func bip173ValidStringsVerify(_ string: String) throws {
        try Self.check(string)
    }

    /// BIP 173's invalid strings, each with the exact failure; its "overall max length exceeded" vector is valid
    /// here: age has no length limit.
    @Test func bip173InvalidStringsFailExactly() throws {
        let cases: [(String, AgeError.Bech32Failure)] = [
            ("\u{20}1nwldj5", .invalidCharacter),  // HRP character out of range
            ("\u{7F}1axkwrx", .invalidCharacter),
            ("\u{80}1eym55h", .invalidCharacter),
            ("pzry9x0s0muk", .missingSeparator),
            ("1pzry9x0s0muk", .missingSeparator),  // empty HRP
            ("x1b4n0q5v", .invalidCharacter),  // 'b' is not in the alphabet
            ("li1dgmt3", .tooShort),  // checksum too short
            ("de1lg7wt\u{FF}", .invalidCharacter),
            ("A1G7SGD8", .invalidChecksum),  // checksum computed over the upper-case HRP
            ("10a06t8", .missingSeparator),
            ("1qzzfhee", .missingSeparator),
        ]
        for (string, failure) in cases {
            #expect(throws: AgeError.invalidBech32(failure), "\(string.debugDescription)") { try Self.check(string) }
        }
        try Self.check("an84characterslonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1569pvx")
    }

    @Test func mixedCaseIsRefused() {
        #expect(throws: AgeError.invalidBech32(.mixedCase)) { try Self.check("A12uEL5L") }
        #expect(throws: AgeError.invalidBech32(.mixedCase)) {
            try Bech32.decode("age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujWj")
        }
    }

    /// Round trips in both cases, lengths around the 5- and 8-bit boundaries and past BIP 173's 90 characters.
    @Test(arguments: [0, 1, 2, 4, 5, 31, 32, 33, 100, 1000])
    func dataRoundTrips(count: Int) throws {
        let data = AgeTestSupport.pattern(count: count, seed: UInt8(count & 0xFF))
        let lower = Bech32.encode(humanReadablePart: "age", data: data)
        let upper = Bech32.encode(humanReadablePart: "AGE-SECRET-KEY-", data: data)
        #expect(lower == lower.lowercased() && upper == upper.uppercased())
        #expect(lower.utf8.count == Bech32.encodedByteCount(humanReadablePartByteCount: 3, dataByteCount: count))
        #expect(try Bech32.decode(lower) == ("age", data))
        #expect(try Bech32.decode(upper) == ("AGE-SECRET-KEY-", data))
        // The checksum is over the lower-case string: the upper-case form of a string decodes the same.
        #expect(try Bech32.decode(lower.uppercased()) == ("AGE", data))
        let secure = try Array(upper.utf8).withBytes { (text) throws(AgeError) in try Bech32.decode(text) }
        #expect(secure.humanReadablePart == "AGE-SECRET-KEY-" && secure.data.unprotectedBytes == data)
    }

    /// Every single-character substitution in the data part is caught by the checksum (BCH: up to 4 errors).
    @Test func everySubstitutionIsCaught() throws {
        let string = Array("age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj".utf8)
        for position in 4..<string.count {
            for replacement in Bech32.alphabet where replacement != string[position] {
                var altered = string
                altered[position] = replacement
                #expect(throws: AgeError.invalidBech32(.invalidChecksum)) { try Bech32.decode(String(decoding: altered, as: UTF8.self)) }
            }
        }
    }

    /// A data part whose leftover bits are not zero, or that holds a whole unused 5-bit group, is refused.
    @Test func nonZeroOrExcessPaddingIsRefused() throws {
        // One byte is two characters (10 bits, 2 of padding); "l" is 31: its low bits are not zero.
        let checksummed = { (hrp: String, values: [UInt8]) -> String in
            var checksum = Bech32.Checksum()
            checksum.add(humanReadablePart: Array(hrp.utf8))
            for value in values { checksum.add(value) }
            for _ in 0..<6 { checksum.add(0) }
            let polymod = checksum.value ^ 1
            let all = values + (0..<6).map { UInt8(polymod >> UInt32(5 * (5 - $0)) & 31) }
            return hrp + "1" + String(decoding: all.map { Bech32.alphabet[Int($0)] }, as: UTF8.self)
        }
        #expect(try Bech32.decode(checksummed("age", [31, 28])).data == [0xFF])
        #expect(throws: AgeError.invalidBech32(.invalidPadding)) { try Bech32.decode(checksummed("age", [31, 31])) }
        // Three characters: 15 bits, one byte and 7 leftover bits (a whole group too many).
        #expect(throws: AgeError.invalidBech32(.invalidPadding)) { try Bech32.decode(checksummed("age", [31, 28, 0])) }
    }
}

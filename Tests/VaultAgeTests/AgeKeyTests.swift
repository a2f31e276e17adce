import Testing
import VaultCore

@testable import VaultAge

/// `age1…` recipients, `AGE-SECRET-KEY-1…` identities and identity files.
@Suite("age recipients and identities")
struct AgeKeyTests {
    /// The pair in C2SP age.md, "The X25519 recipient type" (also what `age-keygen -y` prints for it).
    static let specIdentity = "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX"
    static let specRecipient = "age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwj"

    @Test func theSpecsIdentityGivesTheSpecsRecipient() throws {
        let identity = try AgeIdentity(parsing: Self.specIdentity)
        #expect(identity.recipient.description == Self.specRecipient)
        #expect(identity.recipient == (try AgeRecipient(parsing: Self.specRecipient)))
        #expect(identity.encoded().stringValue == Self.specIdentity)
        #expect(identity.secretKey.unprotectedBytes == [UInt8](repeating: 0x42, count: 32))
    }

    @Test func aGeneratedIdentityRoundTrips() throws {
        let identity = AgeIdentity.generate()
        let encoded = identity.encoded()
        #expect(encoded.stringValue?.hasPrefix("AGE-SECRET-KEY-1") == true && encoded.count == 74)
        let parsed = try AgeIdentity(parsing: encoded)
        #expect(parsed.recipient == identity.recipient && parsed.secretKey == identity.secretKey)
        #expect(AgeIdentity.generate().recipient != identity.recipient)
        #expect(try AgeRecipient(parsing: identity.recipient.description) == identity.recipient)
    }

    @Test func anIdentitysDescriptionShowsTheRecipientNotTheKey() throws {
        let identity = try AgeIdentity(parsing: Self.specIdentity)
        #expect(identity.description == "AgeIdentity(\(Self.specRecipient), secret key redacted)")
        #expect(!"\(identity)".contains("GFPYYSJZ"))
    }

    @Test func badRecipientsFailExactly() {
        let cases: [(String, AgeError)] = [
            // A typo: the checksum.
            ("age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujwq", .invalidBech32(.invalidChecksum)),
            ("age1zvkyg2lqzraa2lnjvqej32nkuu0ues2s82hzrye869xeexvn73equnujWJ", .invalidBech32(.mixedCase)),
            // age compares the human-readable part case-sensitively: upper case is another type.
            (Self.specRecipient.uppercased(), .wrongKeyType(expected: "age1")),
            ("age1pq1" + String(repeating: "q", count: 60), .unsupportedKeyType(prefix: "age1pq1")),
            ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", .wrongKeyType(expected: "age1")),
            // A valid Bech32 string of another human-readable part that starts with "age1"…: the last '1' separates.
            (Bech32.encode(humanReadablePart: "age1x", data: [UInt8](repeating: 1, count: 32)), .wrongKeyType(expected: "age1")),
            (Bech32.encode(humanReadablePart: "age", data: [UInt8](repeating: 1, count: 31)), .wrongKeyLength(expected: 32, actual: 31)),
            (Bech32.encode(humanReadablePart: "age", data: [UInt8](repeating: 1, count: 33)), .wrongKeyLength(expected: 32, actual: 33)),
            ("age1", .invalidBech32(.tooShort)),
            ("", .wrongKeyType(expected: "age1")),
        ]
        for (string, error) in cases {
            #expect(throws: error, "\(string)") { try AgeRecipient(parsing: string) }
        }
    }

    @Test func badIdentitiesFailExactly() {
        let cases: [(String, AgeError)] = [
            (String(Self.specIdentity.dropLast()) + "Q", .invalidBech32(.invalidChecksum)),
            (String(Self.specIdentity.dropLast(3)) + "gex", .invalidBech32(.mixedCase)),
            // age writes and reads identities in upper case only.
            (Self.specIdentity.lowercased(), .wrongKeyType(expected: "AGE-SECRET-KEY-1")),
            ("AGE-SECRET-KEY-PQ-1XX76JRALNLXDMEW0CRK45QMCCH4X06SE84UN3VPM33W6HWDX0H3SK3ZQFR", .unsupportedKeyType(prefix: "AGE-SECRET-KEY-PQ-1")),
            (Self.specRecipient, .wrongKeyType(expected: "AGE-SECRET-KEY-1")),
            (" " + Self.specIdentity, .wrongKeyType(expected: "AGE-SECRET-KEY-1")),
            (Self.specIdentity + " ", .invalidBech32(.invalidCharacter)),
            (Bech32.encode(humanReadablePart: "AGE-SECRET-KEY-", data: [UInt8](repeating: 1, count: 16)), .wrongKeyLength(expected: 32, actual: 16)),
            (Bech32.encode(humanReadablePart: "AGE-SECRET-KEY-1X", data: [UInt8](repeating: 1, count: 32)), .wrongKeyType(expected: "AGE-SECRET-KEY-1")),
        ]
        for (string, error) in cases {
            #expect(throws: error, "\(string)") { try AgeIdentity(parsing: string) }
        }
        #expect(throws: AgeError.wrongKeyLength(expected: 32, actual: 31)) { try AgeIdentity(secretKey: .random(count: 31)) }
    }

    // MARK: Identity files

    @Test func anIdentityFileAsAgeKeygenWritesIt() throws {
        let other = AgeIdentity.generate()
        let file = """
            # created: 2026-11-20T10:00:00Z
            # public key: \(Self.specRecipient)
            \(Self.specIdentity)

            # a second key, with a CR LF line end and no final line feed
            \(other.encoded().stringValue!)\r\n\(Self.specIdentity)
            """
        let identities = try AgeIdentity.parseIdentityFile(SecureBytes(string: file))
        #expect(identities.map(\.recipient) == [Self.specRecipient, other.recipient.description, Self.specRecipient].map { try! AgeRecipient(parsing: $0) })
    }

    /// The error names the line by its number and why; never what the line holds (it may be a mistyped key, or a
    /// passphrase pasted into the wrong file).
    @Test func aBadLineIsNamedByItsNumberNotItsContent() throws {
        let secretLooking = "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEQ"
        let cases: [(String, AgeError)] = [
            ("# key\n\n\(secretLooking)\n", .invalidIdentityLine(line: 3, reason: .invalidBech32(.invalidChecksum))),
            ("\(Self.specIdentity)\ncorrect horse battery staple\n", .invalidIdentityLine(line: 2, reason: .wrongKeyType(expected: "AGE-SECRET-KEY-1"))),
            ("\(Self.specIdentity)\n  \(Self.specIdentity)\n", .invalidIdentityLine(line: 2, reason: .wrongKeyType(expected: "AGE-SECRET-KEY-1"))),
            ("#\n#\n#\nAGE-SECRET-KEY-PQ-1XX76JRALNLXDMEW0CRK45QMCCH4X06SE84UN3VPM33W6HWDX0H3SK3ZQFR",
             .invalidIdentityLine(line: 4, reason: .unsupportedKeyType(prefix: "AGE-SECRET-KEY-PQ-1"))),
        ]
        for (file, error) in cases {
            do {
                _ = try AgeIdentity.parseIdentityFile(SecureBytes(string: file))
                Issue.record("parsed: \(error)")
            } catch let thrown {
                let message = "\(thrown)"
                #expect(message.hasPrefix("identity file, line "), "\(message)")
                #expect(!message.contains("GFPYYSJZ") && !message.contains("horse"), "\(message)")
            }
            #expect(throws: error) { try AgeIdentity.parseIdentityFile(SecureBytes(string: file)) }
        }
        #expect(throws: AgeError.noIdentities) { try AgeIdentity.parseIdentityFile(SecureBytes(string: "# nothing\n\n")) }
        #expect(throws: AgeError.noIdentities) { try AgeIdentity.parseIdentityFile(SecureBytes(string: "")) }
        #expect("\(AgeError.invalidIdentityLine(line: 3, reason: .invalidBech32(.invalidChecksum)))"
            == "identity file, line 3: malformed key: invalid checksum (a typo?)")
    }
}

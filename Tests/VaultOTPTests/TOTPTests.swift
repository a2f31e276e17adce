import Foundation
import Testing
import VaultCore
import VaultOTP
import VaultTestSupport

private func uri(_ text: String) -> SecureBytes { SecureBytes(string: text) }
private func code(_ totp: TOTP, at time: Int64) throws -> String {
    try totp.code(at: time).stringValue ?? ""
}
private func base32(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    var out = "", buffer = 0, bits = 0
    for byte in bytes {
        buffer = (buffer << 8) | Int(byte)
        bits += 8
        while bits >= 5 {
            bits -= 5
            out.append(alphabet[(buffer >> bits) & 31])
        }
    }
    if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
    return out
}

@Suite("TOTP (RFC 6238)")
struct TOTPTests {
    // RFC 6238 Appendix B: the seeds are the ASCII digits "1234567890" repeated to 20, 32 and 64 bytes.
    static let seed20 = Array("12345678901234567890".utf8)
    static let seed32 = Array("12345678901234567890123456789012".utf8)
    static let seed64 = Array("1234567890123456789012345678901234567890123456789012345678901234".utf8)
    static let appendixB: [(Int64, String, String, String)] = [
        (59, "94287082", "46119246", "90693936"),
        (1_111_111_109, "07081804", "68084774", "25091201"),
        (1_111_111_111, "14050471", "67062674", "99943326"),
        (1_234_567_890, "89005924", "91819424", "93441116"),
        (2_000_000_000, "69279037", "90698825", "38618901"),
        (20_000_000_000, "65353130", "77737706", "47863826"),
    ]

    @Test func rfc6238AppendixBVectorsForAllThreeAlgorithms() throws {
        for (time, sha1, sha256, sha512) in Self.appendixB {
            for (algorithm, seed, expected) in [
                ("SHA1", Self.seed20, sha1), ("SHA256", Self.seed32, sha256), ("SHA512", Self.seed64, sha512),
            ] {
                let totp = try TOTP(uri: uri("otpauth://totp/RFC:6238?secret=\(base32(seed))&algorithm=\(algorithm)&digits=8"))
                #expect(try code(totp, at: time) == expected, "\(algorithm) at \(time)")
            }
        }
    }

    @Test func defaultsAreSHA1SixDigitsThirtySeconds() throws {
        let totp = try TOTP(uri: uri("otpauth://totp/Example:alice@example.com?secret=\(base32(Self.seed20))&issuer=Example"))
        #expect(totp.algorithm == .sha1 && totp.encoding == .decimal(digits: 6) && totp.period == 30)
        #expect(totp.issuer == "Example" && totp.account == "alice@example.com")
        #expect(try code(totp, at: 59) == "287082")  // the last six digits of the 8-digit vector
        #expect(totp.secondsLeft(at: 59) == 1 && totp.secondsLeft(at: 60) == 30)
    }

    @Test func aBareBase32SecretInAnyCaseWithSpacesIsAccepted() throws {
        let grouped = base32(Self.seed20).lowercased().enumerated().map { $0.offset % 4 == 3 ? "\($0.element) " : "\($0.element)" }.joined()
        let totp = try TOTP(uri: uri(grouped + "\n"))
        #expect(try code(totp, at: 1_111_111_109) == "081804")
    }

    @Test func steamCodesFromEncoderOrType() throws {
        // Steam Guard: the 31-bit truncation written in base 26 over "23456789BCDFGHJKMNPQRTVWXY", least significant
        // first. The RFC seed at t=59 truncates to 1,094,287,082 (the 8-digit vector is its last 8 digits); Python's
        // hmac gives "PV9M4" for it.
        #expect(steam(1_094_287_082) == "PV9M4")
        let expected = "PV9M4"
        for text in [
            "otpauth://totp/Steam:alice?secret=\(base32(Self.seed20))&issuer=Steam&encoder=steam&digits=5",
            "otpauth://steam/Steam:alice?secret=\(base32(Self.seed20))",
        ] {
            let totp = try TOTP(uri: uri(text))
            #expect(totp.encoding == .steam)
            #expect(try code(totp, at: 59) == expected)
        }
    }

    private func steam(_ value: UInt32) -> String {
        let alphabet = Array("23456789BCDFGHJKMNPQRTVWXY")
        var value = value, out = ""
        for _ in 0..<5 { out.append(alphabet[Int(value % 26)]); value /= 26 }
        return out
    }

    @Test func malformedURIsGetTheirExactError() throws {
        let secret = base32(Self.seed20)
        let cases: [(String, OTPError)] = [
            ("otpauth://hotp/x?secret=\(secret)&counter=1", .counterBasedNotSupported),
            ("otpauth://foo/x?secret=\(secret)", .notAnOTPURI),
            ("https://example.com/?secret=\(secret)", .notAnOTPURI),
            ("otpauth://totp/x?issuer=a", .missingSecret),
            ("otpauth://totp/x?secret=", .missingSecret),
            ("otpauth://totp/x?secret=AB1C", .invalidBase32),
            ("otpauth://totp/x?secret=A", .invalidBase32),
            ("otpauth://totp/x?secret=AB=CD", .invalidBase32),
            ("otpauth://totp/x?secret=\(secret)&algorithm=MD5", .unsupportedParameter(name: "algorithm", reason: "SHA1, SHA256 or SHA512")),
            ("otpauth://totp/x?secret=\(secret)&digits=9", .unsupportedParameter(name: "digits", reason: "6, 7 or 8")),
            ("otpauth://totp/x?secret=\(secret)&digits=five", .unsupportedParameter(name: "digits", reason: "6, 7 or 8")),
            ("otpauth://totp/x?secret=\(secret)&period=0", .unsupportedParameter(name: "period", reason: "1 to 3600 seconds")),
            ("otpauth://totp/x?secret=\(secret)&encoder=yandex", .unsupportedParameter(name: "encoder", reason: "only steam is known")),
            ("otpauth://totp/x?secret=\(secret)&secret=\(secret)", .repeatedParameter("secret")),
            ("not a secret: at all", .notAnOTPURI),
            ("", .invalidBase32),
        ]
        for (text, error) in cases {
            #expect(throws: error, "\(text)") { try TOTP(uri: uri(text)) }
        }
        // No message holds the secret.
        for (_, error) in cases { #expect(!error.description.contains(secret)) }
    }

    @Test func timesOutsideTheCounterAreRefused() throws {
        let totp = try TOTP(uri: uri(base32(Self.seed20)))
        #expect(throws: OTPError.timeOutOfRange(-1)) { try totp.code(at: -1) }
        #expect(throws: OTPError.timeOutOfRange(Int64.max)) { try totp.code(at: .max) }
    }

    /// oathtool (liboath) as the oracle: random secrets, the three algorithms, 6–8 digits, several periods and times.
    @Test func equalToOathtoolAtManyTimes() throws {
        guard let oathtool = findTool("oathtool") else {
            Issue.record("oathtool is not installed (scripts/install-deps --test installs it)")
            return
        }
        var generator = SystemRandomNumberGenerator()
        for round in 0..<24 {
            let algorithm = ["SHA1", "SHA256", "SHA512"][round % 3]
            let digits = 6 + round % 3
            let period = [30, 60, 15][round / 3 % 3]
            let secret = (0..<(10 + round)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let time = Int64.random(in: 0...4_000_000_000, using: &generator)
            let totp = try TOTP(uri: uri("otpauth://totp/t?secret=\(base32(secret))&algorithm=\(algorithm)&digits=\(digits)&period=\(period)"))
            let hex = secret.map { String(format: "%02x", $0) }.joined()
            let (status, output) = try runTool(oathtool, [
                "--totp=\(algorithm.lowercased())", "--digits=\(digits)", "--time-step-size=\(period)s",
                "--now=@\(time)", hex,
            ])
            #expect(status == 0)
            #expect(try code(totp, at: time) == output.trimmingCharacters(in: .whitespacesAndNewlines), "\(algorithm) \(digits) \(period) \(time)")
        }
    }

    /// pyotp as a second oracle, on the URI itself (its own otpauth parser).
    @Test func equalToPyotpOnTheSameURI() throws {
        guard let python = findTool("python3"), (try? runTool(python, ["-c", "import pyotp"]))?.0 == 0 else {
            Issue.record("pyotp is not installed (scripts/install-deps --test installs it)")
            return
        }
        let text = "otpauth://totp/ACME%20Co:john.doe@email.com?secret=HXDMVJECJJWSRB3HWIZR4IFUGFTMXBOZ&issuer=ACME%20Co&algorithm=SHA256&digits=7&period=45"
        let totp = try TOTP(uri: uri(text))
        #expect(totp.issuer == "ACME Co" && totp.account == "john.doe@email.com")
        for time: Int64 in [0, 44, 45, 1_700_000_000, 3_000_000_123] {
            let (status, output) = try runTool(python, ["-c", "import pyotp,sys; print(pyotp.parse_uri(sys.argv[1]).at(int(sys.argv[2])))", text, "\(time)"])
            #expect(status == 0)
            #expect(try code(totp, at: time) == output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}

import Foundation
import Testing
import VaultCore

/// Issue 21: `vault otp NAME [--at UNIXTIME] [--json]` from the entry's `otp` field: RFC 6238's appendix B values,
/// the same codes as oathtool, through the agent with the same bytes, and the field's bad contents (no secret in
/// any message).
@Suite(.processTimeLimit) struct OTPCLITests {
    /// RFC 6238 appendix B's SHA-1 secret, "12345678901234567890", in base32.
    static let rfcSecret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

    func json(_ result: CLIResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.stdoutText) \(result.stderr)")
    }

    @Test func codesAreRFC6238sAndOathtoolsAtEveryTime() throws {
        let box = try Sandbox()
        try box.initVault()
        let uri = "otpauth://totp/Example:alice@example.com?secret=\(Self.rfcSecret)&issuer=Example&digits=8"
        #expect(try box.vault(["put", "rfc", "--field", "otp"], stdin: Data(uri.utf8)).status == 0)
        // RFC 6238 appendix B, SHA-1, 8 digits.
        for (time, code) in [(59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"),
                             (1_234_567_890, "89005924"), (2_000_000_000, "69279037"), (20_000_000_000, "65353130")] {
            let result = try box.vault(["otp", "rfc", "--at", String(time)])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutText == code, "at \(time)")  // exact: no newline on a pipe
        }
        let object = try json(box.vault(["otp", "rfc", "--at", "59", "--json"]))
        #expect(object["code"] as? String == "94287082" && object["seconds_left"] as? Int == 1 && object["period"] as? Int == 30)
        #expect(object["issuer"] as? String == "Example" && object["account"] as? String == "alice@example.com")
        #expect(object["name"] as? String == "rfc" && object["at"] as? Int == 59)

        // A bare base32 secret, and oathtool's own codes at several times (SHA-1, 6 digits, 30 s).
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/oathtool") else {
            Issue.record("oathtool is missing: run scripts/install-deps --test")
            return
        }
        let secret = "JBSWY3DPEHPK3PXP"
        #expect(try box.vault(["put", "bare", "--field", "otp"], stdin: Data(secret.utf8)).status == 0)
        for time in [0, 29, 30, 1_700_000_000, 1_764_000_015, 4_102_444_800] {
            let date = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(time)))
            let oath = try CLI.exec("/usr/bin/oathtool", ["--totp", "--base32", "--now", date, "-"], stdin: Data(secret.utf8))
            #expect(oath.status == 0, "\(oath.stderr)")
            let ours = try box.vault(["otp", "bare", "--at", String(time)])
            #expect(ours.status == 0 && ours.stdoutText + "\n" == oath.stdoutText, "at \(time): \(ours.stdoutText) vs \(oath.stdoutText)")
        }
        // Now: a code of 6 digits, valid for 1 to 30 more seconds.
        let now = try json(box.vault(["otp", "bare", "--json"]))
        #expect((now["code"] as? String)?.count == 6)
        #expect((1...30).contains(now["seconds_left"] as? Int ?? 0))
    }

    @Test func badFieldsAndBadInputSayWhatIsWrongAndNeverTheSecret() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "plain"], stdin: Data("pw".utf8)).status == 0)
        let none = try box.vault(["otp", "plain"])
        #expect(none.status == 2 && none.stdout.isEmpty)
        #expect(none.stderr.hasPrefix("vault: entry 'plain' has no field 'otp'"), "\(none.stderr)")
        let missing = try box.vault(["otp", "nothing"])
        #expect(missing.status == 2 && missing.stderr.hasPrefix("vault: no entry 'nothing'"), "\(missing.stderr)")

        // `put --field otp` takes only what makes a code: nothing else is stored.
        let secret = "NOTB4SE32SECRET1"  // '1' is not base32
        for value in ["otpauth://totp/x?secret=\(secret)", "otpauth://hotp/x?secret=JBSWY3DP&counter=1", "hunter2!", ""] {
            let refused = try box.vault(["put", "bad", "--field", "otp"], stdin: Data(value.utf8))
            #expect(refused.status == 64 && refused.stderr.hasPrefix("vault: the otp field takes an otpauth://totp/ URI or a base32 secret: "), "\(value): \(refused.stderr)")
            #expect(!refused.stderr.contains(secret))
        }
        #expect(try box.vault(["show", "bad"]).status == 2)
        #expect(try box.vault(["put", "good", "--field", "otp"], stdin: Data("jbsw y3dp ehpk 3pxp\n".utf8)).status == 0)

        // A field stored some other way (an older vault, another program) that makes no code: `vault otp` says so.
        let store = try VaultOpener.open(path: box.vaultPath, passphrase: SecureBytes(string: Adversarial.passphrase), options: .insecureForTesting)
        try store.apply([
            .setField(entry: "bad", field: "otp", value: SecureBytes(string: "otpauth://totp/x?secret=\(secret)"), secret: nil),
        ])
        store.close()
        let bad = try box.vault(["otp", "bad"])
        #expect(bad.status == 1 && bad.stdout.isEmpty)
        #expect(bad.stderr == """
            vault: the otp field of 'bad' gives no code: the secret is not base32 (A-Z and 2-7, optional '=' padding)
            hint: store an otpauth://totp/ URI or a base32 secret: vault put 'bad' --field otp

            """, "\(bad.stderr)")
        let badJSON = try box.vault(["otp", "bad", "--json"])
        #expect(badJSON.status == 1 && badJSON.stderr.contains("\"code\":\"invalid_otp\""), "\(badJSON.stderr)")
        for result in [bad, badJSON] { #expect(!result.stderr.contains(secret)) }

        let negative = try box.vault(["otp", "bad", "--at=-5"])
        #expect(negative.status == 64 && negative.stderr.contains("--at takes seconds since the Unix epoch"), "\(negative.stderr)")

        // A version-1 vault has no fields.
        let older = box.directory + "/vaults/old.vault"
        #expect(try box.vault(["init", "--vault", older, "--format", "1"]).status == 0)
        #expect(try box.vault(["put", "k", "--vault", older], stdin: Data("v".utf8)).status == 0)
        let one = try box.vault(["otp", "k", "--vault", older])
        #expect(one.status == 64 && one.stderr.contains("format version 2"), "\(one.stderr)")
    }

    @Test func throughTheAgentTheSameBytesAndExitCodes() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        try box.unlock()
        #expect(try box.vault(["put", "gh", "--field", "otp"], stdin: Data("otpauth://totp/GitHub:alice?secret=\(Self.rfcSecret)".utf8)).status == 0)
        #expect(try box.vault(["put", "pw"], stdin: Data("x".utf8)).status == 0)
        try box.expectSameThroughTheAgent([["otp", "gh", "--at", "59"], ["otp", "gh", "--at", "1111111109", "--json"], ["otp", "pw"], ["otp", "nope"]])
        #expect(try box.vault(["otp", "gh", "--at", "59"]).stdoutText == "287082")
    }
}

import Foundation
import Testing

/// Issue 35 §2: `vault run` and `vault inject` reach any field: `vault://ENTRY#FIELD` in --env, --env-file, --file and
/// --stdin, `{{ vault "ENTRY" "FIELD" }}` in templates, masked as values are.
@Suite(.processTimeLimit) struct RunFieldTests {
    let box: Sandbox

    init() throws {
        box = try Sandbox()
        try box.initVault()
        for (entry, field, value) in [("servers/db", "password", "hunter2-db"), ("servers/db", "username", "dbadmin"),
                                      ("servers/db", "port", "5432"), ("a#b%c", "username", "odd-name-user")] {
            let put = try box.vault(["put", entry, "--field", field], stdin: Data(value.utf8))
            #expect(put.status == 0, "put \(entry) \(field): \(put.stderr)")
        }
    }

    func run(_ arguments: [String], stdin: Data = Data()) throws -> CLIResult {
        try box.vault(["run", "--passphrase-file", box.passphraseFile] + arguments, stdin: stdin, passphrase: false)
    }

    @Test func envFileStdinAndFileReachAnyField() throws {
        let env = box.directory + "/app.env"
        try box.write("export DB_PORT=vault://servers/db#port\nODD=vault://a%23b%25c#username\n", to: env)
        let result = try run([
            "--env", "DB_USER=vault://servers/db#username", "--env", "DB_PASS=servers/db", "--env", "ALSO=vault://servers/db",
            "--env-file", env, "--file", "USER_FILE=vault://servers/db#username", "--stdin", "vault://servers/db#port", "--",
            "/bin/sh", "-c", #"printf '%s|%s|%s|%s|%s|%s|' "$DB_USER" "$DB_PASS" "$ALSO" "$DB_PORT" "$ODD" "$(cat "$USER_FILE")"; cat"#,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutText == "dbadmin|hunter2-db|hunter2-db|5432|odd-name-user|dbadmin|5432")
    }

    @Test func fieldValuesAreMaskedToo() throws {
        let result = try run(["--mask", "--env", "U=vault://servers/db#username", "--", "/bin/sh", "-c", #"echo "user $U"; echo "$U" >&2"#])
        #expect(result.status == 0 && result.stdoutText == "user ******\n" && result.stderr == "******\n", "\(result.stdoutText) \(result.stderr)")
    }

    @Test func aMissingFieldOrEntryOrABadReferenceRunsNothing() throws {
        let marker = box.directory + "/ran"
        let command = ["--", "/bin/sh", "-c", "touch '\(marker)'"]
        let noField = try run(["--env", "X=vault://servers/db#nope"] + command)
        #expect(noField.status == 2 && noField.stderr == "vault: entry 'servers/db' has no field 'nope'\nhint: 'vault show NAME' shows the entry's fields\n",
                "\(noField.stderr)")
        let noEntry = try run(["--env", "X=vault://servers/none#username"] + command)
        #expect(noEntry.status == 2 && noEntry.stderr.hasPrefix("vault: no entry 'servers/none' in vault"), "\(noEntry.stderr)")
        for bad in ["X=vault://servers/db#user#name", "X=vault://", "X=vault://servers/db#", "X=vault://a%2#b", "X=vault://#username"] {
            let refused = try run(["--env", bad] + command)
            #expect(refused.status == 64 && refused.stderr.contains("expected vault://ENTRY or vault://ENTRY#FIELD"), "\(bad): \(refused.stderr)")
        }
        let env = box.directory + "/bad.env"
        try box.write("A=vault://x#y#z\n", to: env)
        let badLine = try run(["--env-file", env] + command)
        #expect(badLine.status == 64 && badLine.stderr.contains("\(env): line 1: expected ENTRY, vault://ENTRY#FIELD or vault-otp://ENTRY after '='"), "\(badLine.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the command never ran")
    }

    @Test func injectFillsFieldPlaceholders() throws {
        let template = #"user={{ vault "servers/db" "username" }} pass={{vault "servers/db"}} port={{ vault "servers/db"  "port" }}"#
        let filled = try box.vault(["inject"], stdin: Data(template.utf8), passphrase: false, extraEnvironment: ["VAULT_PASSPHRASE": "correct horse battery staple"])
        #expect(filled.status == 0 && filled.stdoutText == "user=dbadmin pass=hunter2-db port=5432", "\(filled.stderr)")
        let missing = try box.vault(["inject"], stdin: Data(#"{{ vault "servers/db" "nope" }}"#.utf8), passphrase: false,
                                    extraEnvironment: ["VAULT_PASSPHRASE": "correct horse battery staple"])
        #expect(missing.status == 2 && missing.stdoutText.isEmpty && missing.stderr.hasPrefix("vault: entry 'servers/db' has no field 'nope'"), "\(missing.stderr)")
        let malformed = try box.vault(["inject"], stdin: Data("a\n{{ vault \"servers/db\" username }}".utf8), passphrase: false,
                                      extraEnvironment: ["VAULT_PASSPHRASE": "correct horse battery staple"])
        #expect(malformed.status == 64 && malformed.stderr.contains(
            #"malformed placeholder on line 2: expected {{ vault "ENTRY" }}, {{ vault "ENTRY" "FIELD" }} or {{ otp "ENTRY" }}"#), "\(malformed.stderr)")
    }

    /// Walkthrough finding 12: the current one-time code, `{{ otp "ENTRY" }}` in templates and `vault-otp://ENTRY` where
    /// run takes an entry, is oathtool's for the seed (the `otp` field stays the seed: `{{ vault "ENTRY" "otp" }}`).
    /// `vault` runs these command lines in vault-net (its HMAC), a template read from stdin included.
    @Test(.enabled(if: ImportCLITests.hasOathtool || ProcessInfo.processInfo.environment["CI"] == "true", "needs oathtool: scripts/install-deps --test"))
    func theCurrentOneTimeCodeIsOathtools() throws {
        try #require(ImportCLITests.hasOathtool, "oathtool is needed (CI=true)")
        let uri = "otpauth://totp/GitHub:alice?secret=JBSWY3DPEHPK3PXP&issuer=GitHub"
        #expect(try box.vault(["put", "totp/github", "--field", "otp"], stdin: Data(uri.utf8)).status == 0)
        #expect(try box.vault(["put", "totp/github"], stdin: Data("gh-pass".utf8)).status == 0)
        /// `result`'s output, with the code oathtool gave just before or just after it in place of `CODE`.
        func expectCode(_ expected: String, _ make: () throws -> CLIResult, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let before = try ImportCLITests().oathtool("JBSWY3DPEHPK3PXP", at: Int(Date().timeIntervalSince1970))
            let result = try make()
            let after = try ImportCLITests().oathtool("JBSWY3DPEHPK3PXP", at: Int(Date().timeIntervalSince1970))
            let wanted = [before, after].map { expected.replacingOccurrences(of: "CODE", with: $0) }
            #expect(result.status == 0 && wanted.contains(result.stdoutText), "\(result.stdoutText) \(result.stderr) (oathtool: \(before), \(after))", sourceLocation: sourceLocation)
        }
        let passphrase = ["VAULT_PASSPHRASE": "correct horse battery staple"]
        let template = #"code={{ otp "totp/github" }} seed={{ vault "totp/github" "otp" }} pass={{ vault "totp/github" }}"#
        try expectCode("code=CODE seed=\(uri) pass=gh-pass") {
            try box.vault(["inject"], stdin: Data(template.utf8), passphrase: false, extraEnvironment: passphrase)
        }
        let file = box.directory + "/template"
        try box.write(template, to: file)
        try expectCode("code=CODE seed=\(uri) pass=gh-pass") { try box.vault(["inject", "-i", file]) }
        try expectCode("CODE|CODE|CODE") {
            try run(["--env", "C=vault-otp://totp/github", "--file", "F=vault-otp://totp%2Fgithub", "--stdin", "vault-otp://totp/github", "--",
                     "/bin/sh", "-c", #"printf '%s|%s|' "$C" "$(cat "$F")"; cat"#])
        }
        let env = box.directory + "/codes.env"
        try box.write("C=vault-otp://totp/github\n", to: env)
        try expectCode("CODE") { try run(["--env-file", env, "--", "/bin/sh", "-c", #"printf %s "$C""#]) }
        // No otp field, no entry, a bad reference, a bad placeholder: errors, nothing run or written.
        let noField = try box.vault(["inject"], stdin: Data(#"{{ otp "servers/db" }}"#.utf8), passphrase: false, extraEnvironment: passphrase)
        #expect(noField.status == 2 && noField.stdoutText.isEmpty && noField.stderr.hasPrefix("vault: entry 'servers/db' has no field 'otp'"), "\(noField.stderr)")
        let noEntry = try run(["--env", "C=vault-otp://totp/none", "--", "/bin/true"])
        #expect(noEntry.status == 2 && noEntry.stderr.hasPrefix("vault: no entry 'totp/none' in vault"), "\(noEntry.stderr)")
        let bad = try run(["--env", "C=vault-otp://", "--", "/bin/true"])
        #expect(bad.status == 64 && bad.stderr.contains("expected vault-otp://ENTRY"), "\(bad.stderr)")
        let twoNames = try box.vault(["inject"], stdin: Data(#"{{ otp "totp/github" "otp" }}"#.utf8), passphrase: false, extraEnvironment: passphrase)
        #expect(twoNames.status == 64 && twoNames.stderr.contains("malformed placeholder on line 1"), "\(twoNames.stderr)")
    }
}

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
        #expect(badLine.status == 64 && badLine.stderr.contains("\(env): line 1: expected ENTRY or vault://ENTRY#FIELD after '='"), "\(badLine.stderr)")
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
            #"malformed placeholder on line 2: expected {{ vault "ENTRY" }} or {{ vault "ENTRY" "FIELD" }}"#), "\(malformed.stderr)")
    }
}

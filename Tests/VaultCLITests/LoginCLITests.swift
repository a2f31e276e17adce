import Foundation
import Testing
import VaultTestSupport

/// `vault login`, `vault fetch`, `vault logout` through the built binary, against a real nginx with auth_basic.
///
/// The CLI runs without a controlling terminal (`setsid`), so no prompt is ever possible: every path that would
/// need one must fail at once with its documented exit code.
@Suite(.processTimeLimit) struct LoginCLITests {
    let box: Sandbox
    let nginx: NginxFixture

    init() throws {
        box = try Sandbox()
        nginx = try NginxFixture(users: ["alice": "correct horse"])
    }

    /// A 0600 file holding `password` and a newline, in the sandbox.
    func passwordFile(_ password: String, name: String = "password") throws -> String {
        let path = box.directory + "/" + name
        try box.write(password + "\n", to: path)
        return path
    }

    func login(_ path: String = "/private/", user: String = "alice", password: String) throws -> CLIResult {
        try box.vault([
            "login", nginx.url(path), "--username", user, "--password-file", try passwordFile(password),
            "--allow-insecure-http",
        ])
    }

    func fetch(_ path: String, _ extra: [String] = ["--allow-insecure-http"]) throws -> CLIResult {
        try box.vault(["fetch", nginx.url(path)] + extra)
    }

    func list() throws -> String {
        let result = try box.vault(["list"])
        #expect(result.status == 0)
        return result.stdoutText
    }

    var realm: String { "\(nginx.origin) (realm \"Vault Test\")" }
    var spacePrefix: String { "credential/\(nginx.origin)/Vault%20Test/" }

    @Test func loginWithRightCredentialsStoresThemAndFetchUsesThem() throws {
        try box.initVault()
        let result = try login(password: "correct horse")
        #expect(result.status == 0)
        #expect(result.stdoutText == "logged in to \(realm) as 'alice'\n")
        #expect(result.stderr == "")
        // Under credential/<space>/, apart from the user's own entries (issue 25 §4).
        #expect(try list() == "\(spacePrefix)password\n\(spacePrefix)username\ncredential/primary\n")
        #expect(try box.vault(["get", spacePrefix + "username"]).stdoutText == "alice")
        #expect(try box.vault(["get", "credential/primary"]).stdoutText == "\(nginx.origin)/Vault%20Test")
        #expect(nginx.accessLog() == ["401 - /private/", "200 alice /private/"])

        // fetch: the stored credential answers the challenge; the body exactly, nothing on stderr.
        let fetched = try fetch("/private/")
        #expect(fetched.status == 0)
        #expect(fetched.stdout == Data("secret area\n".utf8))
        #expect(fetched.stderr == "")
        #expect(nginx.accessLog().suffix(2) == ["401 - /private/", "200 alice /private/"])

        // A public page needs no credential; an extra header is accepted.
        let public_ = try fetch("/", ["--allow-insecure-http", "--header", "Accept: text/plain"])
        #expect(public_.status == 0)
        #expect(public_.stdoutText == "public\n")
        #expect(public_.stderr == "")
    }

    @Test func loginJSON() throws {
        try box.initVault()
        let result = try box.vault([
            "login", nginx.url("/private/"), "--username", "alice", "--password-file",
            try passwordFile("correct horse"), "--allow-insecure-http", "--json",
        ])
        #expect(result.status == 0)
        #expect(result.stdoutText == """
            {"origin":"\(nginx.origin)","realm":"Vault Test","stored":true,"url":"\(nginx.url("/private/"))","username":"alice"}

            """)
        #expect(result.stderr == "")
    }

    @Test func loginWithPasswordOnADescriptor() throws {
        try box.initVault()
        let result = try CLI.shell(
            "exec \"$VAULT\" login '\(nginx.url("/private/"))' --username alice --password-fd 3 --allow-insecure-http "
                + "--passphrase-file '\(box.passphraseFile)' 3<'\(try passwordFile("correct horse"))'",
            environment: box.environment)
        #expect(result.status == 0)
        #expect(result.stdoutText == "logged in to \(realm) as 'alice'\n")
        #expect(result.stderr == "")
    }

    @Test func loginWithWrongCredentialsExitsThreeAndStoresNothing() throws {
        try box.initVault()
        let result = try login(password: "wrong")
        #expect(result.status == 3)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "vault: credentials rejected: the server at \(realm) rejected the password for 'alice'\n")
        #expect(try list() == "")
        // The given credential is tried once: no second attempt without a prompt.
        #expect(nginx.accessLog() == ["401 - /private/", "401 alice /private/"])

        let unknown = try login(user: "mallory", password: "correct horse")
        #expect(unknown.status == 3)
        #expect(unknown.stderr == "vault: credentials rejected: the server at \(realm) rejected the password for 'mallory'\n")
        #expect(try list() == "")
    }

    @Test func loginWithoutAnyCredentialSourceFailsAtOnce() throws {
        try box.initVault()
        let result = try box.vault(["login", nginx.url("/private/"), "--allow-insecure-http"])
        #expect(result.status == 3)
        #expect(result.stderr == """
            vault: \(realm) asks for credentials: there is no terminal to ask on
            hint: pass --username NAME with --password-fd N or --password-file PATH, or run on a terminal

            """)
        #expect(try list() == "")
    }

    @Test func loginWithoutAVaultFailsBeforeAnyRequest() throws {
        let result = try login(password: "correct horse")
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == """
            vault: no vault at '\(box.vaultPath)'
            hint: create one with 'vault init', or pass --vault PATH

            """)
        #expect(nginx.accessLog() == [])
    }

    @Test func loginToAPageThatAsksNothingStoresNothing() throws {
        try box.initVault()
        let result = try login("/", password: "correct horse")
        #expect(result.status == 1)
        #expect(result.stderr == """
            vault: '\(nginx.url("/"))' did not ask for credentials (HTTP 200); no credential was stored
            hint: log in with the URL of a protected resource

            """)
        #expect(try list() == "")
    }

    @Test func plainHTTPIsRefusedWithoutTheOptIn() throws {
        try box.initVault()
        let url = nginx.url("/private/")
        let result = try box.vault([
            "login", url, "--username", "alice", "--password-file", try passwordFile("correct horse"),
        ])
        #expect(result.status == 1)
        #expect(result.stderr == """
            vault: refusing plain http to '\(url)'
            hint: use https, or pass --allow-insecure-http (loopback addresses only)

            """)
        let fetched = try fetch("/private/", [])
        #expect(fetched.status == 1)
        #expect(fetched.stdout.isEmpty)
        #expect(fetched.stderr == result.stderr)
        #expect(nginx.accessLog() == [])  // nothing was sent at all

        // Not loopback: refused even with the opt-in (nothing is resolved or sent).
        let remote = try box.vault(["fetch", "http://example.com/", "--allow-insecure-http"])
        #expect(remote.status == 1)
        #expect(remote.stderr == """
            vault: refusing plain http to 'http://example.com/'
            hint: use https (plain http is allowed only to loopback addresses, with --allow-insecure-http)

            """)
    }

    @Test func passwordChangedOnTheServerMakesFetchReportTheStaleCredential() throws {
        try box.initVault()
        #expect(try login(password: "correct horse").status == 0)
        try nginx.setPassword("new password", for: "alice")
        let before = nginx.accessLog().count

        let start = Date()
        let stale = try fetch("/private/")
        #expect(Date().timeIntervalSince(start) < 10)  // no prompt possible: fails at once, no hang
        #expect(stale.status == 3)
        #expect(stale.stdout.isEmpty)
        #expect(stale.stderr == """
            vault: stored credential rejected: the server at \(realm) rejected the stored password for 'alice'; it was removed from the vault and will not be sent again
            hint: to store a fresh one, run: vault login \(nginx.url("/private/"))

            """)
        #expect(try list() == "")  // erased, like git's `credential reject`

        // Not resent: the next fetch finds nothing stored and cannot ask.
        let again = try fetch("/private/")
        #expect(again.status == 3)
        #expect(again.stderr == """
            vault: \(realm) asks for credentials: no credential is stored and there is no terminal to ask on
            hint: to store one, run: vault login \(nginx.url("/private/"))

            """)
        #expect(Array(nginx.accessLog().dropFirst(before)) == [
            "401 - /private/", "401 alice /private/",  // the stale credential, once
            "401 - /private/",  // the next fetch: nothing sent
        ])

        // Logging in with the new password works again.
        #expect(try login(password: "new password").status == 0)
        #expect(try fetch("/private/").stdoutText == "secret area\n")
    }

    /// Issue 25 §4, the exact sequence: the first login on a fresh vault, then the user stores an entry of their
    /// own named `password` (and `username`). The server is sent the login's password, never the user's; when the
    /// server rejects the login's password, the login's credential is erased and the user's entries stay.
    @Test func theUsersOwnPasswordEntryIsNeverSentNorErased() throws {
        try box.initVault()
        #expect(try login(password: "correct horse").status == 0)
        #expect(try box.vault(["put", "password"], stdin: Data("my own password".utf8)).status == 0)
        #expect(try box.vault(["put", "username"], stdin: Data("mallory".utf8)).status == 0)

        let fetched = try fetch("/private/")
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(fetched.stdoutText == "secret area\n")  // nginx accepted: the login's password was sent
        #expect(nginx.accessLog().suffix(2) == ["401 - /private/", "200 alice /private/"])

        // The user's entry holds a password nginx would accept for alice: it must still not be the one sent.
        try nginx.setPassword("my own password", for: "alice")
        let stale = try fetch("/private/")
        #expect(stale.status == 3)
        #expect(stale.stderr.hasPrefix("vault: stored credential rejected: the server at \(realm) rejected the stored password for 'alice'; it was removed"))
        #expect(nginx.accessLog().suffix(2) == ["401 - /private/", "401 alice /private/"])
        #expect(try list() == "password\nusername\n")
        #expect(try box.vault(["get", "password"]).stdoutText == "my own password")
        #expect(try box.vault(["get", "username"]).stdoutText == "mallory")
    }

    /// A vault written before issue 25 (the login's credential in top-level `username`, `password` and
    /// `credential.space`) keeps working, and the next login moves the credential under `credential/`.
    @Test func anEarlierLayoutIsUsedThenMigratedByTheNextLogin() throws {
        try box.initVault()
        #expect(try box.vault(["put", "username"], stdin: Data("alice".utf8)).status == 0)
        #expect(try box.vault(["put", "password"], stdin: Data("correct horse".utf8)).status == 0)
        #expect(try box.vault(["put", "credential.space"], stdin: Data("\(nginx.origin)/Vault%20Test".utf8)).status == 0)
        #expect(try fetch("/private/").stdoutText == "secret area\n")
        #expect(try list() == "credential.space\npassword\nusername\n")  // reading writes nothing

        #expect(try login(password: "correct horse").status == 0)
        #expect(try list() == "\(spacePrefix)password\n\(spacePrefix)username\ncredential/primary\n")
        #expect(try box.vault(["put", "password"], stdin: Data("mine".utf8)).status == 0)
        #expect(try fetch("/private/").stdoutText == "secret area\n")
    }

    @Test func logoutForgetsTheOriginsCredential() throws {
        try box.initVault()
        try box.vault(["put", "other"], stdin: Data("keep me".utf8))
        #expect(try login(password: "correct horse").status == 0)
        let result = try box.vault(["logout", nginx.url("/anything")])
        #expect(result.status == 0)
        #expect(result.stdoutText == "logged out of \(realm)\n")
        #expect(result.stderr == "")
        #expect(try list() == "other\n")

        let fetched = try fetch("/private/")
        #expect(fetched.status == 3)
        #expect(fetched.stdout.isEmpty)

        let again = try box.vault(["logout", nginx.url("/")])
        #expect(again.status == 2)
        #expect(again.stdout.isEmpty)
        #expect(again.stderr == "vault: no credential for \(nginx.origin) in vault '\(box.vaultPath)'\n")
    }

    @Test func httpErrorsFailLikeCurlFail() throws {
        try box.initVault()
        let missing = try fetch("/missing")
        #expect(missing.status == 1)
        #expect(missing.stdout.isEmpty)
        #expect(missing.stderr == "vault: HTTP 404 (Not Found) from '\(nginx.url("/missing"))'\n")

        let boom = try fetch("/boom")
        #expect(boom.status == 1)
        #expect(boom.stdout.isEmpty)
        #expect(boom.stderr == "vault: HTTP 500 (Internal Server Error) from '\(nginx.url("/boom"))'\n")

        let json = try fetch("/boom", ["--allow-insecure-http", "--json"])
        #expect(json.status == 1)
        #expect(json.stderr == """
            {"error":{"code":"http_error","exit_code":1,"message":"HTTP 500 (Internal Server Error) from '\(nginx.url("/boom"))'"}}

            """)
    }

    @Test func serverDownIsAClearErrorNotAHang() throws {
        try box.initVault()
        let port = try freeTCPPort()  // nothing listens there
        let url = "http://127.0.0.1:\(port)/private/"
        let start = Date()
        let result = try box.vault(["fetch", url, "--allow-insecure-http", "--timeout", "5"])
        #expect(Date().timeIntervalSince(start) < 20)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == """
            vault: request to '\(url)' failed: connection refused
            hint: check the URL and that the server is running

            """)
    }

    @Test func authorizationNeverComesFromTheCommandLine() throws {
        try box.initVault()
        let result = try fetch("/private/", ["--allow-insecure-http", "--header", "Authorization: Basic eDp5"])
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix(
            "vault: --header Authorization: credentials never come from the command line; use 'vault login'\n"))
        #expect(nginx.accessLog() == [])

        let noUser = try box.vault(["login", nginx.url("/private/"), "--password-file", try passwordFile("x")])
        #expect(noUser.status == 64)
        #expect(noUser.stderr.hasPrefix("vault: --password-fd and --password-file need --username\n"))
    }

    /// `login` and `device register` share the credential options and their checks, all before anything is read
    /// or sent.
    @Test(arguments: [
        (["--username", "u", "--password-fd", "3", "--password-file", "/nonexistent"],
         "vault: --password-fd and --password-file cannot be used together\n"),
        (["--password-fd", "3"], "vault: --password-fd and --password-file need --username\n"),
        (["--username", "u", "--password-fd=-1"], "vault: --password-fd must be a file descriptor (0 or more)\n"),
        (["--username", "u", "--password-fd", "0", "--passphrase-fd", "0"],
         "vault: the passphrase and the password need different descriptors\n"),
        // A password typed into the username field is not repeated.
        (["--username", "typed-secret:x"],
         "vault: --username: invalid username: it contains ':' (it must be non-empty, without ':' or control characters)\n"),
    ])
    func credentialOptionsAreCheckedFirst(arguments: [String], message: String) throws {
        try box.initVault()
        let login = try CLI.run(["login", nginx.url("/private/"), "--allow-insecure-http"] + arguments, environment: box.environment)
        let register = try CLI.run(
            ["device", "register", "--server", "https://ms.example", "--app-id", "com.example.app"] + arguments,
            environment: box.environment)
        for result in [login, register] {
            #expect(result.status == 64)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.hasPrefix(message), "\(result.stderr)")
            #expect(!result.stderr.contains("typed-secret"))
        }
        #expect(nginx.accessLog() == [])
    }
}

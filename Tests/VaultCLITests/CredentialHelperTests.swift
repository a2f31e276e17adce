import Foundation
import Testing

/// `vault credential get|store|erase`, driven directly and by real git (`git credential approve/fill/reject`).
@Suite(.processTimeLimit) struct CredentialHelperTests {
    let box: Sandbox

    init() throws {
        box = try Sandbox()
    }

    /// Runs the helper with `request` on stdin.
    func helper(_ operation: String, _ request: String, passphrase: Bool = true) throws -> CLIResult {
        try box.vault(["credential", operation], stdin: Data(request.utf8), passphrase: passphrase)
    }

    func list() throws -> String {
        let result = try box.vault(["list"])
        #expect(result.status == 0)
        return result.stdoutText
    }

    /// git with its configuration in the sandbox only, no terminal prompt, and `vault credential` as its helper.
    func git(_ arguments: [String], stdin: String, helperInGlobalConfig: Bool = false) throws -> CLIResult {
        let helper = "!'\(CLI.vault)' credential --passphrase-file '\(box.passphraseFile)'"
        var environment = box.environment
        environment["HOME"] = box.directory
        environment["GIT_CONFIG_GLOBAL"] = box.directory + "/gitconfig"
        environment["GIT_CONFIG_NOSYSTEM"] = "1"
        environment["GIT_TERMINAL_PROMPT"] = "0"
        let prefix = helperInGlobalConfig ? [] : ["-c", "credential.helper=" + helper]
        if helperInGlobalConfig {
            let config = try CLI.exec(
                "/usr/bin/git", ["config", "--global", "credential.helper", helper], environment: environment)
            #expect(config.status == 0, "git config: \(config.stderr)")
        }
        return try CLI.exec("/usr/bin/git", prefix + arguments, stdin: Data(stdin.utf8), environment: environment)
    }

    @Test(arguments: [false, true]) func gitApproveFillRejectRoundTrip(helperInGlobalConfig: Bool) throws {
        try box.initVault()
        let credential = "protocol=https\nhost=git.example.com\nusername=bob\npassword=s3cret = with=signs\n\n"

        let approve = try git(["credential", "approve"], stdin: credential, helperInGlobalConfig: helperInGlobalConfig)
        #expect(approve.status == 0)
        #expect(approve.stdout.isEmpty)
        #expect(approve.stderr == "")
        #expect(try list() == """
            credential/https://git.example.com:443/git/password
            credential/https://git.example.com:443/git/username

            """)

        let fill = try git(["credential", "fill"], stdin: "protocol=https\nhost=git.example.com\n\n", helperInGlobalConfig: helperInGlobalConfig)
        #expect(fill.status == 0)
        #expect(fill.stdoutText == "protocol=https\nhost=git.example.com\nusername=bob\npassword=s3cret = with=signs\n")
        #expect(fill.stderr == "")

        // Another host, or another port, is another credential.
        let other = try git(["credential", "fill"], stdin: "protocol=https\nhost=git.example.com:8443\n\n", helperInGlobalConfig: helperInGlobalConfig)
        #expect(other.status == 128)
        #expect(!other.stdoutText.contains("password"))

        let reject = try git(["credential", "reject"], stdin: credential, helperInGlobalConfig: helperInGlobalConfig)
        #expect(reject.status == 0)
        #expect(reject.stderr == "")
        #expect(try list() == "")

        // After reject, fill gets nothing from the helper; with no terminal prompt git gives up.
        let after = try git(["credential", "fill"], stdin: "protocol=https\nhost=git.example.com\n\n", helperInGlobalConfig: helperInGlobalConfig)
        #expect(after.status == 128)
        #expect(after.stdout.isEmpty)
        #expect(after.stderr == "fatal: could not read Username for 'https://git.example.com': terminal prompts disabled\n")
    }

    @Test func getPrintsTheStoredCredentialWithItsExpiry() throws {
        try box.initVault()
        let store = try helper("store", """
            protocol=https
            host=git.example.com:8443
            path=org/repo.git
            username=bob
            password=pw
            password_expiry_utc=1900000000
            wwwauth[]=Basic realm="x"
            capability[]=authtype
            unknown=ignored

            protocol=ignored after the blank line

            """)
        #expect(store.status == 0)
        #expect(store.stdout.isEmpty)
        #expect(store.stderr == "")
        #expect(try list() == """
            credential/https://git.example.com:8443/git%2Forg%2Frepo.git/password
            credential/https://git.example.com:8443/git%2Forg%2Frepo.git/password_expiry_utc
            credential/https://git.example.com:8443/git%2Forg%2Frepo.git/username

            """)

        let get = try helper("get", "protocol=https\nhost=git.example.com:8443\npath=org/repo.git\n\n")
        #expect(get.status == 0)
        #expect(get.stdoutText == "username=bob\npassword=pw\npassword_expiry_utc=1900000000\n")
        #expect(get.stderr == "")

        // A request for another username, or without the path, matches nothing: nothing printed, exit 0.
        for request in [
            "protocol=https\nhost=git.example.com:8443\npath=org/repo.git\nusername=eve\n\n",
            "protocol=https\nhost=git.example.com:8443\n",
            "protocol=http\nhost=git.example.com:8443\npath=org/repo.git\n",
        ] {
            let none = try helper("get", request)
            #expect(none.status == 0)
            #expect(none.stdout.isEmpty)
            #expect(none.stderr == "")
        }

        // Storing again without an expiry drops the old one.
        #expect(try helper("store", "protocol=https\nhost=git.example.com:8443\npath=org/repo.git\nusername=bob\npassword=pw2\n").status == 0)
        #expect(try helper("get", "protocol=https\nhost=git.example.com:8443\npath=org/repo.git\n").stdoutText
            == "username=bob\npassword=pw2\n")
    }

    /// git calls `store` after every authenticated request: storing what is already stored writes nothing (the
    /// file keeps its bytes and inode), while a changed password or expiry is written.
    @Test func storingTheSameCredentialAgainWritesNothing() throws {
        try box.initVault()
        let request = "protocol=https\nhost=git.example.com\nusername=bob\npassword=first\n\n"
        #expect(try helper("store", request).status == 0)
        var before = stat()
        #expect(stat(box.vaultPath, &before) == 0)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        #expect(try helper("store", request).status == 0)
        var after = stat()
        #expect(stat(box.vaultPath, &after) == 0)
        #expect(after.st_ino == before.st_ino, "the same credential replaced the file")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == bytes)
        let changed = request.replacingOccurrences(of: "password=first", with: "password=second")
        #expect(try helper("store", changed).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) != bytes)
        let expiring = changed.replacingOccurrences(of: "\n\n", with: "\npassword_expiry_utc=4102444800\n\n")
        let beforeExpiry = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        #expect(try helper("store", expiring).status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) != beforeExpiry, "a new expiry was not written")
    }

    @Test func eraseRemovesOnlyAMatchingCredential() throws {
        try box.initVault()
        #expect(try helper("store", "protocol=https\nhost=h.example\nusername=bob\npassword=pw\n").status == 0)

        for request in [
            "protocol=https\nhost=h.example\nusername=eve\n",  // another user
            "protocol=https\nhost=h.example\nusername=bob\npassword=older\n",  // another (older) password
            "protocol=https\nhost=other.example\n",  // another host
        ] {
            let erase = try helper("erase", request)
            #expect(erase.status == 0)
            #expect(erase.stdout.isEmpty)
            #expect(erase.stderr == "")
            #expect(try list() == "credential/https://h.example:443/git/password\ncredential/https://h.example:443/git/username\n")
        }

        #expect(try helper("erase", "protocol=https\nhost=h.example\nusername=bob\n").status == 0)
        #expect(try list() == "")
    }

    @Test func logoutAndTheHelperAgree() throws {
        try box.initVault()
        try box.vault(["put", "other"], stdin: Data("keep".utf8))
        #expect(try helper("store", "protocol=https\nhost=h.example\nusername=bob\npassword=pw\npassword_expiry_utc=1900000000\n").status == 0)
        let logout = try box.vault(["logout", "https://h.example/some/repo.git"])
        #expect(logout.status == 0)
        #expect(logout.stdoutText == "logged out of https://h.example:443 (realm \"git\")\n")
        #expect(try list() == "other\n")
        #expect(try helper("get", "protocol=https\nhost=h.example\n").stdout.isEmpty)
    }

    @Test func unsupportedProtocolsAndOperationsAreIgnored() throws {
        try box.initVault()
        let smtp = try helper("store", "protocol=smtp\nhost=mail.example\nusername=bob\npassword=pw\n")
        #expect(smtp.status == 0)
        #expect(smtp.stderr == "vault: credential: protocol 'smtp' is not supported (only http and https); not stored\n")
        #expect(try list() == "")

        let unknown = try helper("frobnicate", "protocol=https\nhost=h.example\n")
        #expect(unknown.status == 0)
        #expect(unknown.stdout.isEmpty)
        #expect(unknown.stderr == "")
    }

    @Test func withoutAVaultGetAndEraseAreQuietAndStoreFails() throws {
        let get = try helper("get", "protocol=https\nhost=h.example\n", passphrase: false)
        #expect(get.status == 0)
        #expect(get.stdout.isEmpty)
        #expect(get.stderr == "")

        let store = try helper("store", "protocol=https\nhost=h.example\nusername=bob\npassword=pw\n")
        #expect(store.status == 1)
        #expect(store.stderr == """
            vault: no vault at '\(box.vaultPath)'
            hint: create one with 'vault init', or pass --vault PATH

            """)
    }

    @Test func thePassphraseNeverComesFromStdin() throws {
        try box.initVault()
        // No --passphrase-file, no VAULT_PASSPHRASE, no terminal: fails at once, stdin is git's request only.
        let get = try helper("get", "protocol=https\nhost=h.example\n\ncorrect horse battery staple\n", passphrase: false)
        #expect(get.status == 1)
        #expect(get.stdout.isEmpty)
        #expect(get.stderr == """
            vault: no passphrase: there is no terminal to ask on
            hint: run 'vault unlock' once, or pass --passphrase-fd N or --passphrase-file PATH, or set VAULT_PASSPHRASE

            """)

        let fd0 = try box.vault(["credential", "get", "--passphrase-fd", "0"], passphrase: false)
        #expect(fd0.status == 64)
        #expect(fd0.stderr.hasPrefix("vault: stdin carries git's request: use another --passphrase-fd\n"))

        // VAULT_PASSPHRASE works as for every verb.
        let withEnv = try box.vault(
            ["credential", "get"], stdin: Data("protocol=https\nhost=h.example\n".utf8), passphrase: false,
            extraEnvironment: ["VAULT_PASSPHRASE": "correct horse battery staple"])
        #expect(withEnv.status == 0)
        #expect(withEnv.stdout.isEmpty)
        #expect(withEnv.stderr == "")
    }
}

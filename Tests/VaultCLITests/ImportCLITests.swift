import Foundation
import Testing
import VaultCore
import VaultTestSupport

/// Issue 21: `vault import FORMAT SOURCE`: fixtures made at test time by the real tools (pass with pass-otp and a
/// throwaway gpg key, keepassxc-cli), hand-written Bitwarden, 1Password and CSV samples; every bad path with its
/// exit code and message, and that nothing was written.
@Suite(.processTimeLimit) struct ImportCLITests {
    static let hasPass = findTool("pass") != nil && findTool("gpg") != nil
        && FileManager.default.fileExists(atPath: "/usr/lib/password-store/extensions/otp.bash")
    static let hasKeePassXC = findTool("keepassxc-cli") != nil
    static let hasOathtool = findTool("oathtool") != nil

    func json(_ result: CLIResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.stdoutText) \(result.stderr)")
    }

    /// The vault file's bytes (to show that nothing was written).
    func fileBytes(_ box: Sandbox) -> Data? { FileManager.default.contents(atPath: box.vaultPath) }

    /// `vault show NAME --reveal --json`'s fields as name → value.
    func fields(_ box: Sandbox, _ name: String) throws -> [String: String] {
        let shown = try json(box.vault(["show", name, "--reveal", "--json"]))
        var out: [String: String] = [:]
        for case let field as [String: Any] in shown["fields"] as? [Any] ?? [] { out[field["name"] as! String] = field["value"] as? String }
        return out
    }

    func write(_ text: String, _ path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// The code oathtool gives for `secret` (base32) at `time`.
    func oathtool(_ secret: String, at time: Int, digits: Int = 6) throws -> String {
        let result = try CLI.exec(findTool("oathtool")!, ["--totp", "-b", "-d", String(digits), "-N", "@\(time)", secret])
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: CSV, the report, twice, dry run, duplicates, prefix

    @Test func csvTwiceAddsNothingDryRunWritesNothingAndDuplicatesGetNumbers() throws {
        let box = try Sandbox()
        try box.initVault()
        let csv = box.directory + "/chrome.csv"
        try write("\u{FEFF}name,url,username,password,note\r\ngithub.com,https://github.com,alice,Pw-1111,\"two\r\nlines\"\r\ngithub.com,https://github.com,bob,Pw-2222,\r\nexample.org,https://example.org,carol,Pw-3333,\r\n", csv)
        let before = fileBytes(box)
        let dry = try box.vault(["import", "csv", csv, "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdoutText == """
            would import '\(csv)' into '\(box.vaultPath)': 3 added, 0 updated, 0 unchanged, 0 kept, 0 skipped (dry run: nothing written)
              added: github.com
              added: github.com (2)
              added: example.org

            """)
        #expect(fileBytes(box) == before)

        let first = try box.vault(["import", "csv", csv])
        #expect(first.status == 0 && first.stderr.isEmpty, "\(first.stderr)")
        #expect(first.stdoutText.hasPrefix("imported '\(csv)' into '\(box.vaultPath)': 3 added, 0 updated, 0 unchanged, 0 kept, 0 skipped\n"))
        #expect(try fields(box, "github.com") == ["password": "Pw-1111", "username": "alice", "url": "https://github.com", "notes": "two\r\nlines"])
        #expect(try fields(box, "github.com (2)")["username"] == "bob")
        let shown = try json(box.vault(["show", "github.com", "--json"]))
        #expect((shown["fields"] as? [[String: Any]])?.map { $0["secret"] as? Bool } == [true, false, false, false])

        let written = fileBytes(box)
        let again = try box.vault(["import", "csv", csv, "--json"])
        #expect(again.status == 0)
        let report = try json(again)
        #expect(report["added"] as? [String] == [] && report["updated"] as? [String] == [])
        #expect(report["unchanged"] as? [String] == ["github.com", "github.com (2)", "example.org"])
        #expect(report["written"] as? Bool == false && report["dry_run"] as? Bool == false && report["format"] as? String == "csv")
        #expect(fileBytes(box) == written)  // nothing written at all

        // A changed password: updated, the old one in the history; a field the vault added stays.
        #expect(try box.vault(["put", "example.org", "--field", "pin"], stdin: Data("1234".utf8)).status == 0)
        try write("name,url,username,password\nexample.org,https://example.org,carol,Pw-4444\n", csv)
        let update = try box.vault(["import", "csv", csv])
        #expect(update.stdoutText.hasPrefix("imported '\(csv)' into '\(box.vaultPath)': 0 added, 1 updated, 0 unchanged, 0 kept, 0 skipped\n  updated: example.org\n"))
        #expect(try fields(box, "example.org") == ["password": "Pw-4444", "username": "carol", "url": "https://example.org", "pin": "1234"])
        #expect(try box.vault(["get", "example.org", "--version", "1"]).stdoutText == "Pw-3333")

        // --prefix puts everything under a folder.
        let prefixed = try box.vault(["import", "csv", csv, "--prefix", "chrome"])
        #expect(prefixed.stdoutText.contains("  added: chrome/example.org\n"))
        for result in [dry, first, again, update, prefixed] {
            for secret in ["Pw-1111", "Pw-2222", "Pw-3333", "Pw-4444"] { #expect(!result.stdoutText.contains(secret) && !result.stderr.contains(secret)) }
        }
    }

    // MARK: Bad paths: exit codes, messages, nothing written

    @Test func badSourcesNameTheLineOrItemExitOneAndWriteNothing() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "keep"], stdin: Data("v".utf8)).status == 0)
        let before = fileBytes(box)
        let path = box.directory + "/in"
        func refused(_ format: String, _ content: String?, _ expected: String, code: String, status: Int32 = 1, passphrase: Bool = true) throws {
            if let content { try write(content, path) }
            let result = try box.vault(["import", format, path], passphrase: passphrase)
            #expect(result.status == status, "\(format): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr == expected, "\(format)")
            let asJSON = try box.vault(["import", format, path, "--json"], passphrase: passphrase)
            #expect(asJSON.stderr.contains("\"code\":\"\(code)\""), "\(asJSON.stderr)")
            #expect(!result.stderr.contains("Sup3r") && !asJSON.stderr.contains("Sup3r"))
            #expect(fileBytes(box) == before)
        }
        // Read before the vault is opened: no passphrase needed to be told the file is bad.
        try refused("csv", "name,url,username,password\nx,https://x,alice,\"Sup3r\n", """
            vault: cannot import '\(path)': line 2: field 4 opens a quote that never closes

            """, code: "malformed_input", passphrase: false)
        try refused("csv", "name,url,username,password\nx,https://x,Sup3r\n", """
            vault: cannot import '\(path)': line 2: 3 fields where the header has 4

            """, code: "malformed_input")
        try refused("csv", "site,login,Sup3r\n", """
            vault: cannot import '\(path)': line 1 is not a CSV header this import knows (3 columns)
            hint: vault import csv reads the exports of Chrome (name,url,username,password[,note]), Firefox (url,username,password,httpRealm,…), Bitwarden (folder,favorite,type,name,notes,fields,…,login_uri,login_username,login_password,login_totp), 1Password (Title,Url,Username,Password,OTPAuth,…) or KeePassXC (Group,Title,Username,Password,URL,Notes,TOTP,…)

            """, code: "unsupported_input")
        try refused("bitwarden-json", #"{"encrypted": true, "passwordProtected": true, "salt": "c2FsdA==", "kdfType": 0, "kdfIterations": 600000, "data": "2.Sup3r"}"#, """
            vault: cannot import '\(path)': an encrypted Bitwarden export ("encrypted": true): its items are sealed with your account or export password
            hint: export again choosing the format '.json' (not '.json (Encrypted)'), import it, then delete that file

            """, code: "unsupported_input")
        try refused("bitwarden-json", #"{"items": [{"type": 1, "name": "ok", "login": {"password": "Sup3r"}}, {"type": 1, "name": "GitHub"}]}"#, """
            vault: cannot import '\(path)': item 2 ('GitHub'): a type-1 item without its "login" object

            """, code: "malformed_input")
        try refused("json", "{\"format\": \"vault-export\", \"version\": 1, \"entries\": [{\"name\": \"a\", \"fields\": [{\"name\": \"password\", \"value\": \"Sup3r\", \"secret\": true, \"encoding\": \"rot13\"}]}]}", """
            vault: cannot import '\(path)': entry 1 ('a'), field 1 ('password'): "encoding" is utf8 or base64

            """, code: "malformed_input")
        try refused("json", "{\"format\": \"vault-export\",\n \"Sup3r\"}", """
            vault: cannot import '\(path)': the file: not valid JSON (line 2)

            """, code: "malformed_input")
        try refused("keepass-xml", "<KeePassFile>\n<Root><Group><Name>r</Name>\n<Entry><String><Key>Password</Key><Value>Sup3r</Value></String>\n</Group></Root></KeePassFile>", """
            vault: cannot import '\(path)': line 4: not well-formed XML

            """, code: "malformed_input")
        try refused("1pux", "Sup3r, not a zip", """
            vault: cannot import '\(path)': the file: not a zip archive (a .1pux export is one)

            """, code: "malformed_input")
        // Larger than the bound: refused from its size, before it is read.
        try write("", path)
        #expect(truncate(path, 65 << 20) == 0)
        try refused("csv", nil, """
            vault: cannot import '\(path)': the file (65 MiB) is larger than 64 MiB
            hint: split the export (by folder or group) and import the parts one after the other

            """, code: "input_too_large")
        try refused("pass", nil, """
            vault: cannot import '\(path)': '\(path)' is not a directory
            hint: give the store's directory, e.g. ~/.password-store

            """, code: "unsupported_input")
        let missing = try box.vault(["import", "csv", box.directory + "/nothing.csv"])
        #expect(missing.status == 1 && missing.stderr == "vault: opening '\(box.directory)/nothing.csv' failed: No such file or directory\n", "\(missing.stderr)")
        let format = try box.vault(["import", "lastpass", path])
        #expect(format.status == 64 && format.stderr.contains("lastpass"), "\(format.stderr)")
        // Only pass has a default source (walkthrough finding 12): the others need their file.
        let noFile = try box.vault(["import", "json"])
        #expect(noFile.status == 64 && noFile.stderr.contains("'vault import json' needs the export file: vault import json FILE"), "\(noFile.stderr)")
        // pass with no directory and no store where pass looks: said so, with where it looked.
        let home = box.directory + "/emptyhome"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let noStore = try box.vault(["import", "pass"], extraEnvironment: ["HOME": home])
        #expect(noStore.status == 1 && noStore.stderr == "vault: no pass store at '\(home)/.password-store' ($PASSWORD_STORE_DIR, else ~/.password-store): name its directory: vault import pass DIR\n", "\(noStore.stderr)")
        let noVariableStore = try box.vault(["import", "pass"], extraEnvironment: ["HOME": home, "PASSWORD_STORE_DIR": home + "/elsewhere"])
        #expect(noVariableStore.status == 1 && noVariableStore.stderr.hasPrefix("vault: no pass store at '\(home)/elsewhere' "), "\(noVariableStore.stderr)")
        #expect(fileBytes(box) == before)

        // A version-1 vault has no fields.
        let older = box.directory + "/vaults/old.vault"
        #expect(try box.vault(["init", "--vault", older, "--format", "1"]).status == 0)
        try write("name,url,username,password\nx,https://x,u,p\n", path)
        let one = try box.vault(["import", "csv", path, "--vault", older])
        #expect(one.status == 64 && one.stderr.contains("format version 2"), "\(one.stderr)")
    }

    // MARK: json: lossless round trip (with export)

    @Test func jsonExportImportsBackWithoutLoss() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "Web/GitHub"], stdin: Data("first".utf8)).status == 0)
        #expect(try box.vault(["put", "Web/GitHub"], stdin: Data("second\n\u{1}".utf8)).status == 0)
        #expect(try box.vault(["put", "Web/GitHub", "--field", "username"], stdin: Data("alice".utf8)).status == 0)
        #expect(try box.vault(["put", "Web/GitHub", "--field", "pin", "--secret"], stdin: Data("1234".utf8)).status == 0)
        #expect(try box.vault(["put", "Web/GitHub", "--field", "otp"], stdin: Data("JBSWY3DPEHPK3PXP".utf8)).status == 0)
        #expect(try box.vault(["put", "binary"], stdin: Data([0xFF, 0x00, 0xC3])).status == 0)
        let file = box.directory + "/export.json"
        let exported = try box.vault(["export", "--format", "json", "--output", file, "--yes"])
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stdoutText == "exported 2 entries of '\(box.vaultPath)' to '\(file)' (json)\n")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let other = box.directory + "/vaults/other.vault"
        #expect(try box.vault(["init", "--vault", other]).status == 0)
        let imported = try box.vault(["import", "json", file, "--vault", other])
        #expect(imported.status == 0 && imported.stdoutText.hasPrefix("imported '\(file)' into '\(other)': 2 added, 0 updated, 0 unchanged, 0 kept, 0 skipped\n"), "\(imported.stderr)")
        for name in ["Web/GitHub", "binary"] {
            var a = try json(box.vault(["history", name, "--reveal", "--json"]))
            var b = try json(box.vault(["history", name, "--reveal", "--json", "--vault", other]))
            // New ids and replicas; everything else the same: fields, order, flags, values, versions, times.
            for key in ["id"] { a[key] = nil; b[key] = nil }
            func strip(_ object: [String: Any]) -> [[String: Any]] {
                (object["versions"] as! [[String: Any]]).map { var v = $0; v["replica"] = nil; return v }
            }
            #expect(NSDictionary(dictionary: ["v": strip(a)]) == NSDictionary(dictionary: ["v": strip(b)]), "\(name)")
            let showA = try json(box.vault(["show", name, "--json"])), showB = try json(box.vault(["show", name, "--json", "--vault", other]))
            #expect(showA["created"] as? String == showB["created"] as? String && showA["modified"] as? String == showB["modified"] as? String)
        }
        #expect(try box.vault(["get", "binary", "--vault", other]).stdout == Data([0xFF, 0x00, 0xC3]))
        // And once more: unchanged.
        let again = try json(box.vault(["import", "json", file, "--vault", other, "--json"]))
        #expect(again["unchanged"] as? [String] == ["Web/GitHub", "binary"])
    }

    // MARK: pass, with pass-otp and a throwaway gpg key

    @Test(.enabled(if: hasPass, "needs pass, pass-extension-otp and gpg: scripts/install-deps --test"))
    func aRealPassStoreWithOTPAndTheCodesOathtoolGives() throws {
        let box = try Sandbox()
        try box.initVault()
        let gnupg = box.directory + "/gnupg", store = box.directory + "/store"
        try FileManager.default.createDirectory(atPath: gnupg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let env = ["GNUPGHOME": gnupg, "PASSWORD_STORE_DIR": store]
        defer { _ = try? CLI.exec(findTool("gpgconf")!, ["--kill", "all"], environment: env) }
        let key = try CLI.exec(findTool("gpg")!, ["--batch", "--passphrase", "", "--quick-gen-key", "Vault Test <vault-test@example.invalid>", "default", "default", "never"], environment: env)
        try #require(key.status == 0, "\(key.stderr)")
        let pass = findTool("pass")!
        #expect(try CLI.exec(pass, ["init", "vault-test@example.invalid"], environment: env).status == 0)
        #expect(try CLI.exec(pass, ["insert", "-m", "web/github"], stdin: Data("Gh-Secret-1\nlogin: alice\nurl: https://github.com\npin: 1234\nSome note\nmore note\n".utf8), environment: env).status == 0)
        let uri = "otpauth://totp/GitHub:alice?secret=JBSWY3DPEHPK3PXP&issuer=GitHub"
        let append = try CLI.exec(pass, ["otp", "append", "web/github"], stdin: Data((uri + "\n").utf8), environment: env)
        #expect(append.status == 0, "\(append.stderr)")
        let insert = try CLI.exec(pass, ["otp", "insert", "totp-only"], stdin: Data("otpauth://totp/Only?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&digits=8\n".utf8), environment: env)
        #expect(insert.status == 0, "\(insert.stderr)")
        #expect(try CLI.exec(pass, ["insert", "-e", "mail/work"], stdin: Data("Mail-Secret\n".utf8), environment: env).status == 0)
        // pass's own view of the store, as a check of the fixture.
        #expect(try CLI.exec(pass, ["show", "web/github"], environment: env).stdoutText.contains(uri))

        let result = try box.vault(["import", "pass", store], extraEnvironment: env)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutText == """
            imported '\(store)' into '\(box.vaultPath)': 3 added, 0 updated, 0 unchanged, 0 kept, 0 skipped
              added: mail/work
              added: totp-only
              added: web/github

            """)
        #expect(try fields(box, "web/github") == [
            "password": "Gh-Secret-1", "username": "alice", "url": "https://github.com", "pin": "1234", "otp": uri, "notes": "Some note\nmore note",
        ])
        #expect(try fields(box, "totp-only").keys.sorted() == ["otp"])
        #expect(try box.vault(["get", "mail/work"]).stdoutText == "Mail-Secret")
        for text in [result.stdoutText, result.stderr] { #expect(!text.contains("Gh-Secret") && !text.contains("JBSWY3DP")) }
        // The imported TOTP secrets give oathtool's codes.
        if Self.hasOathtool {
            for time in [59, 1_111_111_109, 1_764_000_015] {
                #expect(try box.vault(["otp", "web/github", "--at", String(time)]).stdoutText == (try oathtool("JBSWY3DPEHPK3PXP", at: time)))
                #expect(try box.vault(["otp", "totp-only", "--at", String(time)]).stdoutText == (try oathtool("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", at: time, digits: 8)))
            }
        }
        // Twice: unchanged.
        #expect(try box.vault(["import", "pass", store], extraEnvironment: env).stdoutText.hasPrefix("imported '\(store)' into '\(box.vaultPath)': 0 added, 0 updated, 3 unchanged, 0 kept, 0 skipped\n"))
        // No directory named: $PASSWORD_STORE_DIR, else ~/.password-store, as pass finds its store.
        let byVariable = try box.vault(["import", "pass"], extraEnvironment: env)
        #expect(byVariable.stdoutText.hasPrefix("imported '\(store)' into '\(box.vaultPath)': 0 added, 0 updated, 3 unchanged, 0 kept, 0 skipped\n"), "\(byVariable.stdoutText) \(byVariable.stderr)")
        let home = box.directory + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: store, toPath: home + "/.password-store")
        let byHome = try box.vault(["import", "pass"], extraEnvironment: ["GNUPGHOME": gnupg, "HOME": home, "PASSWORD_STORE_DIR": ""])
        #expect(byHome.stdoutText.hasPrefix("imported '\(home)/.password-store' into '\(box.vaultPath)': 0 added, 0 updated, 3 unchanged, 0 kept, 0 skipped\n"), "\(byHome.stdoutText) \(byHome.stderr)")

        // A file encrypted to a key this gpg does not hold: the import stops, names the file, writes nothing.
        let before = fileBytes(box)
        let otherHome = box.directory + "/othergnupg"
        try FileManager.default.createDirectory(atPath: otherHome, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let otherEnv = ["GNUPGHOME": otherHome]
        defer { _ = try? CLI.exec(findTool("gpgconf")!, ["--kill", "all"], environment: otherEnv) }
        #expect(try CLI.exec(findTool("gpg")!, ["--batch", "--passphrase", "", "--quick-gen-key", "Other <other@example.invalid>", "default", "default", "never"], environment: otherEnv).status == 0)
        let sealed = try CLI.exec(findTool("gpg")!, ["--batch", "--yes", "--encrypt", "-r", "other@example.invalid", "-o", store + "/web/zzz-foreign.gpg"], stdin: Data("Foreign-Secret\n".utf8), environment: otherEnv)
        #expect(sealed.status == 0, "\(sealed.stderr)")
        try write("pw\n", store + "/web/new-one.txt")  // not a .gpg file: not an entry
        let failed = try box.vault(["import", "pass", store], extraEnvironment: env)
        #expect(failed.status == 1)
        #expect(failed.stderr.hasPrefix("vault: cannot import '\(store)': cannot decrypt 'web/zzz-foreign.gpg': gpg: "), "\(failed.stderr)")
        #expect(failed.stderr.hasSuffix("hint: check that 'gpg --decrypt' opens it with your key (gpg-agent, pinentry), as 'pass show' does\n"))
        #expect(!failed.stderr.contains("Foreign-Secret") && failed.stdout.isEmpty)
        #expect(fileBytes(box) == before)
    }

    // MARK: KeePassXC: a real database, exported by keepassxc-cli

    @Test(.enabled(if: hasKeePassXC, "needs keepassxc-cli: scripts/install-deps --test"))
    func aKeePassXCDatabaseWithGroupsHistoryAndTOTP() throws {
        let box = try Sandbox()
        try box.initVault()
        let db = box.directory + "/db.kdbx"
        let kp = keePassXC(findTool("keepassxc-cli")!)
        // A TOTP cannot be set with keepassxc-cli add: make the database by importing a small XML with one, then
        // add and edit entries with keepassxc-cli itself (the edit makes a history item).
        let seed = box.directory + "/seed.xml"
        try write("""
            <?xml version="1.0" encoding="UTF-8"?>
            <KeePassFile><Meta><Generator>test</Generator></Meta><Root><Group><UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID><Name>Root</Name>
            <Entry><UUID>AAAAAAAAAAAAAAAAAAAAAg==</UUID>
            <String><Key>Title</Key><Value>Bank</Value></String><String><Key>Password</Key><Value ProtectInMemory="True">Bank-Secret</Value></String>
            <String><Key>otp</Key><Value ProtectInMemory="True">otpauth://totp/Bank:me?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&amp;period=30&amp;digits=6&amp;issuer=Bank</Value></String>
            </Entry></Group></Root></KeePassFile>
            """, seed)
        _ = try kp(["import", "-p", seed, db], "dbpass\ndbpass\n")
        _ = try kp(["mkdir", db, "Web"], "dbpass\n")
        _ = try kp(["add", "-p", "-u", "alice", "--url", "https://github.com", "--notes", "line1\nline2", db, "Web/GitHub"], "dbpass\nKp-Old-1\n")
        _ = try kp(["edit", "-p", db, "Web/GitHub"], "dbpass\nKp-New-2\n")
        let export = try kp(["export", "-f", "xml", db], "dbpass\n")
        let xml = box.directory + "/db.xml"
        try export.stdout.write(to: URL(fileURLWithPath: xml))

        let result = try box.vault(["import", "keepass-xml", xml])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutText == "imported '\(xml)' into '\(box.vaultPath)': 2 added, 0 updated, 0 unchanged, 0 kept, 0 skipped\n  added: Bank\n  added: Web/GitHub\n")
        #expect(try fields(box, "Web/GitHub") == ["password": "Kp-New-2", "username": "alice", "url": "https://github.com", "notes": "line1\nline2"])
        #expect(try box.vault(["get", "Web/GitHub", "--version", "1"]).stdoutText == "Kp-Old-1")
        #expect(try fields(box, "Bank")["otp"]?.hasPrefix("otpauth://totp/Bank:me?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ") == true)
        if Self.hasOathtool {
            for time in [59, 1_234_567_890] {
                #expect(try box.vault(["otp", "Bank", "--at", String(time)]).stdoutText == (try oathtool("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", at: time)))
            }
        }
        #expect(try box.vault(["import", "keepass-xml", xml]).stdoutText.hasPrefix("imported '\(xml)' into '\(box.vaultPath)': 0 added, 0 updated, 2 unchanged, 0 kept, 0 skipped\n"))
        // KeePassXC's CSV export of the same database.
        let csv = box.directory + "/db.csv"
        try (try kp(["export", "-f", "csv", db], "dbpass\n")).stdout.write(to: URL(fileURLWithPath: csv))
        let fromCSV = try box.vault(["import", "csv", csv, "--prefix", "csv"])
        #expect(fromCSV.status == 0 && fromCSV.stdoutText.contains("  added: csv/Web/GitHub\n"), "\(fromCSV.stdoutText) \(fromCSV.stderr)")
        #expect(try fields(box, "csv/Web/GitHub")["password"] == "Kp-New-2")
    }

    // MARK: Bitwarden and 1Password

    @Test func bitwardenAndOnePasswordExports() throws {
        let box = try Sandbox()
        try box.initVault()
        let bitwarden = box.directory + "/bitwarden.json"
        try write("""
            {"encrypted": false, "folders": [{"id": "f1", "name": "Work"}],
             "items": [
              {"id": "1", "folderId": "f1", "type": 1, "name": "GitHub", "notes": null, "favorite": false,
               "fields": [{"name": "pin", "value": "1234", "type": 1, "linkedId": null}],
               "login": {"uris": [{"match": null, "uri": "https://github.com"}], "username": "alice", "password": "Bw-Secret", "totp": "JBSWY3DPEHPK3PXP"},
               "passwordHistory": [{"lastUsedDate": "2024-01-01T00:00:00.000Z", "password": "Bw-Older"}],
               "revisionDate": "2024-07-01T10:00:00.000Z", "creationDate": "2023-01-01T00:00:00.000Z", "deletedDate": null},
              {"id": "2", "folderId": null, "type": 3, "name": "Visa", "card": {"cardholderName": "Alice", "number": "4111111111111111", "code": "123", "brand": "Visa", "expMonth": "7", "expYear": "2030"}},
              {"id": "3", "folderId": null, "type": 1, "name": "Gone", "login": {"password": "x"}, "deletedDate": "2024-01-01T00:00:00.000Z"}
             ]}
            """, bitwarden)
        let result = try box.vault(["import", "bitwarden-json", bitwarden])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutText == """
            imported '\(bitwarden)' into '\(box.vaultPath)': 2 added, 0 updated, 0 unchanged, 0 kept, 1 skipped
              added: Work/GitHub
              added: Visa
              skipped: item 3 ('Gone'): in Bitwarden's trash

            """)
        #expect(try fields(box, "Work/GitHub") == ["password": "Bw-Secret", "username": "alice", "url": "https://github.com", "otp": "JBSWY3DPEHPK3PXP", "pin": "1234"])
        #expect(try box.vault(["get", "Work/GitHub", "--version", "1"]).stdoutText == "Bw-Older")
        let shown = try json(box.vault(["show", "Work/GitHub", "--json"]))
        #expect(shown["created"] as? String == "2023-01-01T00:00:00.000Z" && shown["modified"] as? String == "2024-07-01T10:00:00.000Z")
        if Self.hasOathtool {
            #expect(try box.vault(["otp", "Work/GitHub", "--at", "59"]).stdoutText == (try oathtool("JBSWY3DPEHPK3PXP", at: 59)))
        }

        // 1PUX: a zip made by Python's zipfile, with an attachment.
        let pux = box.directory + "/export.1pux"
        let data = #"{"accounts": [{"attrs": {"name": "Alice"}, "vaults": [{"attrs": {"name": "Personal"}, "items": [{"uuid": "u1", "createdAt": 1600000000, "updatedAt": 1700000000, "state": "active", "categoryUuid": "001", "overview": {"title": "GitLab", "url": "https://gitlab.com"}, "details": {"loginFields": [{"value": "bob", "designation": "username"}, {"value": "Op-Secret", "designation": "password"}], "sections": [{"title": "", "fields": [{"title": "one-time password", "id": "TOTP_x", "value": {"totp": "otpauth://totp/GitLab:bob?secret=JBSWY3DPEHPK3PXP"}}]}]}}]}]}]}"#
        let zip = try CLI.exec("/usr/bin/python3", ["-c", """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("export.attributes", '{"version": 3}')
                z.writestr("export.data", sys.stdin.read())
                z.writestr("files/abc__scan.png", "not a secret")
            """, pux], stdin: Data(data.utf8))
        try #require(zip.status == 0, "\(zip.stderr)")
        let fromPUX = try box.vault(["import", "1pux", pux])
        #expect(fromPUX.status == 0, "\(fromPUX.stderr)")
        #expect(fromPUX.stdoutText == """
            imported '\(pux)' into '\(box.vaultPath)': 1 added, 0 updated, 0 unchanged, 0 kept, 1 skipped
              added: Personal/GitLab
              skipped: 1 file in files/: attachments and documents are not imported

            """)
        #expect(try fields(box, "Personal/GitLab") == ["password": "Op-Secret", "username": "bob", "url": "https://gitlab.com", "otp": "otpauth://totp/GitLab:bob?secret=JBSWY3DPEHPK3PXP"])
        for text in [result.stdoutText, fromPUX.stdoutText] { #expect(!text.contains("Secret") && !text.contains("4111")) }
        // A zip without export.data.
        let empty = box.directory + "/empty.1pux"
        _ = try CLI.exec("/usr/bin/python3", ["-c", "import sys, zipfile; zipfile.ZipFile(sys.argv[1], 'w').writestr('x', 'y')", empty])
        let none = try box.vault(["import", "1pux", empty])
        #expect(none.status == 1 && none.stderr == "vault: cannot import '\(empty)': the archive: no export.data (a 1Password .1pux export holds one)\n", "\(none.stderr)")
    }

    // MARK: Many entries

    /// 25,000 entries of 4 fields: 100,000 values, far more guarded regions than a process may map (each is several
    /// of its 65,530 mappings). An import's values share one region, and an export reads one entry at a time.
    @Test func twentyFiveThousandEntriesInAndOut() throws {
        let box = try Sandbox()
        try box.initVault()
        let csv = box.directory + "/many.csv"
        var text = "name,url,username,password\n"
        for index in 0..<25_000 { text += "site\(index).example,https://site\(index).example,user\(index),pw-\(index)\n" }
        try write(text, csv)
        let result = try box.vault(["import", "csv", csv, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect((try json(result))["added"] as? [String] == (0..<25_000).map { "site\($0).example" })
        #expect(try box.vault(["get", "site24999.example"]).stdoutText == "pw-24999")
        let file = box.directory + "/many.json"
        let exported = try box.vault(["export", "--format", "json", "-o", file, "--yes"])
        #expect(exported.status == 0 && exported.stdoutText == "exported 25000 entries of '\(box.vaultPath)' to '\(file)' (json)\n", "\(exported.stderr)")
    }

    // MARK: Through the agent

    @Test func throughTheAgentTheSameReportAndEntries() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        try box.unlock()
        let json = box.directory + "/in.json"
        try Data(#"{"format": "vault-export", "version": 1, "entries": [{"name": "a", "created": "2020-01-01T00:00:00.000Z", "modified": "2021-01-01T00:00:00.000Z", "fields": [{"name": "password", "secret": true, "value": "pa"}, {"name": "note", "secret": false, "value": "n"}], "history": [{"conflict": false, "modified": "2020-06-01T00:00:00.000Z", "fields": [{"name": "password", "secret": true, "value": "old"}]}]}]}"#.utf8)
            .write(to: URL(fileURLWithPath: json))
        let result = try box.vault(["import", "json", json])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutText.hasPrefix("imported '\(json)' into '\(box.vaultPath)': 1 added"))
        #expect(try box.vault(["get", "a", "--version", "1"]).stdoutText == "old")
        #expect(try box.vault(["show", "a", "--json"]).stdoutText.contains("\"created\":\"2020-01-01T00:00:00.000Z\""))
        try box.expectSameThroughTheAgent([
            ["import", "json", json], ["import", "json", json, "--json"], ["history", "a", "--reveal"],
            ["export", "--format", "csv", "--yes"], ["import", "csv", json],
        ])
        // Names keep their spaces; control characters become spaces.
        try Data(#"{"format": "vault-export", "version": 1, "entries": [{"name": " spaced name ", "fields": [{"name": "password", "value": "x"}]}]}"#.utf8)
            .write(to: URL(fileURLWithPath: json))
        #expect(try box.vault(["import", "json", json]).stdoutText.contains("  added:  spaced name \n"))
    }
}

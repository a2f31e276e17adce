import Foundation
import Testing
import VaultCore
import VaultTestSupport

/// Issue 35 §3: switching without loose ends. pass import keeps each entry's times (the store's git log) and makes
/// `key: value` lines secret unless the key is a known non-secret one; importing again leaves what the vault changed
/// since (per entry and field; `--overwrite` to force); KeePass attachments come in as binary fields and tags go
/// back out as KeePass tags, with the real pass, gpg, git and keepassxc-cli.
@Suite(.processTimeLimit) struct ReimportCLITests {
    static let hasPass = findTool("pass") != nil && findTool("gpg") != nil && findTool("git") != nil
    static let hasKeePassXC = findTool("keepassxc-cli") != nil
    static let inCI = ProcessInfo.processInfo.environment["CI"] == "true"

    func json(_ result: CLIResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.stdoutText) \(result.stderr)")
    }

    /// `vault show NAME --reveal --json`'s fields as name → (value, secret).
    func fields(_ box: Sandbox, _ name: String) throws -> [String: (value: String?, secret: Bool)] {
        let shown = try json(box.vault(["show", name, "--reveal", "--json"]))
        var out: [String: (value: String?, secret: Bool)] = [:]
        for case let field as [String: Any] in shown["fields"] as? [Any] ?? [] {
            out[field["name"] as! String] = (field["value"] as? String, field["secret"] as? Bool ?? false)
        }
        return out
    }

    @Test(.enabled(if: hasPass || inCI, "needs pass, gpg and git: scripts/install-deps --test"))
    func passImportKeepsTimesSecretFlagsAndWhatTheVaultChangedSince() throws {
        try #require(Self.hasPass, "pass, gpg and git are needed (CI=true)")
        let box = try Sandbox()
        try box.initVault()
        let gnupg = box.directory + "/gnupg", store = box.directory + "/store"
        try FileManager.default.createDirectory(atPath: gnupg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var env = ["GNUPGHOME": gnupg, "PASSWORD_STORE_DIR": store, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                   "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"]
        defer { _ = try? CLI.exec(findTool("gpgconf")!, ["--kill", "all"], environment: env) }
        let key = try CLI.exec(findTool("gpg")!, ["--batch", "--passphrase", "", "--quick-gen-key", "Vault Test <vault-test@example.invalid>", "default", "default", "never"], environment: env)
        try #require(key.status == 0, "\(key.stderr)")
        let pass = findTool("pass")!
        func passRun(_ arguments: [String], _ input: String = "", at time: Int) throws {
            env["GIT_AUTHOR_DATE"] = "@\(time) +0000"
            env["GIT_COMMITTER_DATE"] = "@\(time) +0000"
            let result = try CLI.exec(pass, arguments, stdin: Data(input.utf8), environment: env)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
        }
        try passRun(["init", "vault-test@example.invalid"], at: 1_500_000_000)
        try passRun(["git", "init"], at: 1_500_000_000)
        try passRun(["insert", "-m", "web/github"], "Gh-Secret-1\nlogin: alice\nemail: alice@example.org\npin: 1234\n", at: 1_600_000_000)
        try passRun(["insert", "-m", "-f", "web/github"], "Gh-Secret-2\nlogin: alice\nemail: alice@example.org\npin: 1234\n", at: 1_650_000_000)
        try passRun(["insert", "-m", "mail/work"], "Mail-Secret\nrecovery: 9999\n", at: 1_700_000_000)

        let first = try box.vault(["import", "pass", store], extraEnvironment: env)
        #expect(first.status == 0, "\(first.stderr)")
        let github = try fields(box, "web/github")
        #expect(github["password"]?.secret == true && github["username"]?.secret == false && github["email"]?.secret == false)
        let work = try fields(box, "mail/work")
        #expect(github["pin"]?.secret == true && github["pin"]?.value == "1234" && work["recovery"]?.secret == true)
        // Times: the oldest and newest commit that touched the file.
        let shown = try json(box.vault(["show", "web/github", "--json"]))
        #expect(shown["created"] as? String == "2020-09-13T12:26:40.000Z" && shown["modified"] as? String == "2022-04-15T05:20:00.000Z", "\(shown)")

        // Changed in the vault since: kept, named with its fields; the source's other entries unchanged.
        #expect(try box.vault(["put", "web/github", "--field", "pin"], stdin: Data("5678".utf8)).status == 0)
        let again = try box.vault(["import", "pass", store], extraEnvironment: env)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdoutText == """
            imported '\(store)' into '\(box.vaultPath)': 0 added, 0 updated, 1 unchanged, 1 kept, 0 skipped
              kept: web/github: changed in the vault since the source's version (pin differs; --overwrite replaces it)

            """)
        #expect(try fields(box, "web/github")["pin"]?.value == "5678")
        // On a terminal, a bar while gpg decrypts the store (issue 35 §3), erased before the report; piped: nothing.
        let onTerminal = try PseudoTerminal.run(
            CLI.vault, ["import", "pass", store, "--dry-run", "--passphrase-file", box.passphraseFile], steps: [],
            environment: box.environment.merging(env) { $1 })
        #expect(onTerminal.status == 0 && onTerminal.stdoutText.contains("\rdecrypting [####################] 2/2 files\u{1B}[K\r\u{1B}[K"),
                "\(onTerminal.stdoutText.debugDescription)")
        #expect(!again.stdoutText.contains("decrypting") && !again.stderr.contains("decrypting"))
        let asJSON = try json(box.vault(["import", "pass", store, "--json", "--dry-run"], extraEnvironment: env))
        #expect((asJSON["kept"] as? [[String: Any]])?.first?["fields"] as? [String] == ["pin"])

        // --overwrite replaces a vault change.
        let forced = try box.vault(["import", "pass", store, "--overwrite"], extraEnvironment: env)
        #expect(forced.stdoutText.contains(": 0 added, 1 updated, 1 unchanged, 0 kept, 0 skipped\n  updated: web/github\n"), "\(forced.stdoutText)")
        #expect(try fields(box, "web/github")["pin"]?.value == "1234")

        // A change in the store after the vault's: the store's wins, as a newer version does.
        #expect(try box.vault(["put", "web/github", "--field", "pin"], stdin: Data("0000".utf8)).status == 0)
        try passRun(["insert", "-m", "-f", "web/github"], "Gh-Secret-3\nlogin: alice\nemail: alice@example.org\npin: 1234\n", at: Int(Date().timeIntervalSince1970) + 5)
        let newer = try box.vault(["import", "pass", store], extraEnvironment: env)
        #expect(newer.stdoutText.contains(": 0 added, 1 updated, 1 unchanged, 0 kept, 0 skipped\n  updated: web/github\n"), "\(newer.stdoutText)")
        #expect(try fields(box, "web/github")["pin"]?.value == "1234")
        // Deleted in the vault since: not brought back (the vault keeps the deletion's name 30 days); --overwrite does.
        #expect(try box.vault(["delete", "mail/work", "--yes"]).status == 0)
        let deleted = try box.vault(["import", "pass", store], extraEnvironment: env)
        #expect(deleted.stdoutText.hasSuffix(": 0 added, 0 updated, 1 unchanged, 1 kept, 0 skipped\n  kept: mail/work: deleted in the vault since the source's version (--overwrite brings it back)\n"), "\(deleted.stdoutText)")
        #expect(try box.vault(["get", "mail/work"]).status == 2)
        #expect(try box.vault(["import", "pass", store, "--overwrite"], extraEnvironment: env).stdoutText.contains("  added: mail/work\n"))
        for result in [first, again, newer, forced, deleted] {
            for secret in ["Gh-Secret", "Mail-Secret", "5678", "9999"] { #expect(!result.stdoutText.contains(secret) && !result.stderr.contains(secret)) }
        }
    }

    @Test(.enabled(if: hasKeePassXC || inCI, "needs keepassxc-cli: scripts/install-deps --test"))
    func keePassAttachmentsComeInAsFieldsAndTagsGoBackAsTags() throws {
        let cli = try #require(findTool("keepassxc-cli"), "keepassxc-cli is needed (CI=true)")
        let box = try Sandbox()
        try box.initVault()
        let db = box.directory + "/db.kdbx"
        let kp = keePassXC(cli)
        let seed = box.directory + "/seed.xml"
        try box.write("""
            <?xml version="1.0" encoding="UTF-8"?>
            <KeePassFile><Meta><Generator>test</Generator></Meta><Root><Group><UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID><Name>Root</Name>
            <Entry><UUID>AAAAAAAAAAAAAAAAAAAAAg==</UUID><Tags>vpn,work</Tags>
            <String><Key>Title</Key><Value>VPN</Value></String><String><Key>Password</Key><Value ProtectInMemory="True">Vpn-Secret</Value></String>
            </Entry></Group></Root></KeePassFile>
            """, to: seed)
        _ = try kp(["import", "-p", seed, db], "dbpass\ndbpass\n")
        let attachment: [UInt8] = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) }
        try Data(attachment).write(to: URL(fileURLWithPath: box.directory + "/client.p12"))
        let big = Data(repeating: 0x41, count: (1 << 20) + 10)
        try big.write(to: URL(fileURLWithPath: box.directory + "/big.iso"))
        _ = try kp(["attachment-import", "-q", db, "VPN", "client.p12", box.directory + "/client.p12"], "dbpass\n")
        _ = try kp(["attachment-import", "-q", db, "VPN", "big.iso", box.directory + "/big.iso"], "dbpass\n")
        let xml = box.directory + "/db.xml"
        try (try kp(["export", "-f", "xml", db], "dbpass\n")).stdout.write(to: URL(fileURLWithPath: xml))

        let result = try box.vault(["import", "keepass-xml", xml])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutText.contains(": 1 added, 0 updated, 0 unchanged, 0 kept, 1 skipped\n  added: VPN\n"), "\(result.stdoutText)")
        #expect(result.stdoutText.hasSuffix(
            " ('VPN') attachment 'big.iso': larger than 1 MiB (an attachment is imported up to that): keep the file beside the vault\n"))
        let got = try box.vault(["get", "VPN", "--field", "client.p12"])
        #expect(got.status == 0 && [UInt8](got.stdout) == attachment, "\(got.stderr)")
        #expect(try fields(box, "VPN")["tags"]?.value == "vpn,work")

        // Exported back and read by keepassxc-cli: the tags are KeePass's tags again.
        let out = box.directory + "/out.xml", back = box.directory + "/back.kdbx"
        let export = try box.vault(["export", "--format", "keepass-xml", "--output", out, "--yes"])
        #expect(export.status == 0, "\(export.stderr)")
        _ = try kp(["import", "-p", out, back], "pw2\npw2\n")
        let reexported = try kp(["export", "-f", "xml", back], "pw2\n").stdoutText
        #expect(reexported.contains("<Tags>vpn,work</Tags>"), "\(reexported)")
        // The attachment (not text) is an attachment again (walkthrough finding 8), its bytes as they were.
        #expect(!export.stdoutText.contains("client.p12") && !export.stderr.contains("client.p12"), "\(export.stdoutText) \(export.stderr)")
        let p12 = box.directory + "/client-back.p12"
        _ = try kp(["attachment-export", "-q", back, "VPN", "client.p12", p12], "pw2\n")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: p12))) == attachment)
        #expect(!result.stdoutText.contains("Vpn-Secret") && !export.stderr.contains("Vpn-Secret"))
    }
}

/// `keepassxc-cli ARGUMENTS` with `input` on stdin (its passwords), expected to succeed.
func keePassXC(_ cli: String) -> (_ arguments: [String], _ input: String) throws -> CLIResult {
    { arguments, input in
        let result = try CLI.exec(cli, arguments, stdin: Data(input.utf8))
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return result
    }
}

import Foundation
import Testing
import VaultCore
import VaultTestSupport

/// Issue 21: `vault export --format json|csv|keepass-xml [--output FILE] [--yes]`: confirmation, refusals (exit 64,
/// nothing written), the file's mode and atomic replacement, and what other tools read back: keepassxc-cli imports
/// the KeePass XML and its TOTP gives oathtool's codes.
@Suite(.processTimeLimit) struct ExportCLITests {
    static let hasKeePassXC = findTool("keepassxc-cli") != nil

    func json(_ result: CLIResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.stdoutText) \(result.stderr)")
    }

    func filled() throws -> Sandbox {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "Web/GitHub"], stdin: Data("Ex-Old-1".utf8)).status == 0)
        #expect(try box.vault(["put", "Web/GitHub"], stdin: Data("Ex-New-2".utf8)).status == 0)
        #expect(try box.vault(["put", "Web/GitHub", "--field", "username"], stdin: Data("alice".utf8)).status == 0)
        #expect(try box.vault(["put", "Web/GitHub", "--field", "otp"], stdin: Data("JBSWY3DPEHPK3PXP".utf8)).status == 0)
        #expect(try box.vault(["put", "Web/GitHub", "--field", "pin", "--secret"], stdin: Data("1234".utf8)).status == 0)
        #expect(try box.vault(["put", "wifi", "--field", "notes"], stdin: Data("on the fridge".utf8)).status == 0)
        return box
    }

    @Test func withoutATerminalItNeedsYesAndStdoutNeedsYesNothingWritten() throws {
        let box = try filled()
        let file = box.directory + "/out.json"
        let noYes = try box.vault(["export", "--format", "json", "--output", file])
        #expect(noYes.status == 64 && noYes.stdout.isEmpty)
        #expect(noYes.stderr == "vault: export writes every secret in plain text: confirm on a terminal, or pass --yes\n", "\(noYes.stderr)")
        #expect(!FileManager.default.fileExists(atPath: file))
        // Refused before the vault is opened: no passphrase is needed to be told.
        #expect(try box.vault(["export", "--format", "json", "--output", file], passphrase: false).status == 64)
        let toStdout = try box.vault(["export", "--format", "csv"])
        #expect(toStdout.status == 64 && toStdout.stdout.isEmpty)
        #expect(toStdout.stderr.hasPrefix("vault: without --output the export goes to stdout, secrets in plain text: pass --yes to confirm, or --output FILE\n"), "\(toStdout.stderr)")
        let asJSON = try box.vault(["export", "--format", "json", "--output", file, "--json"])
        #expect(asJSON.status == 64 && asJSON.stderr.contains("\"exit_code\":64"), "\(asJSON.stderr)")
        let badFormat = try box.vault(["export", "--format", "xml", "--yes"])
        #expect(badFormat.status == 64 && badFormat.stderr.contains("xml"))
        #expect(!FileManager.default.fileExists(atPath: file))
        for result in [noYes, toStdout, asJSON] { #expect(!result.stderr.contains("Ex-New-2")) }

        // With --yes: stdout carries exactly the export.
        let out = try box.vault(["export", "--format", "json", "--yes"])
        #expect(out.status == 0 && out.stderr.isEmpty, "\(out.stderr)")
        let object = try json(out)
        #expect(object["format"] as? String == "vault-export" && object["version"] as? Int == 1)
        let entries = try #require(object["entries"] as? [[String: Any]])
        #expect(entries.map { $0["name"] as? String } == ["Web/GitHub", "wifi"])
        #expect((entries[0]["fields"] as? [[String: Any]])?.map { $0["name"] as? String } == ["password", "username", "otp", "pin"])
        #expect((entries[0]["history"] as? [Any])?.count == 4)

        // A version-1 vault has no fields to export.
        let older = box.directory + "/vaults/old.vault"
        #expect(try box.vault(["init", "--vault", older, "--format", "1"]).status == 0)
        let one = try box.vault(["export", "--format", "json", "--yes", "--vault", older])
        #expect(one.status == 64 && one.stderr.contains("format version 2"), "\(one.stderr)")
    }

    @Test func onATerminalItAsksFirstAndNoWritesNothing() throws {
        let box = try filled()
        let file = box.directory + "/out.json"
        let script = """
            exec 3<&0
            printf 'n\\n' | script -qec "$VAULT export --format json --output \(file) --passphrase-file \(box.passphraseFile)" /dev/null; echo "status=$?"
            printf 'y\\n' | script -qec "$VAULT export --format json --output \(file) --passphrase-file \(box.passphraseFile)" /dev/null; echo "status=$?"
            """
        guard findTool("script") != nil else { Issue.record("script (util-linux) is missing"); return }
        let result = try CLI.shell(script, environment: box.environment)
        let text = result.stdoutText
        #expect(text.contains("Write 2 entries of '\(box.vaultPath)' with their secrets in plain text to '\(file)'? [y/N]"), "\(text)")
        #expect(text.contains("vault: nothing exported"), "\(text)")
        #expect(text.contains("status=1") && text.contains("exported 2 entries of '\(box.vaultPath)' to '\(file)' (json)"), "\(text)")
        #expect(FileManager.default.fileExists(atPath: file))
    }

    /// Issue 33 §4: an existing FILE is replaced only when that is confirmed, as put replaces an entry: without a
    /// terminal --force is needed (--yes confirms the plain text, not the file; exit 7, nothing written), on a
    /// terminal it asks. A CSV export says how many cells a spreadsheet may run as formulas, values unchanged.
    @Test func anExistingFileIsReplacedOnlyWhenConfirmedAndFormulaLikeCellsAreCounted() throws {
        let box = try filled()
        for (arguments, value) in [(["formula"], "=1+2"), (["formula", "--field", "username"], "@alice"), (["minus", "--field", "notes"], "-5 degrees"), (["plus"], "+44")] {
            #expect(try box.vault(["put"] + arguments, stdin: Data(value.utf8)).status == 0)
        }
        let file = box.directory + "/out.csv"
        let first = try box.vault(["export", "--format", "csv", "-o", file, "--yes"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.hasSuffix("\nvault: note: 4 cells start with =, +, - or @, which a spreadsheet may run as a formula; exported unchanged (open the file as text, or import it into a password manager)\n"), "\(first.stderr)")
        let text = try String(contentsOfFile: file, encoding: .utf8)
        for value in ["\"=1+2\"", "\"@alice\"", "\"-5 degrees\"", "\"+44\""] { #expect(text.contains(value), "\(value)") }

        try Data("old contents".utf8).write(to: URL(fileURLWithPath: file))
        let refused = try box.vault(["export", "--format", "csv", "-o", file, "--yes"])
        #expect(refused.status == 7 && refused.stdout.isEmpty)
        #expect(refused.stderr == "vault: '\(file)' exists: pass --force to replace it (or confirm on a terminal); nothing exported\n")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "old contents")

        guard findTool("script") != nil else { Issue.record("script (util-linux) is missing"); return }
        let script = """
            printf 'n\\n' | script -qec "$VAULT export --format csv --output \(file) --yes --passphrase-file \(box.passphraseFile)" /dev/null; echo "status=$?"
            """
        let declined = try CLI.shell(script, environment: box.environment)
        #expect(declined.stdoutText.contains("Replace the existing '\(file)'? [y/N]"), "\(declined.stdoutText)")
        #expect(declined.stdoutText.contains("vault: '\(file)' exists and was not replaced; nothing exported") && declined.stdoutText.contains("status=7"), "\(declined.stdoutText)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "old contents")
        let accepted = try CLI.shell(script.replacingOccurrences(of: "printf 'n", with: "printf 'y"), environment: box.environment)
        #expect(accepted.stdoutText.contains("status=0"), "\(accepted.stdoutText)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == text)
    }

    @Test func theFileIsReplacedAtomicallyWithMode0600() throws {
        let box = try filled()
        let file = box.directory + "/out.csv"
        FileManager.default.createFile(atPath: file, contents: Data("old contents".utf8), attributes: [.posixPermissions: 0o644])
        let result = try box.vault(["export", "--format", "csv", "-o", file, "--yes", "--force", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try json(result)
        #expect(report["entries"] as? Int == 2 && report["format"] as? String == "csv" && report["output"] as? String == file)
        #expect((report["omitted"] as? [[String: String]])?.map { $0["item"] } == ["the history of 1 entry"])
        #expect(result.stderr == "vault: note: not exported: the history of 1 entry: CSV has no history; --format json keeps it\n")
        #expect(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int == 0o600)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(text == """
            folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp\r
            "Web",,"login","GitHub","","pin: 1234",,"","alice","Ex-New-2","JBSWY3DPEHPK3PXP"\r
            "",,"note","wifi","on the fridge","",,"","","",""\r

            """)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: box.directory).filter { $0.hasSuffix(".tmp") }
        #expect(leftovers.isEmpty)
        // The CSV reads back (as Bitwarden's).
        let other = box.directory + "/vaults/other.vault"
        #expect(try box.vault(["init", "--vault", other]).status == 0)
        let back = try box.vault(["import", "csv", file, "--vault", other])
        #expect(back.status == 0 && back.stdoutText.hasPrefix("imported '\(file)' into '\(other)': 2 added"), "\(back.stderr)")
        #expect(try box.vault(["get", "Web/GitHub", "--field", "pin", "--vault", other]).stdoutText == "1234")
        // A symbolic link is not written through.
        let link = box.directory + "/link.json"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: file)
        let refused = try box.vault(["export", "--format", "json", "-o", link, "--yes", "--force"])
        #expect(refused.status == 1 && refused.stderr.hasPrefix("vault: cannot write '\(link)': it is a symbolic link, not a regular file\n"), "\(refused.stderr)")
    }

    @Test(.enabled(if: hasKeePassXC, "needs keepassxc-cli: scripts/install-deps --test"))
    func keepassxcCLIImportsTheKeePassXMLAndItsTOTPGivesOathtoolsCodes() throws {
        let box = try filled()
        // A file (bytes no XML string holds) goes out as an attachment, not dropped.
        let certificate = Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        #expect(try box.vault(["put", "Web/GitHub", "--field", "cert.bin", "--secret"], stdin: certificate).status == 0)
        let xml = box.directory + "/out.xml"
        let result = try box.vault(["export", "--format", "keepass-xml", "-o", xml, "--yes"])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        let cli = findTool("keepassxc-cli")!
        let db = box.directory + "/imported.kdbx"
        let imported = try CLI.exec(cli, ["import", "-p", xml, db], stdin: Data("dbpass\ndbpass\n".utf8))
        try #require(imported.status == 0, "\(imported.stderr)")
        let listing = try CLI.exec(cli, ["ls", "-R", "-f", db], stdin: Data("dbpass\n".utf8))
        #expect(listing.stdoutText.split(separator: "\n").contains("Web/GitHub"), "\(listing.stdoutText)")
        let shown = try CLI.exec(cli, ["show", "-s", "-a", "Password", "-a", "UserName", "-a", "pin", db, "Web/GitHub"], stdin: Data("dbpass\n".utf8))
        #expect(shown.stdoutText == "Ex-New-2\nalice\n1234\n", "\(shown.stdoutText) \(shown.stderr)")
        let attachment = box.directory + "/cert.out"
        let exported = try CLI.exec(cli, ["attachment-export", "-q", db, "Web/GitHub", "cert.bin", attachment], stdin: Data("dbpass\n".utf8))
        #expect(exported.status == 0 && FileManager.default.contents(atPath: attachment) == certificate, "\(exported.stderr)")
        // KeePassXC computes the TOTP from the exported otp attribute; so does vault, and oathtool agrees.
        if let oathtool = findTool("oathtool") {
            let now = Int(Date().timeIntervalSince1970)
            let theirs = try CLI.exec(cli, ["show", "-t", db, "Web/GitHub"], stdin: Data("dbpass\n".utf8)).stdoutText
            let oath = try CLI.exec(oathtool, ["--totp", "-b", "-N", "@\(now)", "JBSWY3DPEHPK3PXP"]).stdoutText
            let oathNext = try CLI.exec(oathtool, ["--totp", "-b", "-N", "@\(now + 2)", "JBSWY3DPEHPK3PXP"]).stdoutText
            #expect(theirs == oath || theirs == oathNext, "\(theirs) vs \(oath)")
        }
        // The history came along: keepassxc-cli's own XML export of the new database imports back into a vault.
        let back = box.directory + "/back.xml"
        try CLI.exec(cli, ["export", "-f", "xml", db], stdin: Data("dbpass\n".utf8)).stdout.write(to: URL(fileURLWithPath: back))
        let other = box.directory + "/vaults/other.vault"
        #expect(try box.vault(["init", "--vault", other]).status == 0)
        let again = try box.vault(["import", "keepass-xml", back, "--vault", other])
        #expect(again.status == 0 && again.stdoutText.hasPrefix("imported '\(back)' into '\(other)': 2 added"), "\(again.stderr)")
        let history = try json(box.vault(["history", "Web/GitHub", "--reveal", "--json", "--vault", other]))
        let passwords = (history["versions"] as? [[String: Any]])?.compactMap { version in
            (version["fields"] as? [[String: Any]])?.first { $0["name"] as? String == "password" }?["value"] as? String
        }
        #expect(passwords?.first == "Ex-New-2" && passwords?.contains("Ex-Old-1") == true, "\(String(describing: passwords))")
        #expect(try box.vault(["get", "Web/GitHub", "--field", "pin", "--vault", other]).stdoutText == "1234")
        let code = try box.vault(["otp", "Web/GitHub", "--at", "59"]).stdoutText
        let importedCode = try box.vault(["otp", "Web/GitHub", "--at", "59", "--vault", other]).stdoutText
        #expect(code.count == 6 && importedCode == code)
    }
}

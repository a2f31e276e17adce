import Foundation
import Testing

/// Issue 35 §2: `vault edit NAME` hands the entry's fields to `$EDITOR` as `field: value` lines in a 0600 file on a
/// tmpfs, removed afterwards, and writes the result in one batch; a malformed line is refused (no terminal) or the
/// editor reopened (a real pty).
@Suite(.processTimeLimit) struct EditTests {
    let box: Sandbox

    init() throws {
        box = try Sandbox()
        try box.initVault()
        for (field, value) in [("password", "s3cret"), ("username", "alice"), ("url", "https://github.com"), ("notes", "a\nb")] {
            #expect(try box.vault(["put", "web/github", "--field", field], stdin: Data(value.utf8)).status == 0)
        }
    }

    /// An editor (a shell script) that logs the file's path and mode and what it held, then writes `replacement`
    /// (or leaves the file, when `nil`); the Nth run writes `replacements[N]` when several are given.
    func editor(_ replacements: [String?]) throws -> String {
        let script = box.directory + "/editor.sh"
        var text = "#!/bin/sh\nn=$(cat '\(box.directory)/runs' 2>/dev/null || echo 0)\necho $((n + 1)) > '\(box.directory)/runs'\n"
        text += "echo \"$1\" >> '\(box.directory)/paths'\nstat -c %a \"$1\" >> '\(box.directory)/modes'\ncat \"$1\" >> '\(box.directory)/seen'\n"
        for (index, replacement) in replacements.enumerated() {
            guard let replacement else { continue }
            let file = box.directory + "/replacement-\(index)"
            try box.write(replacement, to: file)
            text += "[ \"$n\" = \(index) ] && cat '\(file)' > \"$1\"\n"
        }
        text += "exit 0\n"
        try box.write(text, to: script, mode: 0o700)
        return script
    }

    func log(_ name: String) throws -> String { (try? String(contentsOfFile: box.directory + "/" + name, encoding: .utf8)) ?? "" }

    func field(_ field: String) throws -> String { try box.vault(["get", "web/github", "--field", field]).stdoutText }

    @Test func theFieldsAreEditedAsLinesInATmpfsFileWrittenOnceAndRemoved() throws {
        let editor = try editor(["password: n3w pass\nusername: bob\nnotes: line 1\n  line 2\nport: 22\n"])
        let result = try box.vault(["edit", "web/github"], extraEnvironment: ["EDITOR": editor, "VISUAL": ""])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "edited 'web/github': set password, username, notes, port; removed url\n")
        #expect(try log("seen") == "password: s3cret\nusername: alice\nurl: https://github.com\nnotes: a\n  b\n", "secret ones included")
        let path = try log("paths").trimmingCharacters(in: .newlines)
        #expect(path.hasPrefix("/dev/shm/vault-edit-") && path.hasSuffix("/github.txt"), "\(path)")
        #expect(try log("modes") == "600\n")
        #expect(!FileManager.default.fileExists(atPath: (path as NSString).deletingLastPathComponent), "the directory is removed")
        #expect(try field("password") == "n3w pass" && field("username") == "bob" && field("notes") == "line 1\nline 2" && field("port") == "22")
        #expect(try box.vault(["get", "web/github", "--field", "url"]).status == 2)
        let history = try box.vault(["history", "web/github", "--json"])
        let versions = try #require((try JSONSerialization.jsonObject(with: history.stdout) as? [String: Any])?["versions"] as? [[String: Any]])
        #expect(versions.count == 5, "one new version for the whole edit (4 puts before it)")
    }

    @Test func nothingChangedNothingWrittenAndOneFieldAlone() throws {
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let same = try box.vault(["edit", "web/github"], extraEnvironment: ["EDITOR": try editor([nil])])
        #expect(same.status == 0 && same.stderr == "no change to 'web/github'\n", "\(same.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)

        try? FileManager.default.removeItem(atPath: box.directory + "/runs")
        try? FileManager.default.removeItem(atPath: box.directory + "/seen")
        let one = try box.vault(["edit", "web/github", "--field", "username"], extraEnvironment: ["EDITOR": try editor(["username: carol\n"])])
        #expect(one.status == 0 && one.stderr == "edited 'web/github': set username\n", "\(one.stderr)")
        #expect(try log("seen") == "username: alice\n")
        #expect(try field("username") == "carol" && field("password") == "s3cret" && field("url") == "https://github.com")
    }

    @Test func aMalformedLineWithoutATerminalWritesNothing() throws {
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let result = try box.vault(["edit", "web/github"], extraEnvironment: ["EDITOR": try editor(["password: x\nthis line has no colon s3cret\n"])])
        #expect(result.status == 64)
        #expect(result.stderr == "vault: cannot edit: line 2: expected 'field: value' (a value's further lines start with two spaces) (the line is not shown: it may hold a secret); nothing written\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
        let path = try log("paths").trimmingCharacters(in: .newlines)
        #expect(!FileManager.default.fileExists(atPath: path))
        let missing = try box.vault(["edit", "nope"], extraEnvironment: ["EDITOR": "true"])
        #expect(missing.status == 2 && missing.stderr.hasPrefix("vault: no entry 'nope' in vault"), "\(missing.stderr)")
        let failing = try box.vault(["edit", "web/github"], extraEnvironment: ["EDITOR": "false"])
        #expect(failing.status == 1 && failing.stderr == "vault: the editor (false) exited with status 1: nothing written\n", "\(failing.stderr)")
    }

    @Test func onATerminalAMalformedLineReopensTheEditor() throws {
        let editor = try editor(["username: bob\nno colon here\n", "username: bob\n"])
        var environment = box.environment
        environment["VAULT_PASSPHRASE"] = "correct horse battery staple"
        environment["EDITOR"] = editor
        environment["PATH"] = "/usr/bin:/bin"
        let result = try PseudoTerminal.run(
            "/bin/sh", ["-c", "\"$0\" edit web/github; echo \"[exit $?]\"", CLI.vault],
            playing: [.init(marker: "Edit again? [Y/n] ", keys: "\n")], environment: environment, seconds: 30)
        #expect(result.stdoutText.contains(
            "vault: line 2: expected 'field: value' (a value's further lines start with two spaces) (the line is not shown: it may hold a secret)\n"),
            "\(result.stdoutText)")
        #expect(result.stdoutText.contains("edited 'web/github': set username; removed password, url, notes\n[exit 0]"), "\(result.stdoutText)")
        #expect(try log("runs") == "2\n", "the editor ran again")
        #expect(try field("username") == "bob")
    }
}

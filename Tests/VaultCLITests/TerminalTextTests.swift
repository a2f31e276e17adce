import Foundation
import Testing
import VaultTerminal
import VaultTestSupport

/// Text from elsewhere never reaches a terminal or stderr raw (issue 11, items 3 and 21): ``TerminalText`` and
/// where it is used: `vault list`, error messages, a server's realm in prompts and errors.
@Suite(.processTimeLimit) struct TerminalTextTests {
    /// A name that shows as `invoiceexe.pdf` (a bidi override reverses what follows) on two lines (a line
    /// separator). Control characters (C0, DEL, C1) are refused in names; these are not.
    static let hostileName = "invoice\u{202E}fdp.exe\u{2028}x"
    static let hostileNameEscaped = #"invoice\u{202E}fdp.exe\u{2028}x"#

    /// Issue 22: help texts are written as paragraphs, one line each, so that ArgumentParser wraps them to the
    /// terminal's width; a hard break inside a paragraph leaves a ragged line at every width but one. At 4000
    /// columns, every paragraph of every verb's and sub-verb's help (vault and vault-net) is then one line.
    @Test func everyHelpTextIsWrittenAsParagraphs() throws {
        func verbs(_ help: String) -> [String] {
            guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
            return help[start.upperBound...].split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("  "), !line.hasPrefix("   "), let word = line.split(separator: " ").first else { return nil }
                return String(word)
            }
        }
        func help(_ arguments: [String]) throws -> String {
            try CLI.run(arguments + ["--help"], environment: ["COLUMNS": "4000"]).stdoutText
        }
        var checked = 0
        let top = try help([])
        for verb in verbs(top) {
            let text = try help([verb])
            for sub in verbs(text) { try expectParagraphs(try help([verb, sub]), "\(verb) \(sub)") }
            try expectParagraphs(text, verb)
            checked += 1
        }
        #expect(checked > 20, "verbs read from vault --help: \(checked)")
    }

    func expectParagraphs(_ help: String, _ verb: String) throws {
        // The overview and discussion come before USAGE; indented lines are tables.
        let prose = help.components(separatedBy: "\nUSAGE:").first ?? help
        func isProse(_ line: String) -> Bool { !line.isEmpty && !line.hasPrefix(" ") && line != line.uppercased() }
        let lines = prose.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (previous, line) in zip(lines, lines.dropFirst()) where isProse(previous) && isProse(line) {
            Issue.record("vault \(verb) --help: a paragraph broken by hand: '\(previous)' / '\(line)'")
        }
    }

    @Test func escapesControlsAndBidiControlsVisibly() {
        #expect(TerminalText.escaped("a\u{1B}[2Jb\u{07}") == #"a\x1B[2Jb\x07"#)
        #expect(TerminalText.escaped("\u{0}\u{7F}\u{80}\u{9F}") == #"\x00\x7F\x80\x9F"#)
        #expect(TerminalText.escaped("l\n2\r\t") == #"l\n2\r\t"#)
        #expect(TerminalText.escaped("\u{61C}\u{200E}\u{200F}\u{202A}\u{202E}\u{2066}\u{2069}\u{2028}\u{2029}")
            == #"\u{61C}\u{200E}\u{200F}\u{202A}\u{202E}\u{2066}\u{2069}\u{2028}\u{2029}"#)
        #expect(TerminalText.escaped(#"C:\x1B"#) == #"C:\\x1B"#)  // a backslash is escaped: no two inputs look alike
        #expect(TerminalText.escaped("naïve 日本 👩‍👩‍👧 e\u{301}") == "naïve 日本 👩‍👩‍👧 e\u{301}")  // text stays text
        #expect(TerminalText.escaped("x\ny", keepingNewlines: true) == "x\ny")
        // Escaped text escaped again, keeping backslashes (the sinks' safety net), is unchanged.
        let once = TerminalText.escaped(Self.hostileName + "\\\n\u{1B}")
        #expect(TerminalText.escaped(once, keepingBackslashes: true) == once)
    }

    /// `vault list`: escaped on a terminal; the exact names for a pipe; JSON exact (JSON escapes C0 itself).
    @Test func listEscapesNamesOnATerminalOnly() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", Self.hostileName], stdin: Data("v".utf8)).status == 0)
        #expect(try box.vault(["put", "plain"], stdin: Data("v".utf8)).status == 0)

        let piped = try box.vault(["list"])
        #expect(piped.status == 0)
        #expect(piped.stdout == Data((Self.hostileName + "\nplain\n").utf8))

        let json = try box.vault(["list", "--json"])
        let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        let names = (object?["entries"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
        #expect(names == [Self.hostileName, "plain"])

        let onTerminal = try PseudoTerminal.run(
            CLI.vault, ["list", "--passphrase-file", box.passphraseFile], playing: [PseudoTerminal.Step](),
            environment: box.environment, seconds: 30)
        #expect(onTerminal.status == 0)
        #expect(onTerminal.stdoutText == Self.hostileNameEscaped + "\nplain\n[echo on]\n")
    }

    /// An error naming an entry: one line, escaped; with --json the exact name.
    @Test func errorsEscapeNames() throws {
        let box = try Sandbox()
        try box.initVault()
        let missing = try box.vault(["get", Self.hostileName + "\u{1B}]0;title\u{07}"])
        #expect(missing.status == 2)
        #expect(missing.stderr == """
            vault: no entry '\(Self.hostileNameEscaped)\\x1B]0;title\\x07' in vault '\(box.vaultPath)'
            hint: 'vault list' shows the names

            """)
        let json = try box.vault(["get", Self.hostileName, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.stderr.utf8)) as? [String: [String: Any]]
        #expect(object?["error"]?["message"] as? String == "no entry '\(Self.hostileName)' in vault '\(box.vaultPath)'")
    }

    /// A realm with escape sequences (clear screen, set the window title, red text) from a real server: the HTTP
    /// client (SwiftNIO's parser) refuses a header with control bytes as invalid HTTP, so none reaches a terminal.
    /// A realm that is valid HTTP but holds a bidi override and a C1 control (UTF-8, bytes ≥ 0x80 pass the
    /// parser) is shown escaped in the error and in the prompt's header, never as raw characters.
    @Test func aHostileRealmIsShownEscaped() throws {
        let server = try PythonServer(.counting)
        func url(_ realm: String) -> String {
            server.origin + "/hostile-realm?hex=" + Data(realm.utf8).map { String(format: "%02x", $0) }.joined()
        }
        let box = try Sandbox()
        try box.initVault()

        let controls = try box.vault(["login", url("\u{1B}[2J\u{1B}]0;bank\u{07}\u{1B}[31mhttps://bank.example"), "--allow-insecure-http"])
        #expect(controls.status == 1, "\(controls.stderr)")
        #expect(controls.stderr.contains("the answer is not valid HTTP/1.1"), "\(controls.stderr)")
        #expect(!controls.stderr.contains("\u{1B}") && !controls.stderr.contains("\u{07}"))

        let realm = "https://bank.example\u{202E}lmth.xedni\u{9B}31m"
        let escaped = #"https://bank.example\u{202E}lmth.xedni\x9B31m"#
        // No terminal: the error names the realm, escaped.
        let scripted = try box.vault(["login", url(realm), "--allow-insecure-http"])
        #expect(scripted.status == 3)
        #expect(scripted.stderr.hasPrefix(
            "vault: \(server.origin) (realm \"\(escaped)\") asks for credentials: there is no terminal to ask on\n"),
            "\(scripted.stderr)")
        #expect(!scripted.stderr.contains("\u{202E}") && !scripted.stderr.contains("\u{9B}"))

        // On a terminal: the prompt's header, then Ctrl-D at the username declines.
        let asked = try PseudoTerminal.run(
            CLI.vault, ["login", url(realm), "--allow-insecure-http", "--passphrase-file", box.passphraseFile],
            playing: [PseudoTerminal.Step(marker: "Username: ", keys: "\u{04}")], environment: box.environment, seconds: 30)
        #expect(asked.stdoutText.hasPrefix("Log in to \(server.origin) (realm \"\(escaped)\")\nusername: "), "\(asked.stdoutText)")
        #expect(!asked.stdoutText.contains("\u{202E}") && !asked.stdoutText.contains("\u{9B}"))
        #expect(asked.stdoutText.hasSuffix("[echo on]\n"))
    }
}

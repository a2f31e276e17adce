import Foundation
import Testing
import VaultTerminal
import VaultTestSupport

/// Text from elsewhere never reaches a terminal or stderr raw (issue 11, items 3 and 21): ``TerminalText`` and
/// where it is used: `vault list`, error messages, a server's realm in prompts and errors.
@Suite(.timeLimit(.minutes(5))) struct TerminalTextTests {
    /// A name that shows as `invoiceexe.pdf` (a bidi override reverses what follows) on two lines (a line
    /// separator). Control characters (C0, DEL, C1) are refused in names; these are not.
    static let hostileName = "invoice\u{202E}fdp.exe\u{2028}x"
    static let hostileNameEscaped = #"invoice\u{202E}fdp.exe\u{2028}x"#

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

    /// A realm with escape sequences (clear screen, set the window title, red text) and a bidi override, from a
    /// real server: shown escaped in the prompt's header and in the error after it, never as raw bytes.
    @Test func aHostileRealmIsShownEscaped() throws {
        let server = try PythonServer(.counting)
        let realm = "\u{1B}[2J\u{1B}]0;bank\u{07}\u{1B}[31mhttps://bank.example\u{202E}"
        let hex = Data(realm.utf8).map { String(format: "%02x", $0) }.joined()
        let url = server.origin + "/hostile-realm?hex=" + hex
        let escaped = #"\x1B[2J\x1B]0;bank\x07\x1B[31mhttps://bank.example\u{202E}"#
        let box = try Sandbox()
        try box.initVault()

        // No terminal: the error names the realm, escaped.
        let scripted = try box.vault(["login", url, "--allow-insecure-http"])
        #expect(scripted.status == 3)
        #expect(scripted.stderr.hasPrefix(
            "vault: \(server.origin) (realm \"\(escaped)\") asks for credentials: there is no terminal to ask on\n"))
        #expect(!scripted.stderr.contains("\u{1B}") && !scripted.stderr.contains("\u{202E}"))

        // On a terminal: the prompt's header, then Ctrl-D at the username declines.
        let asked = try PseudoTerminal.run(
            CLI.vault, ["login", url, "--allow-insecure-http", "--passphrase-file", box.passphraseFile],
            playing: [PseudoTerminal.Step(marker: "Username: ", keys: "\u{04}")], environment: box.environment, seconds: 30)
        #expect(asked.stdoutText.hasPrefix("Log in to \(server.origin) (realm \"\(escaped)\")\nusername: "))
        #expect(!asked.stdoutText.contains("\u{1B}") && !asked.stdoutText.contains("\u{202E}"))
        #expect(asked.stdoutText.hasSuffix("[echo on]\n"))
    }
}

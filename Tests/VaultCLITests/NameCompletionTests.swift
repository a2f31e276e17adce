import Foundation
import Testing
import VaultCommands
import VaultTestSupport

/// Entry names in shell completion (``NameCompletion``), through real bash and the completion script the binary
/// generates, as `scripts/install` installs it.
@Suite(.processTimeLimit) struct NameCompletionTests {
    /// What bash offers for the command line `words` (the last one being completed), with `vault`'s own script
    /// loaded, in `box`'s environment; the binary's directory first on PATH, as after an install.
    static func bashCompletions(_ words: [String], box: AgentBox, environment extra: [String: String] = [:]) throws -> [String] {
        let script = box.directory + "/vault.bash"
        if !FileManager.default.fileExists(atPath: script) {
            let generated = try box.vault(["--generate-completion-script", "bash"])
            try #require(generated.status == 0, "no completion script: \(generated.stderr)")
            try generated.stdout.write(to: URL(fileURLWithPath: script))
        }
        let quoted = words.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let program = """
            source \(script)
            COMP_WORDS=(\(quoted)); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
            COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
            _vault vault "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let directory = URL(fileURLWithPath: CLI.vault).deletingLastPathComponent().path
        let run = try AgentCLI.exec(
            "/bin/bash", ["--norc", "--noprofile", "-c", program], environment: box.environment.merging(
                ["PATH": directory + ":/usr/local/bin:/usr/bin:/bin"].merging(extra) { $1 }) { $1 },
            timeout: 20)
        try #require(run.status == 0, "bash: exit \(run.status): \(run.stderr)")
        #expect(run.stderr == "", "the completion wrote to stderr: \(run.stderr)")
        return run.stdoutText.split(separator: "\n").map(String.init)
    }

    @Test func namesOfTheVaultTheAgentHoldsAndNothingOtherwise() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        for name in ["github.com", "gitlab.com", "aws/prod", "with space", "host:443", "été"] {
            #expect(try box.around(["put", name], stdin: Data("v".utf8)).status == 0)
        }
        // Names bash's compgen would expand (a command substitution would run on Tab): never offered.
        let marker = box.directory + "/expanded"
        for name in ["x$(touch \(marker))", "x`touch \(marker)`", "x${HOME}", "x{a,b}", "x'quoted'", "x\\y", "~x", "-x"] {
            #expect(try QuickPathTests.putAround(box, name, Data("v".utf8)).status == 0, "\(name)")
        }

        // Locked (no agent at all, then an agent without this vault): nothing, and no prompt, no error.
        #expect(try Self.bashCompletions(["vault", "get", "gi"], box: box) == [])
        let other = try AgentBox(sharingAgentWith: box)
        try other.initVault()
        try other.unlock()
        #expect(try Self.bashCompletions(["vault", "get", "gi"], box: box) == [])

        try box.unlock()
        #expect(try Self.bashCompletions(["vault", "get", "gi"], box: box) == ["github.com", "gitlab.com"])
        #expect(try Self.bashCompletions(["vault", "get", ""], box: box).sorted()
            == ["aws/prod", "github.com", "gitlab.com", "host:443", "with space", "été"])
        // One candidate, unescaped: the script completes with `-o filenames`, so readline quotes it on insertion.
        #expect(try Self.bashCompletions(["vault", "get", "wi"], box: box) == ["with space"])
        #expect(try String(contentsOfFile: box.directory + "/vault.bash", encoding: .utf8).contains("-o filenames"))
        #expect(!FileManager.default.fileExists(atPath: marker), "a name was expanded as a command")
        #expect(try Self.bashCompletions(["vault", "get", "x"], box: box) == [], "names that bash would expand were offered")
        #expect(try Self.bashCompletions(["vault", "delete", "github.com", "a"], box: box) == ["aws/prod"])
        #expect(try Self.bashCompletions(["vault", "mv", "aw"], box: box) == ["aws/prod"])
        #expect(try Self.bashCompletions(["vault", "put", "--json", "gith"], box: box) == ["github.com"])
        // The vault named on the line: another vault the agent holds, or one it does not, or one named so that
        // the completion cannot tell which (quoted): nothing, rather than the default vault's names.
        #expect(try Self.bashCompletions(["vault", "get", "--vault", other.vaultPath, "gi"], box: box) == [])
        #expect(try Self.bashCompletions(["vault", "get", "--vault=" + box.vaultPath, "gi"], box: box)
            == ["github.com", "gitlab.com"])
        #expect(try Self.bashCompletions(["vault", "get", "--vault", box.directory + "/none.vault", "gi"], box: box) == [])
        #expect(try Self.bashCompletions(["vault", "get", "--vault", "'" + box.vaultPath + "'", "gi"], box: box) == [])

        // Locked again: nothing.
        #expect(try box.vault(["lock"]).status == 0)
        #expect(try Self.bashCompletions(["vault", "get", "gi"], box: box) == [])
    }

    @Test(arguments: [
        (["vault", "get", "--vault", "/a/b.vault", "k"], .path("/a/b.vault")),
        (["vault", "get", "--vault=/a/b.vault", "k"], .path("/a/b.vault")),
        (["vault", "get", "--vault", "/a", "--vault=/b", "k"], .path("/b")),
        (["vault", "get", "--vault", "'/a/b c.vault'", "k"], .unusable),
        (["vault", "get", "--vault", "$HOME/x", "k"], .unusable),
        (["vault", "get", "--vault="], .unusable),
        (["vault", "get", "--vault"], .unusable),
        (["vault", "get", "k"], .notGiven),
        (["vault", "get", "--vault", "~/v/a.vault", "k"], .path((ProcessInfo.processInfo.environment["HOME"] ?? "") + "/v/a.vault")),
    ] as [([String], NameCompletion.VaultWord)])
    func theVaultOfTheLineIsAPlainWord(words: [String], expected: NameCompletion.VaultWord) {
        #expect(NameCompletion.vaultWord(in: words) == expected)
    }

    @Test(arguments: ["a", "aws/prod", "user@host", "host:443", "a b", "été", "日本", "x=1,y+2%"])
    func plainNamesAreOffered(name: String) {
        #expect(NameCompletion.isOffered(name))
    }

    @Test(arguments: [
        "", "-a", "a$b", "a`b`", "a'b", "a\"b", "a\\b", "~a", "a{b,c}", "a;b", "a|b", "a&b", "a>b", "a*", "a?", "a[b]",
        "a!b", "a#b", "a(b)", "a\tb", "a\nb", "a\u{1b}[31m", "a\u{202e}b", "a\u{a0}b", "a\u{2028}b",
        "a\u{3164}b", "a\u{34f}b", "a\u{fe0f}", "a\u{200b}b",
    ])
    func namesAShellOrATerminalWouldReadAreNotOffered(name: String) {
        #expect(!NameCompletion.isOffered(name))
    }

    /// Completing is not using the vault: Tab after Tab leaves the idle timeout running out.
    @Test func completionIsNotAnActivity() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        #expect(try box.around(["put", "github.com"], stdin: Data("v".utf8)).status == 0)
        // 6 s of idle time: the first completion (bash, then vault) must come back within it even on a loaded
        // machine (3 s was too short when the whole suite ran on 2 cores).
        try box.unlock(["--idle", "6s"])
        let unlocked = monotonicNow()
        #expect(try Self.bashCompletions(["vault", "get", "gi"], box: box) == ["github.com"])
        while monotonicNow() - unlocked < 7 {
            _ = try Self.bashCompletions(["vault", "get", "gi"], box: box)
            usleep(300_000)
        }
        AgentTests.expectLocked(try box.vault(["get", "github.com"]), "get after 7 s of completions with --idle 6s")
    }

    /// A stopped agent (its connections accepted by the kernel, never answered) costs a Tab 2 s, not 30.
    @Test func aStoppedAgentHoldsTheShellTwoSecondsAtMost() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        #expect(try box.around(["put", "github.com"], stdin: Data("v".utf8)).status == 0)
        try box.unlock()
        let pid = try #require(try box.agentPID())
        _ = try Self.bashCompletions(["vault", "get", "gi"], box: box)  // the script is generated while it runs
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        let started = monotonicNow()
        #expect(try Self.bashCompletions(["vault", "get", "gi"], box: box) == [])
        let seconds = monotonicNow() - started
        #expect(seconds < 5, "completion took \(seconds) s with the agent stopped")
    }
}

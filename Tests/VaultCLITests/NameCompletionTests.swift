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
        for name in ["github.com", "gitlab.com", "aws/prod", "with space"] {
            #expect(try box.around(["put", name], stdin: Data("v".utf8)).status == 0)
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
            == ["aws/prod", "github.com", "gitlab.com", "with space"])
        #expect(try Self.bashCompletions(["vault", "delete", "github.com", "a"], box: box) == ["aws/prod"])
        #expect(try Self.bashCompletions(["vault", "mv", "aw"], box: box) == ["aws/prod"])
        #expect(try Self.bashCompletions(["vault", "put", "--json", "gith"], box: box) == ["github.com"])
        // The vault named on the line: another vault the agent holds, or one it does not.
        #expect(try Self.bashCompletions(["vault", "get", "--vault", other.vaultPath, "gi"], box: box) == [])
        #expect(try Self.bashCompletions(["vault", "get", "--vault=" + box.vaultPath, "gi"], box: box)
            == ["github.com", "gitlab.com"])
        #expect(try Self.bashCompletions(["vault", "get", "--vault", box.directory + "/none.vault", "gi"], box: box) == [])

        // Locked again: nothing.
        #expect(try box.vault(["lock"]).status == 0)
        #expect(try Self.bashCompletions(["vault", "get", "gi"], box: box) == [])
    }

    @Test(arguments: [
        (["vault", "get", "--vault", "/a/b.vault", "k"], "/a/b.vault"),
        (["vault", "get", "--vault=/a/b.vault", "k"], "/a/b.vault"),
        (["vault", "get", "--vault", "'/a/b c.vault'", "k"], nil),
        (["vault", "get", "--vault", "$HOME/x", "k"], nil),
        (["vault", "get", "--vault"], nil),
        (["vault", "get", "k"], nil),
        (["vault", "get", "--vault", "~/v/a.vault", "k"], (ProcessInfo.processInfo.environment["HOME"] ?? "") + "/v/a.vault"),
    ] as [([String], String?)])
    func theVaultOfTheLineIsAPlainWord(words: [String], expected: String?) {
        #expect(NameCompletion.vaultPath(in: words) == expected)
    }
}

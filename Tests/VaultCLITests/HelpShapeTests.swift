import Foundation
import Testing

/// Issue 35 §5: `-f` means one thing on every verb (go ahead, without asking, over what would stop or ask), and a
/// verb's `--help` lists its own options first and the global ones once, after them.
@Suite(.processTimeLimit) struct HelpShapeTests {
    static let global = ["--vault", "--passphrase-fd", "--passphrase-file", "--identity", "--json", "--accept-rollback", "--version", "-h, --help"]

    /// The option lines of `vault ARGUMENTS --help` (their first word or two), in order.
    func options(_ arguments: [String]) throws -> [String] {
        optionLines(try CLI.run(arguments + ["--help"]).stdoutText)
    }

    func optionLines(_ help: String) -> [String] {
        let section = help.components(separatedBy: "OPTIONS:\n").dropFirst().first ?? ""
        return section.split(separator: "\n").filter { $0.hasPrefix("  -") }.map { line in
            let words = line.trimmingCharacters(in: .whitespaces).components(separatedBy: "  ").first ?? ""
            // A verb's own `--version <n>` (show, history, restore) is not the program's `--version`.
            return words.hasPrefix("--version <") ? "--version N" : words.components(separatedBy: " <").first ?? words
        }
    }

    /// Every verb and sub-verb, from the command trees themselves (`--experimental-dump-help` of `vault` and of
    /// `vault-net`, which holds the verbs `vault` routes to it), never from a list that a new verb could miss.
    static func verbs() throws -> [[String]] {
        var paths: [[String]] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            if !path.isEmpty, !paths.contains(path) { paths.append(path) }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                guard let name = sub["commandName"] as? String, name != "help" else { continue }
                walk(sub, path + [name])
            }
        }
        for binary in [CLI.vault, CLI.binDirectory.appendingPathComponent("vault-net").path] {
            let dump = try CLI.exec(binary, ["--experimental-dump-help"])
            let tree = try #require(try JSONSerialization.jsonObject(with: dump.stdout) as? [String: Any], "\(binary): \(dump.stderr)")
            walk(try #require(tree["command"] as? [String: Any]), [])
        }
        return paths
    }

    @Test func everyVerbListsItsOwnOptionsFirstThenTheGlobalOnesOnce() throws {
        let verbs = try Self.verbs()
        // The tree really is walked: verbs of both binaries, sub-verbs included.
        for known in [["edit"], ["lock"], ["upgrade"], ["logout"], ["docker-credential"], ["secret-service"], ["ssh", "import"], ["remote", "set"]] {
            #expect(verbs.contains(known), "\(known) not in \(verbs)")
        }
        for verb in verbs {
            let help = try CLI.run(verb + ["--help"]).stdoutText
            let lines = optionLines(help)
            #expect(!lines.isEmpty, "\(verb): no OPTIONS")
            let isGlobal = { (line: String) in Self.global.contains(line) }
            if let firstGlobal = lines.firstIndex(where: isGlobal) {
                #expect(!lines[firstGlobal...].contains { !isGlobal($0) }, "\(verb): an own option after the global ones: \(lines)")
            }
            #expect(lines.filter { $0 == "--vault" }.count <= 1, "\(verb)")
            // No jargon without a word of what it means (issue 35 §5).
            for word in ["stanza", "opslimit", "memlimit", "generation"] {
                #expect(!help.lowercased().contains(word), "\(verb): '\(word)' in its help")
            }
        }
    }

    @Test func dashFMeansGoAheadWithoutAsking() throws {
        // Wrapped to the width: words compared with single spaces.
        let help = try CLI.run(["--help"]).stdoutText.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(help.contains("-f, --force means one thing on every verb that has it: go ahead, without asking, over what would stop the command or make it ask"))
        #expect(try options(["export"]).contains("-f, --force"))
        // delete -f on a terminal: no question (as rm -f), a missing name ignored.
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "a"], stdin: Data("v".utf8)).status == 0)
        let deleted = try PseudoTerminal.run(CLI.vault, ["delete", "-f", "a", "missing", "--passphrase-file", box.passphraseFile], steps: [], environment: box.environment)
        #expect(deleted.status == 0 && !deleted.stdoutText.contains("[y/N]"), "\(deleted.stdoutText)")
        #expect(try box.vault(["get", "a"]).status == 2)
        // export -f replaces its output without asking.
        let output = box.directory + "/out.csv"
        try Data("old".utf8).write(to: URL(fileURLWithPath: output))
        let export = try box.vault(["export", "--format", "csv", "--output", output, "--yes", "-f"])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(try String(contentsOfFile: output, encoding: .utf8) != "old")
    }
}

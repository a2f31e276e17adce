import Foundation
import Testing

/// Issue 35 §5: `-f` means one thing on every verb (go ahead, without asking, over what would stop or ask), and a
/// verb's `--help` lists its own options first and the global ones once, after them.
@Suite(.processTimeLimit) struct HelpShapeTests {
    static let global = ["--vault", "--passphrase-fd", "--passphrase-file", "--identity", "--json", "--accept-rollback", "--version", "-h, --help"]

    /// The option lines of `vault ARGUMENTS --help` (their first word or two), in order.
    func options(_ arguments: [String]) throws -> [String] {
        let help = try CLI.run(arguments + ["--help"]).stdoutText
        let section = help.components(separatedBy: "OPTIONS:\n").dropFirst().first ?? ""
        return section.split(separator: "\n").filter { $0.hasPrefix("  -") }.map { line in
            let words = line.trimmingCharacters(in: .whitespaces).components(separatedBy: "  ").first ?? ""
            // A verb's own `--version <n>` (show, history, restore) is not the program's `--version`.
            return words.hasPrefix("--version <") ? "--version N" : words.components(separatedBy: " <").first ?? words
        }
    }

    @Test(arguments: [["put"], ["delete"], ["list"], ["generate"], ["init"], ["import"], ["export"], ["sync"], ["unlock"],
                      ["recipients", "add"], ["recipients", "remove"], ["git", "setup"], ["get"], ["show"], ["history"], ["restore"],
                      ["run"], ["inject"], ["clip"], ["otp"], ["merge"], ["mv"], ["cp"], ["find"]])
    func ownOptionsFirstThenTheGlobalOnesOnce(_ verb: [String]) throws {
        let lines = try options(verb)
        let isGlobal = { (line: String) in Self.global.contains(line) }
        let firstGlobal = try #require(lines.firstIndex(where: isGlobal), "\(verb): \(lines)")
        #expect(!lines[firstGlobal...].contains { !isGlobal($0) }, "\(verb): an own option after the global ones: \(lines)")
        #expect(lines.filter { $0 == "--vault" }.count == 1, "\(verb)")
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

import ArgumentParser
import Foundation

/// Parses and runs a root command as ArgumentParser's `main()` does, with two differences for usage errors:
/// with `--json` among the arguments they are the JSON error object every other failure is (code `usage`,
/// exit code 64), and a mistyped verb names the nearest one.
package enum CommandLineRunner {
    /// Runs `root` with the process's arguments and exits.
    package static func main(_ root: ParsableCommand.Type) -> Never {
        var command = parse(root, Array(CommandLine.arguments.dropFirst()))
        do {
            try command.run()
        } catch {
            root.exit(withError: error)
        }
        exit(0)
    }

    /// ``main(_:)`` for a root whose verbs may await; `arguments` without the program's name.
    package static func main(
        _ root: AsyncParsableCommand.Type, arguments: [String] = Array(CommandLine.arguments.dropFirst())
    ) async -> Never {
        var command = parse(root, arguments)
        do {
            if var asynchronous = command as? AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            root.exit(withError: error)
        }
        exit(0)
    }

    /// The command `arguments` name; a parse failure is reported (``failToParse(_:_:arguments:)``) and exits.
    static func parse(_ root: ParsableCommand.Type, _ arguments: [String]) -> ParsableCommand {
        do {
            return try root.parseAsRoot(arguments)
        } catch {
            failToParse(root, error, arguments: arguments)
        }
    }

    /// Reports a parse failure and exits: help and version requests as ArgumentParser does; usage errors as
    /// text or, with `--json`, as the JSON error object.
    static func failToParse(_ root: ParsableCommand.Type, _ error: Error, arguments: [String]) -> Never {
        guard root.exitCode(for: error).rawValue == Exit.usage else { root.exit(withError: error) }
        let json = arguments.prefix { $0 != "--" }.contains("--json")
        let program = root.configuration.commandName ?? "vault"
        var verbs = ["help"]
        for verb in root.configuration.subcommands {
            if let name = verb.configuration.commandName { verbs.append(name) }
        }
        if let first = arguments.first, !first.hasPrefix("-"), !verbs.contains(first) {
            let hint = nearest(first, among: verbs).map { "did you mean '\(program) \($0)'?" }
                ?? "'\(program) --help' lists the verbs"
            exit(report(UsageError(message: "unknown verb '\(first)'", hint: hint), json: json, program: program))
        }
        guard json else { root.exit(withError: error) }
        let verb = arguments.first.map { " " + $0 } ?? ""
        exit(report(
            UsageError(message: root.message(for: error), hint: "'\(program)\(verb) --help' shows the usage"),
            json: true, program: program))
    }

    /// The candidate at the smallest edit distance from `word`, if it is at most 2 (and less than the word's length).
    static func nearest(_ word: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, editDistance(Array(word), Array($0))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2, best.1 < word.count else { return nil }
        return best.0
    }

    /// Levenshtein distance, with a swap of two neighbours counting one (Damerau's "optimal string alignment").
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}

/// A command line the parser refused (exit code 64, JSON code `usage`).
struct UsageError: Error, CLIReportable {
    var message: String
    var hint: String?
    var exitCode: Int32 { Exit.usage }
    var code: String { "usage" }
}

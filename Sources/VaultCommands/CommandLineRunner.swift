import ArgumentParser
import FoundationEssentials
import Glibc

/// Parses and runs a root command as ArgumentParser's `main()` does, with these differences: the options every
/// verb takes may come before the verb (``verbFirst(_:root:)``); usage errors are in vault's error style
/// (`vault: …` and `hint: …`, exit 64) or, with `--json` among the arguments, the JSON error object every other
/// failure is (code `usage`); a mistyped verb names the nearest one, and a peer's verb (`show`, `ls`, `rm`,
/// `insert`, `edit`) names ours.
package enum CommandLineRunner {
    /// Runs `root` with the process's arguments and exits.
    package static func main(_ root: ParsableCommand.Type, arguments: [String] = Array(CommandLine.arguments.dropFirst())) -> Never {
        let arguments = verbFirst(arguments, root: root)
        var command = parse(root, arguments)
        do {
            try command.run()
        } catch {
            failToParse(root, error, arguments: arguments)  // a usage error found by run(), in vault's style
        }
        exit(0)
    }

    /// ``main(_:)`` for a root whose verbs may await; `arguments` without the program's name.
    package static func main(
        _ root: AsyncParsableCommand.Type, arguments: [String] = Array(CommandLine.arguments.dropFirst())
    ) async -> Never {
        let arguments = verbFirst(arguments, root: root)
        var command = parse(root, arguments)
        do {
            if var asynchronous = command as? AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            failToParse(root, error, arguments: arguments)  // a usage error found by run(), in vault's style
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

    /// Reports a parse failure (or an error a verb's run() threw) and exits: help and version requests, and
    /// other errors, as ArgumentParser does; usage errors as text or, with `--json`, as the JSON error object.
    static func failToParse(_ root: ParsableCommand.Type, _ error: Error, arguments: [String]) -> Never {
        // An ExitCode was reported already (or is a child's status, `vault run`): exit with it, say nothing.
        guard !(error is ExitCode), root.exitCode(for: error).rawValue == Exit.usage else { root.exit(withError: error) }
        let json = arguments.prefix { $0 != "--" }.contains("--json")
        let program = root.configuration.commandName ?? "vault"
        var verbs = ["help"]
        for verb in root.configuration.subcommands {
            if let name = verb.configuration.commandName { verbs.append(name) }
        }
        if let first = arguments.first, !first.hasPrefix("-"), !verbs.contains(first) {
            let peer = peerVerbs[first].flatMap { verbs.contains($0) ? $0 : nil }
            let hint = (peer ?? nearest(first, among: verbs)).map { "did you mean '\(program) \($0)'?" }
                ?? "'\(program) --help' lists the verbs"
            exit(report(UsageError(message: "unknown verb '\(first)'", hint: hint), json: json, program: program))
        }
        // vault's error style for ArgumentParser's messages too: `vault: …` and a hint naming the verb's help.
        let path = verbPath(arguments, root: root).joined(separator: " ")
        var message = root.message(for: error)
        if let first = message.first, first.isUppercase, message.dropFirst().first?.isLowercase == true {
            message = first.lowercased() + message.dropFirst()
        }
        exit(report(
            UsageError(message: message, hint: "'\(program)\(path.isEmpty ? "" : " " + path) --help' shows the usage"),
            json: json, program: program))
    }

    /// The verb `arguments` name and each following word that names a sub-verb of the one before (`device
    /// status`); empty when the first argument is no verb.
    static func verbPath(_ arguments: [String], root: ParsableCommand.Type) -> [String] {
        var path: [String] = []
        var candidates = root.configuration.subcommands
        for argument in arguments {
            guard let command = candidates.first(where: { $0.configuration.commandName == argument }) else { break }
            path.append(argument)
            candidates = command.configuration.subcommands
        }
        return path
    }

    /// The options of ``VaultOptions`` (every verb that opens the vault takes them), which may also come before
    /// the verb, as kubectl, docker and gopass accept: the ones taking a value, and the flags.
    static let globalOptionsWithValue: Set<String> = ["--vault", "--passphrase-fd", "--passphrase-file"]
    static let globalFlags: Set<String> = ["--json", "--accept-rollback"]

    /// `arguments` (without the program's name) with the global options that come before the verb moved after the
    /// verb and its sub-verbs (`--vault X list` → `list --vault X`; `--json agent status` → `agent status
    /// --json`), so that ArgumentParser, which takes a verb's options only after it, reads them. Anything else
    /// before the verb (`--help`, `--version`, an unknown option) leaves the arguments as they are.
    package static func verbFirst(_ arguments: [String], root: ParsableCommand.Type) -> [String] {
        var moved: [String] = []
        var index = 0
        while index < arguments.count, arguments[index].hasPrefix("-") {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if globalFlags.contains(argument) || (globalOptionsWithValue.contains(name) && argument.contains("=")) {
                moved.append(argument)
                index += 1
            } else if globalOptionsWithValue.contains(argument), index + 1 < arguments.count {
                moved += [argument, arguments[index + 1]]
                index += 2
            } else {
                return arguments
            }
        }
        guard !moved.isEmpty, index < arguments.count else { return arguments }
        // After the verb and its sub-verbs (an unknown verb: after it, for the error to name it).
        let end = index + max(1, verbPath(Array(arguments[index...]), root: root).count)
        return Array(arguments[index..<end]) + moved + Array(arguments[end...])
    }

    /// The verbs of the tools people come from (pass, gopass, keepassxc-cli, rbw, HashiCorp's vault) that are
    /// ours under another name: suggested for an unknown verb before any edit distance.
    static let peerVerbs: [String: String] = [
        "cat": "get", "read": "get", "ls": "list", "find": "list", "search": "list",
        "rm": "delete", "remove": "delete", "del": "delete", "insert": "put", "add": "put", "edit": "put",
        "set": "put", "write": "put", "pwgen": "generate", "move": "mv", "rename": "mv", "copy": "cp",
    ]

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

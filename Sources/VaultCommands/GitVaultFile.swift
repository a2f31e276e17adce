import FoundationEssentials
import Glibc
import VaultCore
import VaultTerminal

/// The vault's file in a git work tree (issue 33 §5): git stores and checks out its bytes as they are, whatever a
/// committed `.gitattributes` says, and `vault sync` checks that it did.
enum GitVaultFile {
    /// `text` as a gitattributes or gitignore pattern matched literally: spaces and glob characters escaped.
    static func literal(_ text: some StringProtocol) -> String { text.map { "*?[ \\#!".contains($0) ? "\\\($0)" : String($0) }.joined() }

    /// The attributes that make git change a file's bytes between the work tree and the repository.
    static let converting = ["text", "eol", "filter", "ident", "working-tree-encoding"]

    /// The line of `$GIT_DIR/info/attributes` for the vault at `relative`: no conversion, the vault's drivers.
    /// That file comes before every `.gitattributes` (git's highest precedence), and a clone never receives it.
    static func pinnedLine(_ relative: String) -> String {
        "/\(literal(relative)) " + converting.map { "-" + $0 }.joined(separator: " ") + " merge=vault diff=vault"
    }

    /// Appends ``pinnedLine(_:)`` to this clone's `info/attributes` when it is not there; true when it was added.
    static func pin(_ git: Git, top: String, relative: String) throws -> Bool {
        var path = try git.output(["rev-parse", "--git-path", "info/attributes"]).trimmingCharacters(in: .newlines)
        if !path.hasPrefix("/") { path = top + "/" + path }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try !GitCommand.Setup.append([pinnedLine(relative)], to: path).isEmpty
    }

    /// The converting attributes git gives `relative`, as `name: value` (empty when none converts).
    static func conversions(_ git: Git, relative: String) throws -> [String] {
        try git.output(["check-attr"] + converting + ["--", relative]).split(separator: "\n").compactMap { line in
            // "PATH: ATTRIBUTE: VALUE", PATH possibly quoted: the last two fields.
            let fields = line.components(separatedBy: ": ")
            guard fields.count >= 3, !["unspecified", "unset"].contains(fields[fields.count - 1]) else { return nil }
            return fields.suffix(2).joined(separator: ": ")
        }
    }

    /// The attributes that convert the vault, as " (text: set, eol: crlf)", or "" when none is named.
    static func found(_ git: Git, relative: String) -> String {
        let found = ((try? conversions(git, relative: relative)) ?? []).joined(separator: ", ")
        return found.isEmpty ? "" : " (\(TerminalText.escaped(found)))"
    }

    /// What to do about a conversion.
    static func remedy(_ relative: String) -> String {
        "remove what sets \(converting.joined(separator: ", ")) for it ('git check-attr -a -- \(TerminalText.escaped(relative))' shows them), then run 'vault sync' again"
    }

    /// Before a commit of the vault: git would store the work tree's bytes as they are (its attributes and
    /// configuration convert nothing), or nothing is committed.
    static func checkStoredAsIs(_ git: Git, relative: String) throws {
        let stored = try git.output(["hash-object", "--", relative])
        guard stored == (try git.output(["hash-object", "--no-filters", "--", relative])) else {
            throw CLIError.message(
                "git would not store '\(TerminalText.escaped(relative))' as it is: its attributes convert it\(found(git, relative: relative)); nothing is committed or pushed; \(remedy(relative))",
                exitCode: Exit.corrupt)
        }
    }

    /// After git checked out `HEAD`: the work tree's vault holds the bytes of `HEAD:relative`. If git converted
    /// them, the committed bytes are put back (the vault opens again) and the sync stops before it pushes.
    static func checkCheckedOut(_ git: Git, relative: String, path: String) throws {
        let blob = try git.output(["rev-parse", "--verify", "HEAD:" + relative]).trimmingCharacters(in: .newlines)
        let present = try git.output(["hash-object", "--no-filters", "--", relative]).trimmingCharacters(in: .newlines)
        guard present != blob else { return }
        try GitCommand.MergeDriver.replace(path, with: git.blob(blob))
        throw CLIError.message(
            "git changed the bytes of '\(TerminalText.escaped(relative))' as it checked it out: its attributes convert it\(found(git, relative: relative)); the file is put back as committed and nothing is pushed; \(remedy(relative))",
            exitCode: Exit.corrupt)
    }
}

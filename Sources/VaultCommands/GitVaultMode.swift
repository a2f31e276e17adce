import FoundationEssentials
import Glibc
import VaultCore
import VaultSyncCore
import VaultTerminal

/// The vault's mode in a git work tree (issue 33 §4): git writes every file it checks out with the user's umask
/// (0644), and every verb refuses a vault others may read. Hooks that `vault git setup` installs make it 0600 again
/// after git's own commands; `vault sync` and `vault git setup` make it 0600 themselves (a fresh clone).
extension GitVaultFile {
    /// The hooks that run after git rewrote files of the work tree: a checkout or switch (and a clone's, once
    /// installed), a merge or pull, a rebase or amend, and every ref update (`merge --abort`, `reset`, `stash`,
    /// whose work tree is written before their refs).
    static let hooks = ["post-checkout", "post-merge", "post-rewrite", "reference-transaction"]
    /// The line by which a hook is known as vault's.
    static let hookMarker = "# vault git setup: git writes the files it checks out 0644, and a vault must stay 0600."
    /// Where a hook that was there before ours is kept; ours runs it after its own lines, as git would have.
    static let chainedSuffix = ".before-vault"

    /// `path` quoted for sh.
    static func shellQuoted(_ path: String) -> String { "'" + path.replacing("'", with: "'\\''") + "'" }

    /// The hook `name` of vault's, keeping the vaults at `paths` (relative to the work tree's top, where git runs
    /// hooks) 0600: only a regular file of this user's (not a link).
    static func hookScript(_ name: String, paths: [String]) -> String {
        let lines = paths.map { "vault_private \(shellQuoted($0))" }
        // reference-transaction runs at every state of every ref update: its files are written by "committed".
        let body = name == "reference-transaction"
            ? ["if [ \"$1\" = committed ]; then"] + lines.map { "    " + $0 } + ["fi"]
            : lines
        return ([
            "#!/bin/sh",
            hookMarker,
            "vault_private() { [ -f \"$1\" ] && [ ! -h \"$1\" ] && [ -O \"$1\" ] && chmod 600 -- \"$1\"; }",
        ] + body + [
            "# The hook that was here before 'vault git setup' runs as it did (its arguments, its input, its exit).",
            "if [ -x \"$0\(chainedSuffix)\" ]; then exec \"$0\(chainedSuffix)\" \"$@\"; fi",
            "exit 0",
        ]).joined(separator: "\n") + "\n"
    }

    /// Installs ``hooks`` for the vault at `relative` in this clone's hooks directory (idempotent): a hook of
    /// vault's gains the vault's line; another hook is moved to `NAME.before-vault` and run by ours. Returns nil
    /// when `core.hooksPath` names a directory of the user's (a shared or committed one: nothing written there),
    /// else the hooks written.
    static func installHooks(_ git: Git, top: String, relative: String) throws -> [String]? {
        guard try git.run(["config", "core.hooksPath"]).status != 0 else { return nil }
        var directory = try git.output(["rev-parse", "--git-path", "hooks"]).trimmingCharacters(in: .newlines)
        if !directory.hasPrefix("/") { directory = top + "/" + directory }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var written: [String] = []
        for name in hooks {
            let path = directory + "/" + name
            var paths = [relative]
            var info = stat()
            if lstat(path, &info) == 0 {
                let existing = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                if existing.split(separator: "\n").contains(where: { $0 == hookMarker }) {
                    let kept = existing.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                        .filter { $0.hasPrefix("vault_private '") }.compactMap { unquoted(String($0.dropFirst("vault_private ".count))) }
                    if kept.contains(relative) { continue }
                    paths = kept + paths
                } else {
                    guard lstat(path + chainedSuffix, &info) != 0 else {
                        throw CLIError.message(
                            "cannot install git's '\(name)' hook: '\(TerminalText.escaped(path))' is not vault's and '\(TerminalText.escaped(path + chainedSuffix))' exists; merge them by hand",
                            exitCode: Exit.exists)
                    }
                    guard rename(path, path + chainedSuffix) == 0 else { throw VaultError.io(operation: "renaming", path: path, errno: errno) }
                }
            }
            let temporary = path + ".vault.tmp"
            guard FileManager.default.createFile(atPath: temporary, contents: Data(hookScript(name, paths: paths).utf8), attributes: [.posixPermissions: 0o755]) else {
                throw VaultError.io(operation: "writing", path: temporary, errno: errno)
            }
            guard rename(temporary, path) == 0 else {
                let code = errno
                unlink(temporary)
                throw VaultError.io(operation: "renaming over", path: path, errno: code)
            }
            written.append(name)
        }
        return written
    }

    /// The text of a sh single-quoted word written by ``shellQuoted(_:)``, or nil.
    static func unquoted(_ word: String) -> String? {
        guard word.count >= 2, word.hasPrefix("'"), word.hasSuffix("'") else { return nil }
        return String(word.dropFirst().dropLast()).replacing("'\\''", with: "'")
    }

    /// Makes the vault at `path` 0600 when git left it readable by others, and says so on stderr (`shown`: its
    /// path in the repository): only a regular file of this user's (not a link: its target is not ours to change).
    static func makePrivate(_ path: String, shown: String) {
        guard makePrivate(path) else { return }
        writeToStderr("vault: note: '\(shown)' was readable by others (git writes what it checks out 0644): it is 0600 now\n")
    }
}

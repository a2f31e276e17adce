import ArgumentParser
import VaultAgent
import VaultCore
import VaultTerminal

/// Shell completion of entry names (`vault get <Tab>`): the names of the vault that the command line names, when
/// the agent holds it.
///
/// A completion runs on every Tab, with the user's terminal in the middle of a line, so it never asks for a
/// passphrase, never opens the vault file here, never prints an error and never waits long: no agent, a locked
/// vault or any failure completes nothing. Names that would not show as themselves on a terminal (control
/// characters, bidi controls: ``TerminalText``) are left out, as are those that do not start with what is typed.
package enum NameCompletion {
    /// The completion of an argument that names an existing entry.
    package static let existingEntry = CompletionKind.custom { words, _, prefix in
        names(words: words, prefix: prefix)
    }

    /// The names of the vault `words` name (`--vault PATH`, else `$VAULT_PATH`, else the default) that start
    /// with `prefix`, sorted; empty when the agent does not hold that vault.
    package static func names(words: [String], prefix: String) -> [String] {
        let path = VaultOptions.resolvedPath(vaultPath(in: words))
        guard let client = try? AgentClient.connect(), let vault = try? client.vault(at: path),
            let names = try? vault.keys()
        else { return [] }
        return names.filter { $0.hasPrefix(prefix) && TerminalText.escaped($0) == $0 }
    }

    /// The `--vault` of the shell words, if given as a plain word (`--vault PATH` or `--vault=PATH`); a leading
    /// `~/` is the home directory. Shells hand words over verbatim, so a quoted or escaped path is not
    /// unquoted here: it is ignored, and the default vault is completed.
    package static func vaultPath(in words: [String]) -> String? {
        var found: String?
        for (index, word) in words.enumerated() {
            if word == "--vault", index + 1 < words.count {
                found = words[index + 1]
            } else if word.hasPrefix("--vault=") {
                found = String(word.dropFirst("--vault=".count))
            }
        }
        guard var path = found, !path.isEmpty, !path.contains(where: { "'\"\\$`".contains($0) }) else { return nil }
        if path.hasPrefix("~/"), let home = Posix.environment("HOME") { path = home + path.dropFirst(1) }
        return path
    }
}

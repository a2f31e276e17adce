import ArgumentParser
import VaultAgent
import VaultCore

/// Shell completion of entry names (`vault get <Tab>`): the names of the vault that the command line names, when
/// the agent holds it.
///
/// A completion runs on every Tab, in the middle of the user's command line, so:
/// - it never asks for a passphrase and never opens the vault file here: no agent or a locked vault completes
///   nothing, and it prints no error;
/// - it waits 2 s at most for the agent (a stopped agent must not hang the shell), and it is not an activity
///   (pressing Tab keeps no vault unlocked);
/// - it offers only names made of letters, digits, space and `- _ . , / @ + % = :`, not starting with `-`. bash's
///   `compgen -W`, which ArgumentParser's bash script feeds the candidates to, expands each word as the shell
///   would: a name holding `$(…)` or a backquote would run as a command on Tab. Control and bidi characters
///   are left out too, and so are names that do not start with what is typed.
/// - zsh reads `name:description` pairs, so a `:` in a name is escaped for it. bash (`complete -o filenames` in
///   ArgumentParser's script: readline quotes what it inserts), zsh and fish quote a candidate with a space
///   themselves, so `with space` is inserted as `with\ space`, one word.
///
/// In interactive bash, `--vault=PATH` reaches the generated script as three words (bash breaks words at `=`),
/// which the script (ArgumentParser's) does not take for an option and its value, so it completes no names
/// there: `--vault PATH` does.
package enum NameCompletion {
    /// The completion of an argument that names an existing entry.
    package static let existingEntry = CompletionKind.custom { words, _, prefix in
        names(words: words, prefix: prefix, shell: CompletionShell.requesting)
    }

    /// The names offered for `words` (the command line, as the shell hands it over) and `prefix` (what is typed
    /// of the word being completed), formatted for `shell`.
    package static func names(words: [String], prefix: String, shell: CompletionShell?) -> [String] {
        let vaultPath: String?
        switch vaultWord(in: words) {
        case .notGiven: vaultPath = nil
        case .path(let path): vaultPath = path
        case .unusable: return []  // a vault is named, but not so that this can tell which: none is guessed
        }
        let path = VaultOptions.resolvedPath(vaultPath)
        guard let client = try? AgentClient.connect(timeoutSeconds: 2),
            let names = try? client.namesWithoutActivity(at: path)
        else { return [] }
        return names.filter { $0.hasPrefix(prefix) && isOffered($0) }.map {
            // bash (ArgumentParser's script completes with `-o filenames`: readline quotes what it inserts) and
            // fish quote a candidate themselves; zsh needs its `:` escaped.
            shell == .zsh ? zshEscaped($0) : $0
        }
    }


    /// Whether `name` is one that completion offers: letters, digits, space and `- _ . , / @ + % = :` only, and
    /// not starting with `-` (it would read as an option).
    package static func isOffered(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix("-")
            && name.unicodeScalars.allSatisfy { scalar in
                if scalar.isASCII {
                    return (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)) || " -_.,/@+%=:".unicodeScalars.contains(scalar)
                }
                // Beyond ASCII: letters, marks and digits (no symbols, no spaces of other kinds, no format or
                // control characters: nothing a shell or a terminal reads as anything but text), and none that
                // shows as nothing (Hangul filler, grapheme joiner, variation selectors: two names would look alike).
                if scalar.properties.isDefaultIgnorableCodePoint { return false }
                switch scalar.properties.generalCategory {
                case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
                    .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber:
                    return true
                default:
                    return false
                }
            }
    }

    /// `name` for zsh's `_describe`, where `:` separates a candidate from its description.
    static func zshEscaped(_ name: String) -> String {
        name.replacing(":", with: "\\:")
    }

    /// How the shell words name the vault.
    package enum VaultWord: Equatable, Sendable {
        /// No `--vault`: `$VAULT_PATH` or the default.
        case notGiven
        /// `--vault PATH` or `--vault=PATH` as a plain word (a leading `~/` is the home directory).
        case path(String)
        /// `--vault` with a quoted, escaped or expanded word, or with nothing after it: shells hand words over
        /// verbatim, and this does not play the shell.
        case unusable
    }

    /// The `--vault` of the shell words (the last one, as the parser takes it).
    package static func vaultWord(in words: [String]) -> VaultWord {
        var found: String??
        for (index, word) in words.enumerated() {
            if word == "--vault" {
                found = index + 1 < words.count ? .some(words[index + 1]) : .some(nil)
            } else if word.hasPrefix("--vault=") {
                found = .some(String(word.dropFirst("--vault=".count)))
            }
        }
        guard let given = found else { return .notGiven }
        guard var path = given, !path.isEmpty, !path.contains(where: { "'\"\\$`".contains($0) }) else { return .unusable }
        if path.hasPrefix("~/"), let home = Posix.environment("HOME") { path = home + path.dropFirst(1) }
        return .path(path)
    }
}

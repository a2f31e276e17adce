import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore
import VaultSyncCore
import VaultTerminal

/// Failures of the CLI itself (the library's are ``VaultError``).
package enum CLIError: Error, CustomStringConvertible {
    case noPassphraseSource
    case emptyPassphrase
    case passphrasesDiffer
    /// No entry `name`; `suggestions`: the vault's names closest to it (``missingEntry(_:in:)``).
    case noSuchEntry(name: String, path: String, suggestions: [String] = [])
    /// `put` read nothing from a pipe or file for an entry that exists.
    case emptyInput(name: String)
    case message(String, exitCode: Int32)
    /// `restore NAME --deleted`: a deletion keeps a change of `name`, and a live entry has that name now.
    case deletedNameTaken(name: String, path: String)

    package var description: String {
        switch self {
        case .noPassphraseSource:
            return "no passphrase: there is no terminal to ask on"
        case .emptyPassphrase:
            return "the passphrase is empty"
        case .passphrasesDiffer:
            return "the passphrases do not match"
        case .noSuchEntry(let name, let path, _):
            return "no entry '\(name)' in vault '\(path)'"
        case .emptyInput(let name):
            return "the input was empty: '\(name)' keeps its value"
        case .message(let text, _):
            return text
        case .deletedNameTaken(let name, let path):
            return "cannot restore '\(name)' as it was before its deletion: an entry '\(name)' exists in vault '\(path)'"
        }
    }

    package var hint: String? {
        switch self {
        case .noPassphraseSource:
            return "run 'vault unlock' once, or pass --passphrase-fd N or --passphrase-file PATH, or set VAULT_PASSPHRASE"
        case .noSuchEntry(_, _, let suggestions) where !suggestions.isEmpty:
            return "did you mean " + suggestions.map { "'\($0)'" }.joined(separator: " or ") + "? ('vault list' shows the names)"
        case .noSuchEntry:
            return "'vault list' shows the names"
        case .emptyInput:
            return "--allow-empty stores an empty value"
        case .deletedNameTaken(let name, _):
            return "rename that entry first ('vault mv \(name) NEW-NAME'), then restore; 'vault list --deleted' lists what deletions kept"
        default:
            return nil
        }
    }
}

/// The fixed exit codes listed in `vault --help`.
package enum Exit {
    package static let failure: Int32 = 1
    package static let notFound: Int32 = 2
    package static let authentication: Int32 = 3
    package static let permissions: Int32 = 4
    package static let busy: Int32 = 5
    package static let corrupt: Int32 = 6
    package static let exists: Int32 = 7
    package static let usage: Int32 = 64
}

/// How the command line presents an error: the words for users live here, at the CLI edge, not in the
/// libraries (age's `errorWithHint`). One conformance per error type; `vault-net` adds the network ones.
package protocol CLIReportable: Error {
    /// The exit code (``Exit``).
    var exitCode: Int32 { get }
    /// A stable snake_case code for `--json`.
    var code: String { get }
    /// One line that starts with what failed and quotes the object.
    var message: String { get }
    /// What the user can do, when there is something.
    var hint: String? { get }
    /// More members of the `--json` error object (e.g. `suggestions`), beside code, exit_code, message, hint.
    var details: [String: Any] { get }
}

extension CLIReportable {
    package var details: [String: Any] { [:] }
}

extension CLIReportable where Self: CustomStringConvertible {
    package var message: String { description }
}

extension VaultError: CLIReportable {
    /// A corrupt file's rule (docs/FORMAT.md's name of the check it failed: `bad_clock`, `bad_field`, …) beside
    /// the code `corrupt`, for programs; a mass deletion names every entry it would delete (the message shows five).
    package var details: [String: Any] {
        if case .corrupt(_, let reason) = self { return ["rule": reason.code] }
        if case .massDeletion(_, let names) = self { return ["names": names] }
        return [:]
    }

    package var exitCode: Int32 {
        switch self {
        case .wrongPassphrase, .wrongIdentity: return Exit.authentication
        case .corrupt, .unsupportedVersion, .unsupportedKDF, .kdfParametersOutOfRange, .rollbackDetected,
            .retiredKey, .otherVault, .missingOwnWrites, .notTheSameVault, .behindHorizon, .unauthorizedKey, .staleKey, .clockAhead, .untrustedCopy:
            return Exit.corrupt
        case .keyChanged, .otherKey, .notARecipient, .removedRecipient: return Exit.authentication
        case .noSuchEntry, .noSuchVersion, .noSuchField: return Exit.notFound
        case .entryExists, .fieldExists: return Exit.exists
        case .needsVersion2: return Exit.usage
        case .unsafePermissions: return Exit.permissions
        case .busy, .storageConflict: return Exit.busy
        case .invalidEntryName, .invalidFileName, .invalidFieldName: return Exit.usage
        case .vaultNotFound, .vaultAlreadyExists, .notOpen, .valueTooLarge, .typeMismatch, .io, .cryptoFailure,
            .vaultTooLarge, .generationExhausted, .clockExhausted, .massDeletion:
            return Exit.failure
        }
    }

    package var code: String {
        switch self {
        case .wrongPassphrase: return "wrong_passphrase"
        case .wrongIdentity: return "wrong_identity"
        case .corrupt: return "corrupt"
        case .unsupportedVersion: return "unsupported_version"
        case .unsupportedKDF: return "unsupported_kdf"
        case .kdfParametersOutOfRange: return "kdf_parameters_out_of_range"
        case .unsafePermissions: return "unsafe_permissions"
        case .busy: return "busy"
        case .invalidEntryName: return "invalid_name"
        case .invalidFileName: return "invalid_file_name"
        case .vaultNotFound: return "no_vault"
        case .vaultAlreadyExists: return "vault_exists"
        case .notOpen: return "not_open"
        case .valueTooLarge: return "value_too_large"
        case .typeMismatch: return "type_mismatch"
        case .io: return "io_error"
        case .cryptoFailure: return "crypto_failure"
        case .rollbackDetected: return "rollback_detected"
        case .retiredKey: return "retired_key"
        case .otherVault: return "other_vault"
        case .keyChanged: return "key_changed"
        case .otherKey: return "other_key"
        case .noSuchEntry: return "no_such_entry"
        case .entryExists: return "entry_exists"
        case .vaultTooLarge: return "vault_too_large"
        case .generationExhausted: return "generation_exhausted"
        case .invalidFieldName: return "invalid_field_name"
        case .noSuchVersion: return "no_such_version"
        case .noSuchField: return "no_such_field"
        case .fieldExists: return "field_exists"
        case .needsVersion2: return "needs_version_2"
        case .clockExhausted: return "clock_exhausted"
        case .storageConflict: return "storage_conflict"
        case .missingOwnWrites: return "missing_own_writes"
        case .notTheSameVault: return "not_the_same_vault"
        case .behindHorizon: return "behind_horizon"
        case .unauthorizedKey: return "unauthorized_key"
        case .staleKey: return "stale_key"
        case .notARecipient: return "not_a_recipient"
        case .removedRecipient: return "removed_recipient"
        case .clockAhead: return "clock_ahead"
        case .untrustedCopy: return "untrusted_copy"
        case .massDeletion: return "mass_deletion"
        }
    }

    package var hint: String? {
        switch self {
        case .unsafePermissions(let path, _, let hint):
            // A vault git checked out 0644: setup makes it 0600, and its hooks keep it so after git's next checkouts.
            if hint == "run: chmod 600 '\(path)'", !path.hasSuffix(".lock"), let top = Self.workTree(holding: path) {
                return "it is in the git clone '\(TerminalText.escaped(top))', and git writes what it checks out 0644: run: vault git setup --vault '\(TerminalText.escaped(path))' (it makes the vault 0600 and keeps it so)"
            }
            return hint
        case .vaultNotFound(let path):
            // A fresh clone holding a vault: 'vault init' would make a second, empty one.
            if path == VaultPointer.defaultVault, let clone = GitVaultFile.cloneVaults(from: FileManager.default.currentDirectoryPath), !clone.vaults.isEmpty {
                return clone.vaults.count == 1
                    ? "this git clone holds \(GitVaultFile.listed(clone.vaults)): run 'vault git setup' to make it this machine's vault"
                    : "this git clone holds vaults \(GitVaultFile.listed(clone.vaults)): run 'vault git setup --vault PATH' with the one to make this machine's vault"
            }
            if path == VaultPointer.read() {
                return "'vault git setup' recorded it as this machine's vault in '\(TerminalText.escaped(VaultPointer.path))': clone its repository there again, or remove that file to use the default vault"
            }
            return "create one with 'vault init', or pass --vault PATH"
        case .behindHorizon:
            return "the older copy missed deletions and has changes of its own: replace it with the newer one (copy the file, or clone again) and make its changes again there ('vault export' from it shows them); nothing was merged"
        case .wrongPassphrase: return "check the passphrase; a damaged file gives the same error"
        case .wrongIdentity:
            return "'vault recipients list' shows who the vault is shared with; 'vault identity show' prints your recipient (age1...)"
        case .busy: return "another vault command is running; try again"
        case .retiredKey(_, .recipientRemoval):
            return "'vault sync' (or git's pull) brings the current version, which only the vault's current recipients open; "
                + "if you restored this copy on purpose (a backup), pass --accept-rollback once"
        case .rollbackDetected(let path, _, _):
            // A vault git tracks: git's own restore of the file is the likely older copy, and what it discarded is
            // in no copy git keeps unless it was committed. The agent does not take a rollback: it opens here.
            if let top = Self.workTree(holding: path) {
                return "it is in the git work tree '\(TerminalText.escaped(top))': if a 'git restore', 'git checkout' or 'git reset' of it put back the copy git had, "
                    + "that discarded the changes made since (those never committed are in no copy git keeps); to take the copy git put back, "
                    + "pass --accept-rollback once with the passphrase (it does not go through the agent: on a terminal, or --passphrase-file PATH "
                    + "or --passphrase-fd N), then run 'vault sync'"
            }
            return "if you restored this copy on purpose (a backup), pass --accept-rollback once"
        case .retiredKey:
            return "if you restored this copy on purpose (a backup), pass --accept-rollback once"
        case .otherVault:
            return "a key change made on another machine is taken by 'vault sync' or 'vault merge FILE' (they check its key "
                + "links): put this machine's own file back and run one of them; only if you put another vault here on purpose, "
                + "pass --accept-rollback once"
        case .keyChanged: return "run the command again with the new passphrase"
        case .otherKey(_, .recipientRemoval):
            return "give the vault's passphrase as that copy has it with --other-passphrase-file or --other-passphrase-fd (asked on a terminal); the result then has that copy's key"
        case .otherKey: return "give that copy's passphrase with --other-passphrase-file or --other-passphrase-fd (asked on a terminal); the result then has that copy's passphrase"
        case .missingOwnWrites:
            return "merge the copy that has them into this one ('vault merge OTHER'); to take this copy as it is, pass --accept-rollback once"
        case .unauthorizedKey:
            return "a key change made on another machine carries a link signed with this vault's key; this copy has none: whoever wrote it does not hold the vault's key (check who can write where you sync); if it was put in the vault's place, put the vault's own file back (--accept-rollback does not take it)"
        case .staleKey:
            return "ask its machine to take this vault's key change first ('vault sync', or 'vault merge' of this vault's file: it follows the change and writes its changes under the new key), then merge or sync again"
        case .notARecipient:
            return "ask someone who holds the vault to add your recipient ('vault recipients add'); 'vault identity show' prints it"
        case .removedRecipient: return "'vault identity show' prints your recipient (age1...), for the owner's 'vault recipients add'"
        case .noSuchEntry: return "'vault list' shows the names"
        case .clockAhead:
            return "the machine that wrote that copy has (or had) its clock set wrong: set it right, run 'vault repair --clocks' there, and merge again; nothing was merged"
        case .untrustedCopy:
            return "a copy that someone altered, or one taken from another vault's history; nothing was merged"
        case .massDeletion:
            return "'vault merge --dry-run' lists them; pass --accept-deletions if the other copy deleted them on purpose (each stays listed in its history elsewhere)"
        case .clockExhausted:
            return "'vault repair --clocks' brings clocks from the future back to now (values and history kept)"
        case .noSuchField: return "'vault show NAME' shows the entry's fields"
        case .noSuchVersion: return "'vault history NAME' shows the versions"
        case .needsVersion2: return "'vault upgrade' converts the vault to format version 3 (an older vault cannot open it then)"
        case .kdfParametersOutOfRange:
            return "accepted: opslimit 2...4 and memlimit 64 MiB...1 GiB (interactive...sensitive)"
        default: return nil
        }
    }
}

extension VaultError {
    /// The top of the git work tree whose index holds the file `path` (git checked it out), if any: a vault in a
    /// directory that merely lies inside one (a home kept in git) is not git's.
    static func workTree(holding path: String) -> String? {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let git = Git(directory: directory)
        guard let top = (try? git.output(["rev-parse", "--show-toplevel"]))?.trimmingCharacters(in: .newlines), top.hasPrefix("/"),
              (try? git.run(["ls-files", "--error-unmatch", "--", URL(fileURLWithPath: path).lastPathComponent]))?.status == 0
        else { return nil }
        return top
    }
}

extension CLIError: CLIReportable {
    package var details: [String: Any] {
        if case .noSuchEntry(_, _, let suggestions) = self, !suggestions.isEmpty { return ["suggestions": suggestions] }
        return [:]
    }

    /// ``noSuchEntry(name:path:suggestions:)`` for `name` in `vault`, with the names closest to it: those at the
    /// smallest edit distance, if it is at most 2 (and less than the name's length; letter case ignored), at most
    /// three. Names only:
    /// no value is read. A vault whose names cannot be listed gives no suggestion, never another error.
    package static func missingEntry(_ name: String, in vault: any KeyValueVault) -> CLIError {
        let names = (try? vault.keys()) ?? []
        return .noSuchEntry(name: name, path: vault.path, suggestions: closest(to: name, among: names))
    }

    /// The names `name` may have meant: those whose last path component is `name`'s (`github` → `web/github`,
    /// `totp/github`), then those within two typos of it; at most 5.
    static func closest(to name: String, among names: [String]) -> [String] {
        let leaf = name.split(separator: "/").last.map { $0.lowercased() } ?? ""
        let sameLeaf = names.filter { candidate in
            candidate != name && candidate.split(separator: "/").last.map { $0.lowercased() } == leaf && !leaf.isEmpty
        }.sorted()
        return Array((sameLeaf + typos(of: name, among: names).filter { !sameLeaf.contains($0) }).prefix(5))
    }

    static func typos(of name: String, among names: [String]) -> [String] {
        let word = Array(name.lowercased())
        let scored = names.compactMap { candidate -> (String, Int)? in
            guard candidate != name else { return nil }
            let distance = CommandLineRunner.editDistance(word, Array(candidate.lowercased()))
            return distance <= 2 && distance < word.count ? (candidate, distance) : nil
        }
        guard let best = scored.map(\.1).min() else { return [] }
        return scored.filter { $0.1 == best }.map(\.0).sorted().prefix(3).map { $0 }
    }
    package var exitCode: Int32 {
        switch self {
        case .noPassphraseSource: return Exit.failure
        case .emptyPassphrase: return Exit.usage
        case .passphrasesDiffer: return Exit.failure
        case .noSuchEntry: return Exit.notFound
        case .emptyInput: return Exit.failure
        case .message(_, let exitCode): return exitCode
        case .deletedNameTaken: return Exit.exists
        }
    }

    package var code: String {
        switch self {
        case .noPassphraseSource: return "no_passphrase_source"
        case .emptyPassphrase: return "empty_passphrase"
        case .passphrasesDiffer: return "passphrases_differ"
        case .noSuchEntry: return "no_such_entry"
        case .emptyInput: return "empty_input"
        case .message: return "error"
        case .deletedNameTaken: return "entry_exists"
        }
    }
}

extension SecretInputError: CLIReportable {
    package var exitCode: Int32 {
        switch self {
        case .tooLong, .severalLines: return Exit.failure
        case .descriptorNotOpen: return Exit.usage
        }
    }

    package var code: String {
        switch self {
        case .tooLong: return "input_too_long"
        case .descriptorNotOpen: return "descriptor_not_open"
        case .severalLines: return "several_lines"
        }
    }

    package var hint: String? {
        switch self {
        case .tooLong: return nil
        case .severalLines: return "for a value of several lines: 'vault put --multiline NAME' (end with Ctrl-D), or 'vault put NAME < FILE'"
        case .descriptorNotOpen(let fd): return "open it for the program, e.g. '\(fd)<FILE' or '\(fd)<<<\"$VAR\"' in the shell"
        }
    }
}

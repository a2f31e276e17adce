import FoundationEssentials
import VaultTerminal

/// git's raw errors that a user meets first, in our words with what to do (git's own text, run with `LC_ALL=C`, is
/// recognised by its words; anything else is reported as git wrote it). Beside the sync library's ``GitFailure``:
/// these are the words of `vault git setup` and of any git command's failure the library reports as it came.
struct GitRawError: Error, CLIReportable, Equatable {
    enum Kind: Equatable {
        /// `fatal: not a git repository (or any of the parent directories): .git`
        case notARepository
        /// `fatal: your current branch 'main' does not have any commits yet`, `ambiguous argument 'HEAD'`,
        /// `Needed a single revision` for HEAD.
        case noCommitYet
    }

    let kind: Kind
    /// Where git ran, when known.
    let directory: String?

    init?(_ gitText: String, directory: String?) {
        if gitText.contains("not a git repository") {
            kind = .notARepository
        } else if gitText.contains("does not have any commits yet") || gitText.contains("ambiguous argument 'HEAD'")
                    || gitText.contains("bad revision 'HEAD'") || gitText.contains("Needed a single revision") || gitText.contains("invalid object name 'HEAD'") {
            kind = .noCommitYet
        } else {
            return nil
        }
        self.directory = directory
    }

    init(_ kind: Kind, directory: String?) {
        self.kind = kind
        self.directory = directory
    }

    var exitCode: Int32 { Exit.usage }
    var code: String { kind == .notARepository ? "not_a_git_repository" : "no_commit_yet" }
    var message: String {
        switch kind {
        case .notARepository:
            return directory.map { "'\(TerminalText.escaped($0))' is not in a git repository" } ?? "not in a git repository"
        case .noCommitYet:
            return directory.map { "the git repository at '\(TerminalText.escaped($0))' has no commit yet" } ?? "the git repository has no commit yet"
        }
    }
    var hint: String? {
        switch kind {
        case .notARepository:
            return "clone the repository (git clone URL) or make one (git init), then run 'vault git setup --vault PATH' inside it: it moves the vault there"
        case .noCommitYet:
            return "'vault sync' (without --dry-run) makes the first commit, of the vault and what 'vault git setup' wrote; or pull one from the remote (git pull REMOTE BRANCH)"
        }
    }
}

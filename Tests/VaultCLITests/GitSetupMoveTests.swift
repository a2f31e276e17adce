import Foundation
import Testing
@testable import VaultCommands
import VaultSyncCore
import VaultTestSupport

/// Issue 35 §4: an existing vault into a repository in one command (`vault git setup --vault PATH` run inside a
/// clone moves it there), and git's raw errors in our words, with the real git.
@Suite(.processTimeLimit) struct GitSetupMoveTests {
    static let gitTool = findTool("git")
    static var runs: Bool { gitTool != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    func git(_ arguments: [String], in directory: String) throws {
        let result = try CLI.exec(try #require(Self.gitTool, "git is needed (CI=true)"), ["-C", directory] + arguments)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
    }

    @Test(.enabled(if: runs, "needs git: scripts/install-deps --test"))
    func setupMovesAVaultFromOutsideIntoTheCloneItRunsIn() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8)).status == 0)
        // The sandbox's path as vault shows it (standardized: no "//").
        let base = URL(fileURLWithPath: box.directory).standardizedFileURL.path
        let repository = base + "/repo"
        try FileManager.default.createDirectory(atPath: repository, withIntermediateDirectories: true)

        // Not in a repository, and run from outside one: our words, and how.
        let outside = try CLI.shell("cd '\(box.directory)' && exec \"$VAULT\" git setup", environment: box.environment)
        #expect(outside.status == 64 && outside.stdout.isEmpty)
        #expect(outside.stderr == """
            vault: '\(base)/vaults' is not in a git repository
            hint: clone the repository (git clone URL) or make one (git init), then run 'vault git setup --vault PATH' inside it: it moves the vault there

            """, "\(outside.stderr)")
        #expect(FileManager.default.fileExists(atPath: box.vaultPath))

        try git(["init", "-q"], in: repository)
        let moved = try CLI.shell("cd '\(repository)' && exec \"$VAULT\" git setup --vault '\(box.vaultPath)'", environment: box.environment)
        let target = repository + "/test.vault"
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(moved.stdoutText.hasPrefix("moved the vault to '\(target)' ('vault sync' commits it); from now on give --vault '\(target)' or set VAULT_PATH to it\ngit merges 'test.vault' entry by entry in this clone"), "\(moved.stdoutText)")
        #expect(!FileManager.default.fileExists(atPath: box.vaultPath) && FileManager.default.fileExists(atPath: target))
        let attributes = try String(contentsOfFile: repository + "/.gitattributes", encoding: .utf8)
        #expect(attributes.contains("/test.vault merge=vault diff=vault"))
        let read = try CLI.run(["get", "k", "--vault", target, "--passphrase-file", box.passphraseFile], environment: box.environment)
        #expect(read.status == 0 && read.stdoutText == "v", "\(read.stderr)")

        // A name taken in the clone: refused, nothing moved.
        let again = try Sandbox()
        try again.initVault()
        let taken = try CLI.shell("cd '\(repository)' && exec \"$VAULT\" git setup --vault '\(again.vaultPath)'", environment: again.environment)
        #expect(taken.status == 7 && taken.stderr == "vault: cannot move the vault into '\(repository)': '\(target)' exists\n", "\(taken.stderr)")
        #expect(FileManager.default.fileExists(atPath: again.vaultPath))
    }

    @Test(.enabled(if: runs, "needs git: scripts/install-deps --test"))
    func gitsRawErrorsBecomeOurs() throws {
        let box = try Sandbox()
        let repository = box.directory + "/empty"
        try FileManager.default.createDirectory(atPath: repository, withIntermediateDirectories: true)
        // git's own words, as the library reports them (SyncError.git(.failed)), recognised and said in ours.
        func failure(_ arguments: [String]) -> SyncError? {
            do { _ = try Git(directory: repository).output(arguments); return nil } catch { return error as? SyncError }
        }
        let outside = try #require(failure(["rev-parse", "--show-toplevel"]))
        #expect(outside.message == "not in a git repository" && outside.exitCode == 64 && outside.hint?.hasPrefix("clone the repository") == true)
        try git(["init", "-q"], in: repository)
        for arguments in [["rev-parse", "--verify", "HEAD"], ["log", "-1"]] {
            let empty = try #require(failure(arguments))
            #expect(empty.message == "the git repository has no commit yet", "\(arguments)")
        }
        #expect(GitRawError(.noCommitYet, directory: "/r").message == "the git repository at '/r' has no commit yet")
    }
}

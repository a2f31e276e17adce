import Foundation
import Testing
import VaultCore
import VaultTestSupport

/// Issue 33 §1 through the real binary, real `age` and copies forged from docs/FORMAT.md's bytes
/// (`Tests/Interop/forge_copy.py`): a copy never hands the vault a key. A stranger who knows only the vault id and a
/// teammate's recipient, and a removed teammate forking from the key the removal retired, are refused before any key
/// of their copy is asked for, with nothing written; a removed teammate is told so instead of asked for a passphrase.
@Suite("Key changes: no copy hands the vault a key (CLI)", .serialized)
struct KeyChangeCLITests {
    static let python = findTool("python3")
    static var ready: Bool { RecipientCLITests.hasAge && python != nil }
    static let needs: Comment = "needs age and python3 with PyNaCl and cryptography: scripts/install-deps --test"
    static let forger = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/forge_copy.py").path

    typealias Team = RecipientCLITests.Team

    /// A copy forged from the spec: `target`'s vault id and generation + 1, a data key of its own wrapped with
    /// `age -r` for `recipients`, one entry; with `fork` (and the removed teammate's identity), a key link from the
    /// key of that older copy, signed with it.
    static func forge(_ team: Team, target: String, recipients: [String], fork: (copy: String, identity: String)? = nil) throws -> String {
        let out = team.box.directory + "/forged-\(UUID().uuidString).vault"
        var arguments = [forger, target, out] + recipients.flatMap { ["-r", $0] }
        if let fork { arguments += ["--fork", fork.copy, "--identity", fork.identity] }
        let (status, output) = try runTool(python!, arguments)
        try #require(status == 0, "\(output)")
        return out
    }

    /// A team whose owner made a vault holding "github", shared with `recipients` (of the team's keys).
    static func sharedVault(_ recipients: (Team) -> [String]) throws -> Team {
        let team = try Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        #expect(try team.owner(["recipients", "add"] + recipients(team)).status == 0)
        return team
    }

    static func keep(_ team: Team, _ name: String) throws -> String {
        let path = team.box.directory + "/" + name
        try Data(team.bytes).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        return path
    }

    /// The attack: the stranger's copy, sealed for the teammate and herself at generation + 1. The teammate's
    /// `vault merge COPY --identity KEY` and the owner's merge with a passphrase for it are refused (exit 6, the new
    /// error, no prompt); the vault file is byte-identical and the owner's passphrase still opens it.
    @Test(.enabled(if: ready, needs))
    func aStrangersCopyIsRefusedWithNothingWritten() throws {
        let team = try Self.sharedVault { [$0.recipient] }
        let strangerRecipient = try Team.recipient(of: team.stranger)
        let copy = try Self.forge(team, target: team.box.vaultPath, recipients: [team.recipient, strangerRecipient])
        let before = team.bytes

        let merged = try team.with(team.key, ["merge", copy], machine: "teammate")
        #expect(merged.status == 6, "\(merged.stdoutText) \(merged.stderr)")
        #expect(merged.stderr.contains("'\(copy)' is sealed under a key this vault did not hand over: nothing merged"), "\(merged.stderr)")
        #expect(!merged.stderr.contains("passphrase"), "\(merged.stderr)")
        let json = try team.with(team.key, ["merge", copy, "--json"], machine: "teammate")
        #expect(json.status == 6 && json.stderr.contains("\"unauthorized_key\""), "\(json.stderr)")
        // Even a passphrase offered for the copy is never used: refused the same way.
        let withPassphrase = try team.owner(["merge", copy, "--other-passphrase-file", team.box.passphraseFile])
        #expect(withPassphrase.status == 6 && withPassphrase.stderr.contains("did not hand over"), "\(withPassphrase.stderr)")
        #expect(team.bytes == before)
        #expect(try team.owner(["get", "github"]).stdoutText == "t0k3n")
        #expect(try team.with(team.key, ["get", "github"], machine: "teammate").stdoutText == "t0k3n")
        #expect(try team.with(team.stranger, ["list"], machine: "stranger").status == 3)
    }

    /// Issue 33 §1, the file itself replaced (a `git pull` fast-forward runs no merge driver; Syncthing; a copy): the
    /// stranger's copy put in the vault's place on the teammate's machine is refused at open, `unauthorized_key` (exit
    /// 6), and `--accept-rollback` does not take it (before, `other_vault`, whose hint said to pass it, and her key
    /// became the vault's); the hint no longer says a passphrase change elsewhere looks like that. The vault's own file,
    /// put back, opens as before.
    @Test(.enabled(if: ready, needs))
    func aStrangersFilePutInTheVaultsPlaceIsRefusedEvenWithAcceptRollback() throws {
        let team = try Self.sharedVault { [$0.recipient] }
        #expect(try team.with(team.key, ["list"], machine: "teammate").status == 0)
        let own = try Self.keep(team, "own.vault")
        let copy = try Self.forge(team, target: team.box.vaultPath, recipients: [team.recipient, try Team.recipient(of: team.stranger)])
        try Data(contentsOf: URL(fileURLWithPath: copy)).write(to: URL(fileURLWithPath: team.box.vaultPath))
        let refused = try team.with(team.key, ["list", "--json"], machine: "teammate")
        #expect(refused.status == 6 && refused.stdout.isEmpty && refused.stderr.contains("\"unauthorized_key\""), "\(refused.stderr)")
        let accepted = try team.with(team.key, ["list", "--accept-rollback"], machine: "teammate")
        #expect(accepted.status == 6 && accepted.stdout.isEmpty, "\(accepted.stdoutText) \(accepted.stderr)")
        #expect(accepted.stderr.contains("did not hand over") && accepted.stderr.contains("--accept-rollback does not take it"), "\(accepted.stderr)")
        #expect(!accepted.stderr.contains("changed its passphrase"), "\(accepted.stderr)")
        try Data(contentsOf: URL(fileURLWithPath: own)).write(to: URL(fileURLWithPath: team.box.vaultPath))
        #expect(try team.with(team.key, ["get", "github"], machine: "teammate").stdoutText == "t0k3n")
    }

    /// A legitimate key change (the owner removes a recipient, then changes the passphrase) reaching the teammate's
    /// machine as the file itself, as a `git pull` fast-forward brings it: opened with no flag (its links lead from the
    /// key the teammate's record holds), the old key retired there (the old file put back is `retired_key`).
    @Test(.enabled(if: ready, needs))
    func aKeyChangeArrivingAsTheFileIsTakenWithNoFlag() throws {
        let team = try Self.sharedVault { [$0.recipient, $0.otherRecipient] }
        #expect(try team.with(team.key, ["list"], machine: "teammate").status == 0)
        let old = try Self.keep(team, "old.vault")
        #expect(try team.owner(["recipients", "remove", team.otherRecipient]).status == 0)
        let newPassphrase = team.box.directory + "/new-passphrase"
        try team.box.write("a new passphrase\n", to: newPassphrase)
        #expect(try team.owner(["passwd", "--new-passphrase-file", newPassphrase]).status == 0)
        let read = try team.with(team.key, ["get", "github"], machine: "teammate")
        #expect(read.status == 0 && read.stdoutText == "t0k3n", "\(read.stderr)")
        try Data(contentsOf: URL(fileURLWithPath: old)).write(to: URL(fileURLWithPath: team.box.vaultPath))
        let putBack = try team.with(team.key, ["list", "--json"], machine: "teammate")
        #expect(putBack.status == 6 && putBack.stderr.contains("\"retired_key\""), "\(putBack.stderr)")
    }

    /// A removed teammate keeps the key the removal retired (his stanza in an old copy, `age -d`): a copy under a key
    /// of his own, with a valid link signed by that retired key, is refused by the owner and by the kept teammate.
    @Test(.enabled(if: ready, needs))
    func aRemovedTeammatesForkFromTheRetiredKeyIsRefused() throws {
        let team = try Self.sharedVault { [$0.recipient, $0.otherRecipient] }
        let old = try Self.keep(team, "old.vault")
        #expect(try team.owner(["recipients", "remove", team.otherRecipient]).status == 0)
        let before = team.bytes
        let fork = try Self.forge(team, target: team.box.vaultPath, recipients: [team.otherRecipient, team.recipient],
                                  fork: (old, team.other))
        let byTeammate = try team.with(team.key, ["merge", fork], machine: "teammate")
        #expect(byTeammate.status == 6 && byTeammate.stderr.contains("did not hand over"), "\(byTeammate.stderr)")
        let byOwner = try team.owner(["merge", fork, "--other-passphrase-file", team.box.passphraseFile])
        #expect(byOwner.status == 6 && byOwner.stderr.contains("did not hand over"), "\(byOwner.stderr)")
        // A key of his own with no link at all: the same.
        let plain = try Self.forge(team, target: team.box.vaultPath, recipients: [team.otherRecipient, team.recipient])
        #expect(try team.with(team.key, ["merge", plain], machine: "teammate").status == 6)
        #expect(team.bytes == before)
        #expect(try team.owner(["get", "github"]).stdoutText == "t0k3n")
        #expect(try team.with(team.key, ["get", "github"], machine: "teammate").stdoutText == "t0k3n")
        #expect(try team.with(team.other, ["get", "github"], machine: "removed").status == 3)
    }

    /// The removed teammate merges the owner's vault into his old copy: told that his identity is no longer a
    /// recipient (exit 3), not asked for "its passphrase" nor told the passphrase is wrong. A kept teammate's copy
    /// follows the same removal with its identity alone; so does a passphrase change, with the new passphrase.
    @Test(.enabled(if: ready, needs))
    func aRemovedTeammateIsToldSoAndLegitimateChangesFlow() throws {
        let team = try Self.sharedVault { [$0.recipient, $0.otherRecipient] }
        let his = try Self.keep(team, "his.vault"), kept = try Self.keep(team, "kept.vault"), third = try Self.keep(team, "third.vault")
        #expect(try team.owner(["recipients", "remove", team.otherRecipient]).status == 0)
        #expect(try team.owner(["put", "after"], stdin: Data("a".utf8)).status == 0)
        let state = { (machine: String) in ["XDG_STATE_HOME": team.box.directory + "/state-" + machine] }

        let removed = try team.box.vault(["merge", team.box.vaultPath, "--vault", his, "--identity", team.other], passphrase: false,
                                         extraEnvironment: state("removed"))
        #expect(removed.status == 3, "\(removed.stderr)")
        // The key link's reason (a recipient's removal) names what happened (issue 35, walkthrough finding 6).
        #expect(removed.stderr == """
            vault: this identity was removed from the vault (its key rotated at a recipient's removal; '\(team.box.vaultPath)' has no stanza for it): it opens no later version; ask the owner to add it again
            hint: 'vault identity show' prints your recipient (age1...), for the owner's 'vault recipients add'

            """)
        #expect(!removed.stderr.contains("passphrase") && !removed.stderr.contains("rollback"), "\(removed.stderr)")

        let followed = try team.box.vault(["merge", team.box.vaultPath, "--vault", kept, "--identity", team.key], passphrase: false,
                                          extraEnvironment: state("kept"))
        #expect(followed.status == 0, "\(followed.stderr)")
        #expect(try team.box.vault(["get", "after", "--vault", kept, "--identity", team.key], passphrase: false,
                                   extraEnvironment: state("kept")).stdoutText == "a")

        // A passphrase change on the owner's machine reaches a copy through its new passphrase.
        let newPassphrase = team.box.directory + "/new-passphrase"
        try team.box.write("a new passphrase\n", to: newPassphrase)
        #expect(try team.owner(["passwd", "--new-passphrase-file", newPassphrase]).status == 0)
        let viaPassphrase = try team.box.vault(["merge", team.box.vaultPath, "--vault", third, "--other-passphrase-file", newPassphrase],
                                               extraEnvironment: state("third"))
        #expect(viaPassphrase.status == 0, "\(viaPassphrase.stderr)")
        #expect(try team.box.vault(["get", "after", "--vault", third, "--passphrase-file", newPassphrase], passphrase: false,
                                   extraEnvironment: state("third")).stdoutText == "a")
    }
}

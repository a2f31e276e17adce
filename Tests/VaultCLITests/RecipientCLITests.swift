import Foundation
import Testing
import VaultCore
import VaultTestSupport

/// Issue 20 through the real binary: a teammate with a key from `age-keygen` reads and writes a vault with no
/// passphrase, locally and through the agent; `recipients add`/`list`/`remove` (the removal rotates the key: no
/// ciphertext of the old body survives, the removed identity is locked out of the new file and keeps the old one);
/// the owner's passphrase keeps working; strangers, bad recipients and loose identity files are refused with
/// nothing written; recovery of the data key with the stock `age -d`.
@Suite("Recipients and identities (CLI)", .serialized)
struct RecipientCLITests {
    static let age = findTool("age"), ageKeygen = findTool("age-keygen")
    static let needsAge: Comment = "needs age: scripts/install-deps --test"
    static var hasAge: Bool { age != nil && ageKeygen != nil }

    /// A sandbox whose state directory (rollback records) is its own, a teammate's directory (another machine:
    /// state of its own) and keys made by `age-keygen`.
    final class Team: SharedVaultSandbox, @unchecked Sendable {
        let key: String, other: String, stranger: String
        let recipient: String, otherRecipient: String

        init() throws {
            let box = try Sandbox()
            key = box.directory + "/key.txt"
            other = box.directory + "/other.txt"
            stranger = box.directory + "/stranger.txt"
            for path in [key, other, stranger] {
                let made = try runTool(RecipientCLITests.ageKeygen!, ["-o", path]) as (status: Int32, output: String)
                #expect(made.status == 0, "\(made.output)")
            }
            recipient = try Self.recipient(of: key)
            otherRecipient = try Self.recipient(of: other)
            try super.init(box: box)
        }

        static func recipient(of path: String) throws -> String {
            let shown = try runTool(RecipientCLITests.ageKeygen!, ["-y", path]) as (status: Int32, output: String)
            return shown.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test(.enabled(if: hasAge, needsAge))
    func aKeyFromAgeKeygenReadsAndWritesWithNoPassphrase() throws {
        let team = try Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        let added = try team.owner(["recipients", "add", team.recipient])
        #expect(added.status == 0 && added.stdoutText == "added recipient \(team.recipient)\n", "\(added.stderr)")

        let read = try team.with(team.key, ["get", "github"])
        #expect(read.status == 0 && read.stdoutText == "t0k3n", "\(read.stderr)")
        let written = try team.with(team.key, ["put", "aws"], stdin: Data("from teammate".utf8))
        #expect(written.status == 0, "\(written.stderr)")
        // The owner's passphrase reads what the teammate wrote.
        #expect(try team.owner(["get", "aws"]).stdoutText == "from teammate")
        // VAULT_IDENTITY works as --identity does.
        let viaEnvironment = try team.box.vault(["get", "github"], passphrase: false,
                                                extraEnvironment: team.state.merging(["VAULT_IDENTITY": team.key]) { $1 })
        #expect(viaEnvironment.status == 0 && viaEnvironment.stdoutText == "t0k3n", "\(viaEnvironment.stderr)")
    }

    @Test(.enabled(if: hasAge, needsAge))
    func addThenListJSON() throws {
        let team = try Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["recipients", "add", team.recipient, team.otherRecipient]).status == 0)
        // Adding again says so and writes the same list.
        let again = try team.owner(["recipients", "add", team.recipient, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: again.stdout) as? [String: Any])
        #expect(object["added"] as? [String] == [] && object["already_present"] as? [String] == [team.recipient])
        let listed = try team.box.vault(["recipients", "list", "--json"], passphrase: false, extraEnvironment: team.state)
        #expect(listed.status == 0, "\(listed.stderr)")
        let list = try #require(try JSONSerialization.jsonObject(with: listed.stdout) as? [String: Any])
        #expect(list["recipients"] as? [String] == [team.recipient, team.otherRecipient])
        #expect(list["passphrase"] as? Bool == true)
        let plain = try team.box.vault(["recipients", "list"], passphrase: false, extraEnvironment: team.state)
        #expect(plain.stdoutText == team.recipient + "\n" + team.otherRecipient + "\n")
    }

    /// A recipients file as age reads it: comments and empty lines skipped; a bad line named by its number.
    @Test(.enabled(if: hasAge, needsAge))
    func aRecipientsFileIsReadAsAgeReadsIt() throws {
        let team = try Team()
        #expect(try team.owner(["init"]).status == 0)
        let file = team.box.directory + "/team.txt"
        try team.box.write("# the team\n\n\(team.recipient)\n# and\n\(team.otherRecipient)\n", to: file)
        let added = try team.owner(["recipients", "add", "-R", file])
        #expect(added.status == 0, "\(added.stderr)")
        let listed = try team.owner(["recipients", "list"])
        #expect(listed.stdoutText == team.recipient + "\n" + team.otherRecipient + "\n")
        try team.box.write("# the team\nage1notakey\n", to: file)
        let bad = try team.owner(["recipients", "add", "-R", file])
        #expect(bad.status == 64 && bad.stderr.contains("'\(file)' line 2 'age1notakey' is not an age recipient"), "\(bad.stderr)")
    }

    @Test(.enabled(if: hasAge, needsAge))
    func removalRotatesTheKeyAndLocksTheRemovedRecipientOut() throws {
        let team = try Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        #expect(try team.owner(["recipients", "add", team.recipient, team.otherRecipient]).status == 0)
        // `vault info` says what opens the vault in words (not "key stanzas: argon2id, x25519, x25519").
        func opensWith() throws -> String? {
            try team.owner(["info"]).stdoutText.split(separator: "\n").first { $0.hasPrefix("opens with:") }.map(String.init)
        }
        #expect(try opensWith() == "opens with:  the passphrase, 2 age identities (X25519)")
        // The removed teammate opens the vault on its machine before the removal (its state directory knows it).
        #expect(try team.with(team.other, ["get", "github"], machine: "teammate").stdoutText == "t0k3n")
        let before = team.bytes
        let old = team.box.directory + "/old.vault"
        try Data(before).write(to: URL(fileURLWithPath: old))
        chmod(old, 0o600)

        let removed = try team.owner(["recipients", "remove", team.otherRecipient])
        #expect(removed.status == 0, "\(removed.stderr)")
        // Issue 35 §4: what the removed key could read, and that it should be changed.
        #expect(removed.stdoutText == """
            removed recipient \(team.otherRecipient); the vault's key was rotated
            the removed key could read the 1 entry of this vault (and may have kept a copy): change those secrets where they are used ('--list' names them)

            """)
        #expect(try opensWith() == "opens with:  the passphrase, 1 age identity (X25519)")
        #expect(try team.owner(["info"]).stdoutText.contains("\nkey changes: 1 recorded\nkdf:"))
        let after = team.bytes
        // No ciphertext of the old body survives: its header MAC, body nonce and sealed body are nowhere in the new file.
        let headerLength = Int(before[10]) | Int(before[11]) << 8 | Int(before[12]) << 16 | Int(before[13]) << 24
        let oldSealed = Array(before[headerLength...])
        for start in stride(from: 0, to: oldSealed.count - 16, by: 16) {
            #expect(!Self.contains(after, Array(oldSealed[start..<start + 16])), "16 bytes of the old body at \(start) survive")
        }
        let listed = try team.owner(["recipients", "list"])
        #expect(listed.stdoutText == team.recipient + "\n")

        // The removed identity: exit 3 on the new file; the old copy it already had still opens for it.
        let lockedOut = try team.with(team.other, ["get", "github"], machine: "teammate")
        // This machine last saw the key the removal replaced: the key link's reason says what happened (issue 35 §6).
        #expect(lockedOut.status == 3 && lockedOut.stderr.hasPrefix(
            "vault: this identity was removed from the vault (its key rotated at a recipient's removal; '\(team.box.vaultPath)' has no stanza for it): it opens no later version; ask the owner to add it again\n"),
            "\(lockedOut.stderr)")
        let kept = try team.box.vault(["get", "github", "--vault", old, "--identity", team.other], passphrase: false,
                                      extraEnvironment: ["XDG_STATE_HOME": team.box.directory + "/state-teammate"])
        #expect(kept.status == 0 && kept.stdoutText == "t0k3n", "\(kept.stderr)")
        // The one kept, and the owner's passphrase, still open it; the owner refuses the old copy (a retired key).
        #expect(try team.with(team.key, ["get", "github"]).stdoutText == "t0k3n")
        #expect(try team.owner(["get", "github"]).stdoutText == "t0k3n")
        let refused = try team.box.vault(["get", "github", "--vault", old], extraEnvironment: team.state)
        #expect(refused.status == 6, "\(refused.stderr)")
        // Named by the reason its key link gave (a removal, not a passphrase change: issue 35, walkthrough finding 6).
        #expect(refused.stderr == """
            vault: refusing to open vault '\(old)': it is sealed with a key the vault retired when a recipient was removed: a copy from before the removal was put back
            hint: 'vault sync' (or git's pull) brings the current version, which only the vault's current recipients open; if you restored this copy on purpose (a backup), pass --accept-rollback once

            """)
        let json = try team.box.vault(["get", "github", "--vault", old, "--json"], extraEnvironment: team.state)
        #expect(json.status == 6 && json.stderr.contains(#""code":"retired_key""#), "\(json.stderr)")
    }

    @Test(.enabled(if: hasAge, needsAge))
    func strangersBadRecipientsAndLooseIdentityFilesAreRefusedWithNothingWritten() throws {
        let team = try Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["recipients", "add", team.recipient]).status == 0)
        let before = team.bytes

        let stranger = try team.with(team.stranger, ["get", "x"])
        #expect(stranger.status == 3 && stranger.stderr.contains("no key stanza for this identity"), "\(stranger.stderr)")
        let strangerJSON = try team.with(team.stranger, ["list", "--json"])
        #expect(strangerJSON.status == 3 && strangerJSON.stderr.contains("\"wrong_identity\""), "\(strangerJSON.stderr)")

        let bad = try team.owner(["recipients", "add", team.otherRecipient, "age1qqqq", "--json"])
        #expect(bad.status == 64 && bad.stderr.contains("recipient 2 'age1qqqq' is not an age recipient"), "\(bad.stderr)")
        #expect(bad.stderr.contains("\"invalid_recipient\""))
        let upper = try team.owner(["recipients", "add", team.otherRecipient.uppercased()])
        #expect(upper.status == 64 && upper.stderr.contains("recipient 1"), "\(upper.stderr)")
        let secret = try team.owner(["recipients", "add", "AGE-SECRET-KEY-1QQQQ"])
        #expect(secret.status == 64, "\(secret.stderr)")
        let removeBad = try team.owner(["recipients", "remove", "age1notakey"])
        #expect(removeBad.status == 64, "\(removeBad.stderr)")
        // Not age1...: a label (issue 35 §4), which no recipient has.
        let removeUnlabelled = try team.owner(["recipients", "remove", "not-a-key"])
        #expect(removeUnlabelled.status == 2 && removeUnlabelled.stderr.contains("has no recipient labelled 'not-a-key'"), "\(removeUnlabelled.stderr)")
        let removeAbsent = try team.owner(["recipients", "remove", team.otherRecipient])
        #expect(removeAbsent.status == 2, "\(removeAbsent.stderr)")

        chmod(team.key, 0o644)
        let loose = try team.with(team.key, ["get", "x"])
        #expect(loose.status == 4 && loose.stderr.contains("identity file is accessible by group or others"), "\(loose.stderr)")
        chmod(team.key, 0o600)
        try team.box.write("AGE-SECRET-KEY-1NOTAKEY\n", to: team.box.directory + "/garbage.txt")
        let garbage = try team.with(team.box.directory + "/garbage.txt", ["get", "x"])
        #expect(garbage.status == 64 && garbage.stderr.contains("line 1"), "\(garbage.stderr)")
        #expect(team.bytes == before, "a refused command wrote the vault")
    }

    /// A vault with recipients only: the owner's passphrase is not needed to remove one; the last key cannot be removed.
    @Test(.enabled(if: hasAge, needsAge))
    func aVaultOfRecipientsOnlyIsRotatedWithAnIdentity() throws {
        let team = try Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["put", "k"], stdin: Data("v".utf8)).status == 0)
        #expect(try team.owner(["recipients", "add", team.recipient, team.otherRecipient]).status == 0)
        let removed = try team.with(team.key, ["recipients", "remove", team.otherRecipient])
        // The vault has a passphrase stanza: removing asks for the passphrase, which the identity's user lacks.
        #expect(removed.status == 1 || removed.status == 3, "\(removed.stderr)")
        #expect(try team.owner(["recipients", "remove", team.otherRecipient]).status == 0)
        #expect(try team.with(team.key, ["get", "k"]).stdoutText == "v")
    }

    @Test(.enabled(if: hasAge, needsAge))
    func theOwnersPassphraseWorksAfterAddAndRemove() throws {
        let team = try Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["put", "k"], stdin: Data("v".utf8)).status == 0)
        #expect(try team.owner(["recipients", "add", team.recipient]).status == 0)
        #expect(try team.owner(["get", "k"]).stdoutText == "v")
        // A passphrase change keeps the recipients: their stanzas are wrapped again for the new key.
        let newPassphrase = team.box.directory + "/new-passphrase"
        try team.box.write("another passphrase\n", to: newPassphrase)
        let changed = try team.owner(["passwd", "--new-passphrase-file", newPassphrase])
        #expect(changed.status == 0, "\(changed.stderr)")
        #expect(try team.with(team.key, ["get", "k"]).stdoutText == "v")
        try team.box.write(try String(contentsOfFile: newPassphrase, encoding: .utf8), to: team.box.passphraseFile)
        #expect(try team.owner(["get", "k"]).stdoutText == "v")
        #expect(try team.owner(["recipients", "remove", team.recipient]).status == 0)
        #expect(try team.owner(["get", "k"]).stdoutText == "v")
        #expect(try team.owner(["recipients", "list", "--json"]).stdoutText.contains("\"recipients\":[]"))
    }

    /// Recovery with stock tools: the stanza's age file out of the vault, `age -d -i key.txt` prints the data key,
    /// which opens the vault (`read_vault_v2.py` reads it with `age -d` alone).
    @Test(.enabled(if: hasAge, needsAge))
    func theDataKeyIsRecoveredWithAgeDecrypt() throws {
        let team = try Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["put", "k"], stdin: Data("recovered".utf8)).status == 0)
        #expect(try team.owner(["recipients", "add", team.recipient]).status == 0)
        #expect(try Self.dataKey(of: team.bytes, for: team.recipient, identity: team.key, in: team.box.directory)?.count == 32)
        // The independent reader opens the vault with the identity through age -d.
        let reader = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Interop/read_vault_v2.py").path
        let read = try CLI.shell("python3 '\(reader)' '\(team.box.vaultPath)'",
                                 environment: ["VAULT_IDENTITY": team.key, "VAULT_TESTING_INSECURE_KDF": "1",
                                               "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"])
        #expect(read.status == 0 && read.stdoutText.contains("recovered"), "\(read.stderr)")
    }

    /// The age files of a vault's x25519 stanzas, by recipient. The header: 56 fixed bytes, then stanzas (type u16,
    /// length u32, body); an x25519 one's age file follows its 63 bytes of recipient.
    static func ageFiles(of bytes: [UInt8]) -> [String: [UInt8]] {
        var offset = 56, files: [String: [UInt8]] = [:]
        for _ in 0..<(Int(bytes[54]) | Int(bytes[55]) << 8) {
            let type = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
            let length = (0..<4).reduce(0) { $0 | Int(bytes[offset + 2 + $1]) << (8 * $1) }
            if type == 2 {
                files[String(decoding: bytes[(offset + 7)..<(offset + 6 + 63)], as: UTF8.self)] = Array(bytes[(offset + 6 + 63)..<(offset + 6 + length)])
            }
            offset += 6 + length
        }
        return files
    }

    /// The data key of the vault `bytes` as the stock `age -d -i identity` reads it from `recipient`'s stanza (`nil`:
    /// no stanza for it, or age failed), through files in `directory`.
    static func dataKey(of bytes: [UInt8], for recipient: String, identity: String, in directory: String) throws -> Data? {
        guard let ageFile = ageFiles(of: bytes)[recipient] else { return nil }
        #expect(ageFile.count == 232)
        let stanza = directory + "/stanza.age", keyFile = directory + "/data.key"
        try Data(ageFile).write(to: URL(fileURLWithPath: stanza))
        defer { unlink(keyFile) }
        let decrypted = try runTool(Self.age!, ["-d", "-i", identity, "-o", keyFile, stanza]) as (status: Int32, output: String)
        #expect(decrypted.status == 0, "\(decrypted.output)")
        return FileManager.default.contents(atPath: keyFile)
    }

    /// Sync: a removal made on machine A is not undone by a write made on machine B with the old key: A refuses B's
    /// old-key copy, B follows the removal (keeping its write), then A takes the write; the removed recipient cannot
    /// open any result.
    @Test(.enabled(if: hasAge, needsAge))
    func aMergeDoesNotUndoARemoval() throws {
        let team = try Team()
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["recipients", "add", team.recipient, team.otherRecipient]).status == 0)
        let b = team.box.directory + "/b.vault", c = team.box.directory + "/c.vault"
        for copy in [b, c] {
            try Data(team.bytes).write(to: URL(fileURLWithPath: copy))
            chmod(copy, 0o600)
        }
        // A removes `other` (new key); B, a copy under the old key, gets a write from the kept teammate.
        #expect(try team.owner(["recipients", "remove", team.otherRecipient]).status == 0)
        let written = try team.box.vault(["put", "from-b", "--vault", b, "--identity", team.key], stdin: Data("b".utf8),
                                         passphrase: false, extraEnvironment: ["XDG_STATE_HOME": team.box.directory + "/state-b"])
        #expect(written.status == 0, "\(written.stderr)")
        // A merges B: B's key is the one A's removal retired, at once (only a passphrase change is pending until
        // published): a copy under it, which the removed recipient could write, is stale, nothing merged, A's file
        // unchanged (it keeps its key and stanzas, never B's).
        let before = team.bytes
        let stale = try team.owner(["merge", b, "--other-passphrase-file", team.box.passphraseFile, "--json"])
        #expect(stale.status == 6 && stale.stderr.contains("\"stale_key\""), "\(stale.stdoutText) \(stale.stderr)")
        #expect(team.bytes == before)
        // B merges A (with A's passphrase for its new key): B follows the removal and keeps its own write.
        let followed = try team.box.vault(["merge", team.box.vaultPath, "--vault", b, "--other-passphrase-file", team.box.passphraseFile],
                                          extraEnvironment: ["XDG_STATE_HOME": team.box.directory + "/state-b"])
        #expect(followed.status == 0, "\(followed.stderr)")
        let onB = try team.box.vault(["get", "from-b", "--vault", b, "--identity", team.other], passphrase: false,
                                     extraEnvironment: ["XDG_STATE_HOME": team.box.directory + "/state-teammate2"])
        #expect(onB.status == 3, "\(onB.stderr)")
        // A merges B, now under A's key: B's write arrives, and the removed teammate cannot open the result.
        let merged = try team.owner(["merge", b])
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(try team.owner(["get", "from-b"]).stdoutText == "b")
        let lockedOut = try team.with(team.other, ["get", "from-b"], machine: "teammate")
        #expect(lockedOut.status == 3, "\(lockedOut.stderr)")
        // A teammate with no passphrase at all, on a third copy under the old key, follows the removal with its
        // identity alone (the other copy's key from its own x25519 stanza).
        let cState = ["XDG_STATE_HOME": team.box.directory + "/state-c"]
        #expect(try team.box.vault(["get", "x", "--vault", c, "--identity", team.key], passphrase: false, extraEnvironment: cState).status == 2)
        let teammateMerge = try team.box.vault(["merge", team.box.vaultPath, "--vault", c, "--identity", team.key],
                                               passphrase: false, extraEnvironment: cState)
        #expect(teammateMerge.status == 0, "\(teammateMerge.stderr)")
        let onC = try team.box.vault(["list", "--vault", c, "--identity", team.other], passphrase: false,
                                     extraEnvironment: ["XDG_STATE_HOME": team.box.directory + "/state-teammate3"])
        #expect(onC.status == 3, "\(onC.stderr)")
        #expect(try team.box.vault(["get", "from-b", "--vault", c, "--identity", team.key], passphrase: false,
                                   extraEnvironment: cState).stdoutText == "b")
    }

    /// Through the agent: `vault unlock --identity` keeps the data key there; the verbs then ask for nothing.
    @Test(.enabled(if: hasAge, needsAge))
    func aKeyFromAgeKeygenReadsAndWritesThroughTheAgent() throws {
        let team = try Team()
        let box = try AgentBox()
        try box.initVault()
        #expect(try box.around(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        #expect(try box.around(["recipients", "add", team.recipient]).status == 0)
        let unlocked = try box.vault(["unlock", "--identity", team.key])
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        _ = try? box.agentPID()
        let read = try box.vault(["get", "github"])
        #expect(read.status == 0 && read.stdoutText == "t0k3n", "\(read.stderr)")
        let written = try box.vault(["put", "aws"], stdin: Data("via agent".utf8))
        #expect(written.status == 0, "\(written.stderr)")
        #expect(try box.around(["get", "aws"]).stdoutText == "via agent")
        // The identity is kept too: a second vault shared with it opens through the agent with no prompt.
        let second = box.directory + "/vaults/second.vault"
        #expect(try box.around(["init", "--vault", second]).status == 0)
        #expect(try box.around(["put", "db", "--vault", second], stdin: Data("second".utf8)).status == 0)
        #expect(try box.around(["recipients", "add", team.recipient, "--vault", second]).status == 0)
        let viaKept = try box.vault(["get", "db", "--vault", second])
        #expect(viaKept.status == 0 && viaKept.stdoutText == "second", "\(viaKept.stderr)")
        // Any lock forgets it: the second vault, locked, no longer opens with nothing given.
        #expect(try box.vault(["lock", "--vault", second]).status == 0)
        let afterLock = try box.vault(["get", "db", "--vault", second])
        #expect(afterLock.status != 0, "\(afterLock.stdoutText)")
        // A stranger's identity cannot unlock it.
        let stranger = try box.vault(["unlock", "--force", "--identity", team.stranger])
        #expect(stranger.status == 3, "\(stranger.stderr)")
    }

    @Test(.enabled(if: hasAge, needsAge))
    func identityNewWritesAnAgeKeygenFileAndShowPrintsItsRecipient() throws {
        let team = try Team()
        let file = team.box.directory + "/mine.txt"
        let config = ["XDG_CONFIG_HOME": team.box.directory + "/config"]
        let made = try team.box.vault(["identity", "new", "--output", file], passphrase: false, extraEnvironment: config)
        #expect(made.status == 0, "\(made.stderr)")
        let recipient = made.stdoutText.trimmingCharacters(in: .newlines)
        #expect(try Team.recipient(of: file) == recipient)
        let mode = (try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int) ?? 0
        #expect(mode == 0o600)
        let shown = try team.box.vault(["identity", "show", "--identity", file], passphrase: false, extraEnvironment: config)
        #expect(shown.stdoutText == recipient + "\n", "\(shown.stderr)")
        let again = try team.box.vault(["identity", "new", "--output", file], passphrase: false, extraEnvironment: config)
        #expect(again.status == 7, "\(again.stderr)")
        // Sealed in the config directory under a passphrase; show asks nothing.
        let sealed = try team.box.vault(["identity", "new"], extraEnvironment: config)
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let stored = try team.box.vault(["identity", "show"], passphrase: false, extraEnvironment: config)
        #expect(stored.status == 0 && stored.stdoutText == sealed.stdoutText, "\(stored.stderr)")
        #expect(FileManager.default.fileExists(atPath: team.box.directory + "/config/vault/identity.vault"))
        // The sealed identity opens a vault shared with it, its passphrase from the passphrase options.
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["put", "k"], stdin: Data("v".utf8)).status == 0)
        let sealedRecipient = sealed.stdoutText.trimmingCharacters(in: .newlines)
        #expect(try team.owner(["recipients", "add", sealedRecipient]).status == 0)
        let opened = try team.box.vault(["get", "k", "--identity", team.box.directory + "/config/vault/identity.vault"],
                                        extraEnvironment: team.state)
        #expect(opened.status == 0 && opened.stdoutText == "v", "\(opened.stderr)")
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { start in haystack[start..<start + needle.count].elementsEqual(needle) }
    }
}

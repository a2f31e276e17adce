import Foundation
import Testing
import VaultCore
import VaultTestSupport

/// Post-quantum recipients (`age1pq1…`, `mlkem768x25519` key stanzas) through the real binary: identities made by
/// `vault identity new --pq`, a round trip with no passphrase, locally and through the agent; a removal that
/// re-wraps for the remaining hybrid recipient; age's rule (never mixed with X25519 recipients: exit 64, nothing
/// written); malformed recipients and identities of the wrong kind. No `age` tool needed (Debian's 1.1.1 has no
/// post-quantum support: the C2SP vectors in VaultAgePQTests are the oracle).
@Suite("Post-quantum recipients (CLI)", .serialized)
struct PostQuantumCLITests {
    final class Team: SharedVaultSandbox, @unchecked Sendable {
        /// A new identity file (`--pq` for a hybrid one); returns its path and recipient.
        func identity(_ name: String, postQuantum: Bool) throws -> (path: String, recipient: String) {
            let path = box.directory + "/" + name
            let made = try box.vault(["identity", "new", "--output", path] + (postQuantum ? ["--pq"] : []), passphrase: false)
            #expect(made.status == 0, "\(made.stderr)")
            return (path, made.stdoutText.trimmingCharacters(in: .newlines))
        }
    }

    @Test func aHybridIdentityReadsAndWritesWithNoPassphrase() throws {
        let team = try Team()
        let mine = try team.identity("pq.txt", postQuantum: true)
        let theirs = try team.identity("pq2.txt", postQuantum: true)
        #expect(mine.recipient.hasPrefix("age1pq1") && mine.recipient.utf8.count == 1959)
        let file = try #require(FileManager.default.contents(atPath: mine.path))
        let lines = String(decoding: file, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 3 && lines[1] == "# public key: \(mine.recipient)" && lines[2].hasPrefix("AGE-SECRET-KEY-PQ-1"))
        let shown = try team.box.vault(["identity", "show", "--identity", mine.path], passphrase: false)
        #expect(shown.stdoutText == mine.recipient + "\n", "\(shown.stderr)")

        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        let added = try team.owner(["recipients", "add", mine.recipient, theirs.recipient])
        #expect(added.status == 0 && added.stdoutText == "added recipient \(mine.recipient)\nadded recipient \(theirs.recipient)\n", "\(added.stderr)")
        let listed = try team.owner(["recipients", "list"])
        #expect(listed.stdoutText == mine.recipient + "\n" + theirs.recipient + "\n")

        let read = try team.with(mine.path, ["get", "github"])
        #expect(read.status == 0 && read.stdoutText == "t0k3n", "\(read.stderr)")
        #expect(try team.with(mine.path, ["put", "aws"], stdin: Data("from pq".utf8)).status == 0)
        #expect(try team.owner(["get", "aws"]).stdoutText == "from pq")

        // Removal: a new key wrapped again for the hybrid recipient left; the removed one gets exit 3.
        let removed = try team.owner(["recipients", "remove", theirs.recipient])
        #expect(removed.status == 0, "\(removed.stderr)")
        let lockedOut = try team.with(theirs.path, ["get", "github"])
        #expect(lockedOut.status == 3, "\(lockedOut.stderr)")
        #expect(try team.with(mine.path, ["get", "aws"]).stdoutText == "from pq")
        #expect(try team.owner(["get", "github"]).stdoutText == "t0k3n")
    }

    @Test func aHybridIdentityReadsAndWritesThroughTheAgent() throws {
        let team = try Team()
        let mine = try team.identity("pq.txt", postQuantum: true)
        let box = try AgentBox()
        try box.initVault()
        #expect(try box.around(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        #expect(try box.around(["recipients", "add", mine.recipient]).status == 0)
        let unlocked = try box.vault(["unlock", "--identity", mine.path])
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        _ = try? box.agentPID()
        let read = try box.vault(["get", "github"])
        #expect(read.status == 0 && read.stdoutText == "t0k3n", "\(read.stderr)")
        #expect(try box.vault(["put", "aws"], stdin: Data("via agent".utf8)).status == 0)
        #expect(try box.around(["get", "aws"]).stdoutText == "via agent")
        // The hybrid identity is kept: a second vault shared with it opens through the agent with no prompt.
        let second = box.directory + "/vaults/second.vault"
        #expect(try box.around(["init", "--vault", second]).status == 0)
        #expect(try box.around(["put", "db", "--vault", second], stdin: Data("second".utf8)).status == 0)
        #expect(try box.around(["recipients", "add", mine.recipient, "--vault", second]).status == 0)
        let viaKept = try box.vault(["get", "db", "--vault", second])
        #expect(viaKept.status == 0 && viaKept.stdoutText == "second", "\(viaKept.stderr)")
    }

    /// age's rule: a vault's recipients are all post-quantum or all X25519. Either way round, and both kinds in one
    /// command, is refused before any key is asked for: exit 64, the vault byte-identical.
    @Test func hybridAndX25519RecipientsAreNeverMixed() throws {
        let team = try Team()
        let pq = try team.identity("pq.txt", postQuantum: true)
        let classic = try team.identity("x.txt", postQuantum: false)
        #expect(classic.recipient.hasPrefix("age1") && !classic.recipient.hasPrefix("age1pq1"))
        let hint = "hint: a vault's recipients are all post-quantum or all X25519 (age's rule); remove the other kind first ('vault recipients remove')\n"
        #expect(try team.owner(["init"]).status == 0)

        let both = try team.owner(["recipients", "add", pq.recipient, classic.recipient])
        #expect(both.status == 64, "\(both.stderr)")
        #expect(both.stderr == "vault: cannot add post-quantum (age1pq1...) and X25519 (age1...) recipients to vault '\(team.box.vaultPath)' together\n" + hint)

        #expect(try team.owner(["recipients", "add", classic.recipient]).status == 0)
        var before = team.bytes
        let addPQ = try team.owner(["recipients", "add", pq.recipient])
        #expect(addPQ.status == 64 && addPQ.stdoutText.isEmpty, "\(addPQ.stderr)")
        #expect(addPQ.stderr == "vault: cannot add a post-quantum recipient (age1pq1...) to vault '\(team.box.vaultPath)': it has X25519 recipients (age1...)\n" + hint)
        let json = try team.owner(["recipients", "add", pq.recipient, "--json"])
        #expect(json.status == 64 && json.stderr.contains("\"mixed_recipients\""), "\(json.stderr)")
        #expect(team.bytes == before)

        // The other way round, in a vault that went post-quantum (the X25519 recipient removed first).
        #expect(try team.owner(["recipients", "remove", classic.recipient]).status == 0)
        #expect(try team.owner(["recipients", "add", pq.recipient]).status == 0)
        before = team.bytes
        let addClassic = try team.owner(["recipients", "add", classic.recipient])
        #expect(addClassic.status == 64, "\(addClassic.stderr)")
        #expect(addClassic.stderr == "vault: cannot add an X25519 recipient (age1...) to vault '\(team.box.vaultPath)': it has post-quantum recipients (age1pq1...)\n" + hint)
        #expect(team.bytes == before)
        // The passphrase stanza stands beside them: the owner still opens it.
        #expect(try team.owner(["list"]).status == 0)
    }

    @Test func malformedHybridRecipientsAndIdentitiesOfTheWrongKindAreRefused() throws {
        let team = try Team()
        let pq = try team.identity("pq.txt", postQuantum: true)
        let classic = try team.identity("x.txt", postQuantum: false)
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["recipients", "add", pq.recipient]).status == 0)
        let before = team.bytes

        // One character changed: the checksum.
        var typo = Array(pq.recipient.utf8)
        typo[500] = typo[500] == UInt8(ascii: "q") ? UInt8(ascii: "p") : UInt8(ascii: "q")
        let badChecksum = try team.owner(["recipients", "add", String(decoding: typo, as: UTF8.self)])
        #expect(badChecksum.status == 64 && badChecksum.stderr.contains("recipient 1 'age1pq1"), "\(badChecksum.stderr)")
        #expect(badChecksum.stderr.contains("is not an age recipient: malformed key: invalid checksum (a typo?)"))
        // A valid Bech32 string whose key is 32 bytes, not 1,216 (a share of the wrong length).
        let short = try team.owner(["recipients", "add", "age1pq1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqfqj7ru"])
        #expect(short.status == 64 && short.stderr.contains("wrong key length: 32 bytes instead of 1216"), "\(short.stderr)")
        // A hybrid identity where a recipient goes.
        let secret = try team.owner(["recipients", "add", "AGE-SECRET-KEY-PQ-1QQQQ"])
        #expect(secret.status == 64, "\(secret.stderr)")
        #expect(team.bytes == before)

        // An identity of the wrong kind: the X25519 identity finds no stanza in a post-quantum vault (exit 3).
        let wrongKind = try team.with(classic.path, ["get", "x"])
        #expect(wrongKind.status == 3 && wrongKind.stderr.contains("no key stanza for this identity"), "\(wrongKind.stderr)")
        // A truncated hybrid identity in the file: named by its line, never shown.
        let key = String(decoding: try #require(FileManager.default.contents(atPath: pq.path)), as: UTF8.self)
            .split(separator: "\n")[2]
        let truncated = team.box.directory + "/truncated.txt"
        try team.box.write("# comment\n" + key.dropLast(10) + "\n", to: truncated)
        let refused = try team.with(truncated, ["get", "x"])
        #expect(refused.status == 64 && refused.stderr.contains("identity file, line 2"), "\(refused.stderr)")
        #expect(!refused.stderr.contains(String(key.dropLast(10))))
    }
}

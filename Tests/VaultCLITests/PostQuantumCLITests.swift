import Foundation
import Testing
import VaultCommands
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

    /// A vault of an agent box holding `github` = `t0k3n`, shared with a new hybrid identity (`mine`).
    static func agentBoxSharedWithAHybridIdentity() throws -> (team: Team, mine: (path: String, recipient: String), box: AgentBox) {
        let team = try Team()
        let mine = try team.identity("pq.txt", postQuantum: true)
        let box = try AgentBox()
        try box.initVault()
        #expect(try box.around(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        #expect(try box.around(["recipients", "add", mine.recipient]).status == 0)
        return (team, mine, box)
    }

    /// The executable process `pid` runs.
    static func executable(of pid: pid_t) throws -> String {
        try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
    }

    @Test func aHybridIdentityReadsAndWritesThroughTheAgent() throws {
        let (team, mine, box) = try Self.agentBoxSharedWithAHybridIdentity()
        defer { withExtendedLifetime(team) {} }  // its directory holds the identity file
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
        // The agent that keeps it runs from vault-net (the only program that reads post-quantum keys); `vault`'s
        // quick path talks to it over the socket unchanged.
        let pid = try #require(try box.agentPID())
        #expect(try Self.executable(of: pid).hasSuffix("/vault-net"))
        let quick = try box.vault(["get", "github"], environment: [QuickPath.requireVariable: "1"])
        #expect(quick.status == 0 && quick.stdoutText == "t0k3n", "\(quick.stderr)")
    }

    /// An agent that runs from `vault` (started by a `vault` installed without vault-net: a copy of it alone)
    /// cannot keep a post-quantum identity: `vault unlock --identity` replaces it with one that runs from
    /// vault-net, and says so.
    @Test func anAgentFromVaultIsReplacedToKeepAHybridIdentity() throws {
        let (team, mine, box) = try Self.agentBoxSharedWithAHybridIdentity()
        defer { withExtendedLifetime(team) {} }  // its directory holds the identity file
        let alone = box.directory + "/alone/vault"
        try FileManager.default.createDirectory(atPath: box.directory + "/alone", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: CLI.vault, toPath: alone)
        let started = try AgentCLI.exec(alone, ["unlock", "--passphrase-file", box.passphraseFile], environment: box.environment)
        try #require(started.status == 0, "\(started.stderr)")
        let first = try #require(try box.agentPID())
        #expect(try Self.executable(of: first).hasSuffix("/vault"))
        let unlocked = try box.vault(["unlock", "--force", "--identity", mine.path])
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        #expect(unlocked.stderr.contains("stopped the running agent (pid \(first)), which cannot keep post-quantum identities (1 vault locked)"), "\(unlocked.stderr)")
        let second = try #require(try box.agentPID())
        #expect(second != first)
        #expect(try Self.executable(of: second).hasSuffix("/vault-net"))
        let read = try box.vault(["get", "github"])
        #expect(read.status == 0 && read.stdoutText == "t0k3n", "\(read.stderr)")
    }

    /// With vault-net installed, every agent runs from it (it serves the ssh-agent socket too): the agent a
    /// passphrase unlock started keeps a post-quantum identity as it is.
    @Test func anAgentAPassphraseUnlockStartedKeepsAHybridIdentityWithoutReplacement() throws {
        let (team, mine, box) = try Self.agentBoxSharedWithAHybridIdentity()
        defer { withExtendedLifetime(team) {} }
        try box.unlock()
        let first = try #require(try box.agentPID())
        #expect(try Self.executable(of: first).hasSuffix("/vault-net"))
        let unlocked = try box.vault(["unlock", "--force", "--identity", mine.path])
        #expect(unlocked.status == 0 && !unlocked.stderr.contains("stopped the running agent"), "\(unlocked.stderr)")
        #expect(try box.agentPID() == first)
    }

    /// `vault` decides before anything is asked or read which command lines need vault-net's post-quantum keys, and
    /// runs vault-net for those only: a copy of `vault` with no vault-net next to it runs every other one.
    @Test func vaultRunsVaultNetOnlyForPostQuantumCommandLines() throws {
        let team = try Team()
        let pq = try team.identity("pq.txt", postQuantum: true)
        let classic = try team.identity("x.txt", postQuantum: false)
        let directory = try NetworkBinaryTests().vaultAlone(in: team.box)
        let alone = directory + "/vault"
        let missing = "vault: cannot run '\(directory)/vault-net': No such file or directory\nhint: vault-net must be installed next to vault\n"
        func run(_ arguments: [String], passphrase: Bool = true, _ extra: [String: String] = [:], stdin: String = "") throws -> CLIResult {
            try CLI.exec(alone, arguments + (passphrase ? ["--passphrase-file", team.box.passphraseFile] : []), stdin: Data(stdin.utf8),
                         environment: team.box.environment.merging(team.state.merging(extra) { $1 }) { $1 })
        }
        // Nothing post-quantum: vault alone.
        #expect(try run(["--version"], passphrase: false).status == 0)
        #expect(try run(["init"]).status == 0)
        #expect(try run(["put", "k"], stdin: "v").status == 0)
        #expect(try run(["recipients", "add", classic.recipient]).status == 0)
        let classicRead = try run(["get", "k", "--identity", classic.path], passphrase: false)
        #expect(classicRead.status == 0, "\(classicRead.stderr)")
        let viaEnvironment = try run(["get", "k"], passphrase: false, ["VAULT_IDENTITY": classic.path])
        #expect(viaEnvironment.status == 0, "\(viaEnvironment.stderr)")
        #expect(try run(["recipients", "list"]).status == 0)
        // Post-quantum: vault-net, before anything is read or asked (an age1pq1 argument, even one vault-net
        // refuses here: mixed with the vault's X25519 recipient).
        let before = team.bytes
        let recipientsFile = team.box.directory + "/team.txt"
        try team.box.write("# team\n\(pq.recipient)\n", to: recipientsFile)
        for (arguments, environment) in [
            (["recipients", "add", pq.recipient], [:]),
            (["identity", "new", "--pq", "--output", team.box.directory + "/new.txt"], [:]),
            (["recipients", "add", "-R", recipientsFile], [:]),
            (["recipients", "add", "--recipients-file=" + recipientsFile], [:]),
            (["get", "k", "--identity", pq.path], [:]),
            (["get", "k", "--identity=" + pq.path], [:]),
            (["put", "k2"], ["VAULT_IDENTITY": pq.path]),
            (["unlock", "--identity", pq.path], [:]),
            (["identity", "show", "--identity", pq.path], [:]),
        ] as [([String], [String: String])] {
            let result = try run(arguments, passphrase: false, environment, stdin: "v2")
            #expect(result.status == 1 && result.stderr == missing, "\(arguments): \(result.stderr)")
        }
        #expect(team.bytes == before)
        // A vault with post-quantum stanzas: re-wrapping (remove, passwd) and identities are vault-net's; the
        // passphrase alone is not.
        #expect(try team.owner(["recipients", "remove", classic.recipient]).status == 0)
        #expect(try team.owner(["recipients", "add", pq.recipient]).status == 0)
        #expect(try run(["get", "k"]).status == 0)
        #expect(try run(["recipients", "list"]).status == 0)
        for arguments in [["recipients", "remove", pq.recipient], ["passwd"], ["get", "k", "--identity", classic.path]] {
            let result = try run(arguments)
            #expect(result.status == 1 && result.stderr == missing, "\(arguments): \(result.stderr)")
        }
    }

    /// `vault identity new --pq` sealed in the config directory: identity.pub beside it names the age1pq1 recipient,
    /// the marker by which vault knows, without the passphrase, to run vault-net for it.
    @Test func aSealedHybridIdentityIsMarkedByItsRecipientFile() throws {
        let team = try Team()
        let config = ["XDG_CONFIG_HOME": team.box.directory + "/config"]
        let sealed = try team.box.vault(["identity", "new", "--pq"], extraEnvironment: config)
        #expect(sealed.status == 0, "\(sealed.stderr)")
        let recipient = sealed.stdoutText.trimmingCharacters(in: .newlines)
        #expect(recipient.hasPrefix("age1pq1"))
        let sealedPath = team.box.directory + "/config/vault/identity.vault"
        let marker = try #require(FileManager.default.contents(atPath: team.box.directory + "/config/vault/identity.pub"))
        #expect(String(decoding: marker, as: UTF8.self) == recipient + "\n")
        #expect(try team.owner(["init"]).status == 0)
        #expect(try team.owner(["put", "k"], stdin: Data("v".utf8)).status == 0)
        #expect(try team.owner(["recipients", "add", recipient]).status == 0)
        let opened = try team.box.vault(["get", "k", "--identity", sealedPath], extraEnvironment: team.state)
        #expect(opened.status == 0 && opened.stdoutText == "v", "\(opened.stderr)")
        // Decided without the passphrase, by the marker alone (this vault has no post-quantum stanza): vault alone
        // says vault-net is missing, not that the passphrase file is.
        let directory = try NetworkBinaryTests().vaultAlone(in: team.box)
        let other = team.box.directory + "/classic.vault"
        #expect(try team.owner(["init", "--vault", other]).status == 0)
        let alone = try CLI.exec(
            directory + "/vault", ["get", "k", "--vault", other, "--identity", sealedPath, "--passphrase-file", "/nonexistent"],
            environment: team.box.environment)
        #expect(alone.status == 1 && alone.stderr.hasPrefix("vault: cannot run '\(directory)/vault-net'"), "\(alone.stderr)")
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

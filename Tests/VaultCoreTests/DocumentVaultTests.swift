import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// Issue 18: a version-2 vault behind the ``KeyValueVault`` interface the CLI, the credential store and device
/// registration use: the same answers as the version-1 store, and the document underneath keeps ids, fields and
/// history.
@Suite("DocumentVault: KeyValueVault over format v2")
struct DocumentVaultTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("v2.vault") }
    static let passphrase = SecureBytes(string: "correct horse battery staple")

    func makeVault(replica: UInt64 = 1, clock: SettableClock = SettableClock(1_764_000_000_000)) throws -> DocumentVault {
        if !FileManager.default.fileExists(atPath: path) {
            try DocumentStore(storage: LocalFileStorage(path: path), replica: ReplicaID(rawValue: replica), policy: .insecureForTesting)
                .create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        }
        return try DocumentVault(
            path: path, key: .passphrase(Self.passphrase), replica: ReplicaID(rawValue: replica), clock: clock,
            policy: .insecureForTesting)
    }

    /// The same script on a version-1 store and on a version-2 vault gives the same answers.
    @Test func answersAsTheVersion1StoreDoes() throws {
        let v1 = FormatOneStore(path: directory.file("v1.vault"), options: .insecureForTesting)
        try v1.open(with: Self.passphrase)
        let v2 = try makeVault()
        for vault in [v1 as any KeyValueVault, v2] {
            try vault.put("alice", forKey: "username")
            try vault.put(SecureBytes([0xFF, 0x00, 0x01]), forKey: "binary")
            try vault.put("t0k3n", forKey: "github")
            try vault.update { changes in
                changes.remove("username")
                try changes.copy("github", to: "github-copy")
            }
            #expect(try vault.keys() == ["binary", "github", "github-copy"])
            #expect(try vault.getString("github") == "t0k3n" && vault.getBytes("binary")?.unprotectedBytes == [0xFF, 0x00, 0x01])
            #expect(try vault.contains("github-copy") && !vault.contains("username"))
            #expect(try vault.attributes(forKey: "binary")?.byteCount == 3)
            #expect(try vault.listing().map(\.name) == ["binary", "github", "github-copy"])
            #expect(try vault.remove("github-copy") && !vault.remove("github-copy"))
            // Requirements hold the batch: nothing is written when one fails.
            #expect(throws: VaultError.self) {
                try vault.update { changes in
                    try changes.put("x", forKey: "new")
                    changes.require("missing", exists: true)
                }
            }
            #expect(try !vault.contains("new"))
            // Version 1's forgiving operations: removing a missing name does nothing; a copy or a move replaces
            // an existing target (what `cp -f`, `mv -f` and the credential store's extras rely on).
            try vault.update { changes in
                changes.remove("never-there")
                try changes.copy("github", to: "binary")
            }
            #expect(try vault.getString("binary") == "t0k3n")
            try vault.update { changes in
                try changes.copy("binary", to: "github", keepCreated: true)
                changes.remove("binary")
            }
            #expect(try vault.keys() == ["github"])
            try vault.update { $0.removeAll() ; try $0.put("only", forKey: "k") }
            #expect(try vault.keys() == ["k"])
        }
    }

    /// Underneath: a put keeps the other fields and the earlier value in history; a move keeps the id; a remove
    /// leaves a tombstone; another handle sees the writes after a reload.
    @Test func theDocumentKeepsIdsFieldsHistoryAndTombstones() throws {
        let vault = try makeVault()
        try vault.put("v1", forKey: "db")
        let store = vault.store
        try store.update([.setField(entry: "db", field: "username", value: SecureBytes(string: "admin"))])
        try vault.put("v2", forKey: "db")
        let document = try #require(vault.document)
        #expect(document.entry("db")?.fields.map(\.name) == ["password", "username"])
        #expect(document.value(of: "password", in: "db", version: 2)?.unprotectedBytes == Array("v1".utf8))
        let id = try #require(document.entry("db")?.id)
        // `vault mv` sends a copy that keeps the creation time, then the removal of the source: a rename.
        try vault.update { changes in
            try changes.copy("db", to: "database", keepCreated: true)
            changes.remove("db")
        }
        #expect(vault.document?.entry("database")?.id == id)
        #expect(vault.document?.tombstones.isEmpty == true)
        try vault.remove("database")
        #expect(vault.document?.tombstones.keys.contains(id) == true)

        let other = try makeVault(replica: 2)
        try other.put("from 2", forKey: "shared")
        #expect(try !vault.contains("shared"))
        try vault.reload()
        #expect(try vault.getString("shared") == "from 2")
    }

    /// The credential store (git helper, login, device registration) works unchanged on a version-2 vault.
    @Test func theCredentialLayoutWorksOnIt() throws {
        let vault = try makeVault()
        try vault.put("connection-id", forKey: "appcid")
        try vault.update { changes in
            try changes.put("alice", forKey: "credential/https://example.com:443/realm/username")
            try changes.put("pw", forKey: "credential/https://example.com:443/realm/password")
        }
        #expect(try vault.keys() == ["appcid", "credential/https://example.com:443/realm/password", "credential/https://example.com:443/realm/username"])
    }

    /// Review of issue 18: every load is checked against the rollback record, so an older copy put back is refused
    /// on the next read or write, never written over (which would make the old state the newest).
    @Test func anOlderCopyPutBackIsRefusedOnTheNextReadAndWrite() throws {
        let protection = RollbackProtection(stateDirectory: directory.file("state"))
        _ = try makeVault()
        func open() throws -> DocumentVault {
            try DocumentVault(path: path, key: .passphrase(Self.passphrase), replica: ReplicaID(rawValue: 1), policy: .insecureForTesting, rollbackProtection: protection)
        }
        let vault = try open()
        try vault.put("1", forKey: "k")
        let older = try Data(contentsOf: URL(fileURLWithPath: path))
        try vault.put("2", forKey: "k")
        try older.write(to: URL(fileURLWithPath: path))
        #expect(throws: VaultError.self) { try vault.put("3", forKey: "k") }
        #expect(throws: VaultError.self) { try vault.reload() }
        #expect(throws: VaultError.self) { try open() }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == older, "the older copy was written over")
        do { _ = try open() } catch VaultError.rollbackDetected {} catch { Issue.record("expected rollbackDetected, got \(error)") }
    }

    /// The file bound follows the version: a version-2 file past its own bound (1 GiB + 65,608 bytes) is refused
    /// before it is read, as version 1's is past its bound.
    @Test func aVersion2FileBeyondItsBoundIsRefusedBeforeItIsRead() throws {
        _ = try makeVault()
        let size = off_t(DocumentFormat.maximumFileByteCount + 1)
        #expect(truncate(path, size) == 0)
        #expect(throws: VaultError.corrupt(path: path, reason: .tooLarge(byteCount: Int(size)))) {
            try VaultOpener.open(path: path, passphrase: Self.passphrase, options: .insecureForTesting)
        }
    }

    /// This user's replica id per vault: made once, the same on every open, 0600; a file left empty by a crash is
    /// replaced, not an error.
    @Test func theReplicaIdIsKeptPerVaultAndAnEmptyFileIsReplaced() throws {
        let state = directory.file("state")
        let id = DocumentID.random()
        let first = try ReplicaRegistry.replica(for: id, stateDirectory: state)
        #expect(try ReplicaRegistry.replica(for: id, stateDirectory: state) == first)
        #expect(try ReplicaRegistry.replica(for: DocumentID.random(), stateDirectory: state) != first)
        let file = state + "/" + id.description + ".replica"
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(truncate(file, 0) == 0)
        let replaced = try ReplicaRegistry.replica(for: id, stateDirectory: state)
        #expect(try ReplicaRegistry.replica(for: id, stateDirectory: state) == replaced)
        #expect(try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasSuffix(".tmp") }.isEmpty)
    }

    /// A state directory copied to another machine (another machine id or host name) gives that machine a replica
    /// of its own, so that two machines never stamp as one; a file of an older `vault` (the id alone) keeps its id
    /// and is given this machine's name.
    @Test func aReplicaFileMadeOnAnotherMachineGivesANewReplica() throws {
        let state = directory.file("state-copied")
        let id = DocumentID.random()
        let here = try ReplicaRegistry.replica(for: id, stateDirectory: state, machine: "0123456789abcdef")
        let file = state + "/" + id.description + ".replica"
        #expect(try String(contentsOfFile: file, encoding: .utf8) == here.description + "\n0123456789abcdef")
        let there = try ReplicaRegistry.replica(for: id, stateDirectory: state, machine: "fedcba9876543210")
        #expect(there != here)
        #expect(try ReplicaRegistry.replica(for: id, stateDirectory: state, machine: "fedcba9876543210") == there)
        // An older vault's file: kept, and named.
        try Data("00000000000000ab".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try ReplicaRegistry.replica(for: id, stateDirectory: state, machine: "0123456789abcdef") == ReplicaID(rawValue: 0xAB))
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "00000000000000ab\n0123456789abcdef")
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(ReplicaRegistry.machine.count == 16 && ReplicaRegistry.machine.allSatisfy(\.isHexDigit))
    }

    /// Issue 18 §6, the measured silent loss: machine B's copy (more writes, so a higher generation) put over
    /// machine A's, which had a write of its own since the copies parted. The generation check passes; A's own
    /// latest write is missing from the file's replica table, so A refuses it (exit 6) unless accepted.
    @Test func aCopyThatLacksThisMachinesOwnWritesIsRefused() throws {
        let stateA = RollbackProtection(stateDirectory: directory.file("state-a"))
        let stateB = RollbackProtection(stateDirectory: directory.file("state-b"))
        _ = try makeVault()
        func open(_ path: String, _ protection: RollbackProtection, replica: UInt64, accept: Bool = false) throws -> DocumentVault {
            try DocumentVault(path: path, key: .passphrase(Self.passphrase), replica: ReplicaID(rawValue: replica), policy: .insecureForTesting,
                              rollbackProtection: protection, acceptRollback: accept)
        }
        let a = try open(path, stateA, replica: 10)
        try a.put("shared", forKey: "k")
        let machineB = directory.file("b.vault")
        try FileManager.default.copyItem(atPath: path, toPath: machineB)
        try a.put("only on A", forKey: "a-only")
        let b = try open(machineB, stateB, replica: 20)
        for round in 0..<3 { try b.put("b\(round)", forKey: "b-\(round)") }
        a.close()
        // B's file over A's: a higher generation, without A's last write.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: machineB, toPath: path)
        #expect(throws: VaultError.missingOwnWrites(path: path)) { try open(path, stateA, replica: 10) }
        let accepted = try open(path, stateA, replica: 10, accept: true)
        #expect(try accepted.keys() == ["b-0", "b-1", "b-2", "k"])
        // Accepted once: A's history forked (its last write is in another line), so A writes on as a new replica,
        // the one its state directory now names; the next open takes the file.
        let renewed = try ReplicaRegistry.replica(for: try #require(accepted.document?.vaultID), stateDirectory: stateA.stateDirectory)
        #expect(accepted.store.replica == renewed && renewed != ReplicaID(rawValue: 10))
        try accepted.put("again", forKey: "a-only")
        #expect(accepted.document?.replicas[renewed] != nil && accepted.document?.replicas[ReplicaID(rawValue: 10)] != nil)
        #expect(try open(path, stateA, replica: renewed.rawValue).keys().contains("a-only"))
    }

    /// Another handle changed the passphrase (a new data key): this one says so instead of "wrong passphrase".
    @Test func aPassphraseChangeElsewhereIsKeyChanged() throws {
        let a = try makeVault()
        let b = try makeVault(replica: 2)
        try a.changePassphrase(to: SecureBytes(string: "another"), parameters: .insecureForTesting)
        #expect(throws: VaultError.keyChanged(path: path)) { try b.reload() }
        #expect(throws: VaultError.keyChanged(path: path)) { try b.put("x", forKey: "y") }
    }

    @Test func aNewPassphraseMakesANewDataKeyAndTheOldOneNoLongerOpens() throws {
        let vault = try makeVault()
        try vault.put("kept", forKey: "k")
        let oldKeyID = try #require(vault.document?.dataKeyID)
        let newPassphrase = SecureBytes(string: "new passphrase")
        try vault.changePassphrase(to: newPassphrase, parameters: .insecureForTesting)
        #expect(vault.document?.dataKeyID != oldKeyID)
        #expect(try vault.getString("k") == "kept")
        try vault.put("after", forKey: "k2")  // the handle writes with the new key
        let reopened = try DocumentVault(path: path, key: .passphrase(newPassphrase), replica: ReplicaID(rawValue: 3), policy: .insecureForTesting)
        #expect(try reopened.keys() == ["k", "k2"])
        #expect(throws: VaultError.wrongPassphrase(path: path)) {
            try DocumentVault(path: path, key: .passphrase(Self.passphrase), replica: ReplicaID(rawValue: 3), policy: .insecureForTesting)
        }
        vault.close()
        #expect(throws: VaultError.notOpen) { try vault.keys() }
    }

    /// Issue 18 §6: the record of a vault by its id follows its data keys wherever its file is: after a passphrase
    /// change, a copy under the old key is refused at any path (the record of a path knows only its own).
    @Test func aCopyUnderARetiredKeyIsRefusedAtAnyPath() throws {
        let protection = RollbackProtection(stateDirectory: directory.file("state"))
        _ = try makeVault()
        let elsewhere = directory.file("elsewhere.vault")
        func open(_ at: String, _ passphrase: SecureBytes = Self.passphrase, accept: Bool = false) throws -> DocumentVault {
            try DocumentVault(path: at, key: .passphrase(passphrase), replica: ReplicaID(rawValue: 1), policy: .insecureForTesting,
                              rollbackProtection: protection, acceptRollback: accept)
        }
        let vault = try open(path)
        try vault.put("1", forKey: "k")
        let beforeTheChange = try Data(contentsOf: URL(fileURLWithPath: path))
        let newPassphrase = SecureBytes(string: "a new passphrase")
        try vault.changePassphrase(to: newPassphrase, parameters: .insecureForTesting)
        vault.close()
        try beforeTheChange.write(to: URL(fileURLWithPath: elsewhere))
        chmod(elsewhere, 0o600)
        #expect(throws: VaultError.retiredKey(path: elsewhere)) { try open(elsewhere) }
        // A copy under the current key at another path is a copy, not a rollback (it may be merged).
        let copy = directory.file("copy.vault")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        #expect(try open(copy, newPassphrase).keys() == ["k"])
        #expect(try open(elsewhere, accept: true).keys() == ["k"], "--accept-rollback takes it (and makes its key the current one)")
    }

    /// The id record's rules on data keys: a new key (a passphrase change made elsewhere) becomes the current one
    /// and retires the old; a retired key is refused after; generations under one key are no rollback here.
    @Test func theRecordOfAVaultIdFollowsItsDataKeys() throws {
        let protection = RollbackProtection(stateDirectory: directory.file("state"))
        let (vault, first, second, third) = (DocumentID.random(), DocumentID.random(), DocumentID.random(), DocumentID.random())
        func check(_ key: DocumentID, _ generation: UInt64) throws {
            try RollbackGuard.checkVault(vault, dataKeyID: key, path: "p", protection: protection, accept: false)
            RollbackGuard.recordVault(vault, dataKeyID: key, generation: generation, protection: protection)
        }
        try check(first, 5)
        try check(first, 7)
        try check(first, 6)  // another copy, behind: the path's record and the own-writes record judge it
        try check(second, 3)
        #expect(throws: VaultError.retiredKey(path: "p")) { try check(first, 9) }
        RollbackGuard.recordVault(vault, dataKeyID: third, generation: 9, retiring: second, protection: protection)
        #expect(throws: VaultError.retiredKey(path: "p")) { try check(second, 10) }
        #expect(throws: VaultError.retiredKey(path: "p")) { try check(first, 10) }
        try check(third, 9)
    }

    /// The entries' versions with their values, and the field requirement, through the document interface.
    @Test func recordsAndFieldRequirements() throws {
        let clock = SettableClock(1_764_000_000_000)
        let vault = try makeVault(clock: clock)
        try vault.apply([.setField(entry: "e", field: "password", value: SecureBytes(string: "one"))])
        clock.set(1_764_000_000_005)
        try vault.apply([.setField(entry: "e", field: "username", value: SecureBytes(string: "al")), .setField(entry: "e", field: "password", value: SecureBytes(string: "two"))])
        let all = try #require(try vault.records(of: "e", .all))
        #expect(all.map(\.version) == [0, 1])
        #expect(all.map { $0.field("password")?.value.stringValue } == ["two", "one"])
        #expect(all[0].field("username")?.isSecret == false && all[0].field("password")?.isSecret == true)
        #expect(all[0].modified > all[1].modified && all[0].created == all[1].created && all[0].id == all[1].id)
        #expect(try vault.records(of: "e", .version(1))?.first?.field("username") == nil)
        #expect(throws: VaultError.noSuchVersion(key: "e", version: 2)) { try vault.records(of: "e", .version(2)) }
        #expect(try vault.records(of: "x", .all) == nil)
        #expect(throws: VaultError.fieldExists(key: "e", field: "username")) {
            try vault.apply([.requireField(entry: "e", field: "username", exists: false), .setField(entry: "e", field: "username", value: SecureBytes(string: "b"))])
        }
        #expect(throws: VaultError.noSuchField(key: "e", field: "url")) { try vault.apply([.requireField(entry: "e", field: "url", exists: true)]) }
        #expect(throws: VaultError.noSuchEntry(key: "x", path: path)) { try vault.apply([.requireField(entry: "x", field: "url", exists: true)]) }
        try vault.apply([.requireField(entry: "x", field: "url", exists: false)])
        #expect(try vault.record(of: "e")?.field("username")?.value.stringValue == "al", "nothing of a failed batch was written")
    }
}

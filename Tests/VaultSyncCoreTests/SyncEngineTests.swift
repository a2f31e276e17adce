import Foundation
import Synchronization
import Testing
import VaultCore
import VaultSyncCore

/// The sync engine over the one seam (issue 34 §2), without networking: two vault files made one through a third
/// (the local file as a copy), and the loop's ends (a copy that keeps changing, one busy, one deleted) against a
/// scripted copy.
@Suite struct SyncEngineTests {
    let directory: String
    let passphrase = SecureBytes(string: "correct horse battery staple")

    init() throws {
        directory = NSTemporaryDirectory() + "/sync-engine-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    func store(_ name: String) -> SecureKeyValueStore { SecureKeyValueStore(path: directory + "/" + name, options: .insecureForTesting) }

    func engine(_ store: SecureKeyValueStore) -> SyncEngine {
        var engine = SyncEngine(vault: store)
        engine.stateDirectory = directory + "/state"
        return engine
    }

    @Test func twoVaultsSyncThroughAVaultFileAsTheCopy() async throws {
        let a = store("a.vault")
        try a.open(with: passphrase)
        defer { a.close() }
        try a.put("1", forKey: "one")
        let copy = LocalFileStorage(path: directory + "/copy.vault")

        let created = try await engine(a).sync(with: copy)
        #expect(created.created && created.pushed && created.attempts == 1)
        #expect(FileManager.default.contents(atPath: copy.path) == FileManager.default.contents(atPath: a.path))

        // No vault at b: the copy becomes it, once it opens with b's passphrase.
        let b = store("b.vault")
        defer { b.close() }
        var adopting = SyncEngine(path: b.path, open: { [passphrase] in
            try b.open(with: passphrase, createIfMissing: false)
            return b
        }, stateDirectory: directory + "/state")
        adopting.kdfPolicy = .insecureForTesting
        let adopted = try await adopting.sync(with: copy)
        #expect(adopted.fetched && !adopted.pushed)
        #expect(try b.getString("one") == "1")

        try b.put("2", forKey: "two")
        let sent = try await engine(b).sync(with: copy)
        #expect(sent.pushed && !sent.created && sent.merge?.added == [])
        let received = try await engine(a).sync(with: copy)
        #expect(received.merge?.added == ["two"] && !received.pushed)
        #expect(try a.getString("two") == "2")
    }

    /// A copy whose answers are scripted, counting reads and writes, keeping what was written.
    final class ScriptedCopy: VaultCopy {
        let label = "scripted://copy"
        let read: FetchedCopy
        let writes: [StoredCopy]
        let counts = Mutex((fetches: 0, stores: 0))
        let written = Mutex<[[UInt8]]>([])

        init(read: FetchedCopy = .notFound(deleted: nil), writes: [StoredCopy]) {
            self.read = read
            self.writes = writes
        }

        func fetch(ifNoneMatch: StorageVersion?) async throws -> FetchedCopy {
            counts.withLock { $0.fetches += 1 }
            return read
        }

        func store(_ bytes: [UInt8], ifMatch: StorageVersion?) async throws -> StoredCopy {
            written.withLock { $0.append(bytes) }
            let index = counts.withLock { counts in
                counts.stores += 1
                return counts.stores - 1
            }
            return writes[min(index, writes.count - 1)]
        }
    }

    /// A vault that says which file its merge wrote (as the agent does in the merge's answer): `file`, whatever is on
    /// disk. Everything else is the store's.
    final class SayingVault: KeyValueVault, Sendable {
        let store: SecureKeyValueStore
        let file: [UInt8]
        init(_ store: SecureKeyValueStore, file: [UInt8]) {
            self.store = store
            self.file = file
        }
        var path: String { store.path }
        func contains(_ key: String) throws -> Bool { try store.contains(key) }
        func getBytes(_ key: String) throws -> SecureBytes? { try store.getBytes(key) }
        func keys() throws -> [String] { try store.keys() }
        func attributes(forKey key: String) throws -> EntryAttributes? { try store.attributes(forKey: key) }
        func listing() throws -> [(name: String, attributes: EntryAttributes)] { try store.listing() }
        func entries(_ keys: [String]) throws -> [(value: SecureBytes?, attributes: EntryAttributes)?] { try store.entries(keys) }
        func write(_ changes: VaultChanges) throws { try store.write(changes) }
        func remove(_ key: String) throws -> Bool { try store.remove(key) }
        func changePassphrase(to newPassphrase: SecureBytes, parameters: Argon2id.Parameters?) throws {
            try store.changePassphrase(to: newPassphrase, parameters: parameters)
        }
        func reload() throws { try store.reload() }
        func close() { store.close() }
        func records(of name: String, _ which: EntryVersions) throws -> [EntryRecord]? { try store.records(of: name, which) }
        func apply(_ changes: [DocumentChange]) throws { try store.apply(changes) }
        func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> MergeReport {
            try store.merge(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions)
        }
        func mergeKeepingFile(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> (report: MergeReport, file: [UInt8]?) {
            let report = try merge(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions)
            return (report, file)
        }
        func deletedEntries() throws -> [VaultDocument.DeletedEntry] { try store.deletedEntries() }
        func requireFields() throws { try store.requireFields() }
        func search(prefix: String, required: [(field: String, value: [UInt8])]) throws -> [EntryRecord] {
            try store.search(prefix: prefix, required: required)
        }
    }

    /// Through the agent a sync is one operation (issue 34 §2): the file the merge wrote, as the vault said it, is
    /// what is sent; the local file is not read again.
    @Test func theFileTheMergeSaysItWroteIsSentNotReadAgain() async throws {
        let local = try localVault()
        defer { local.close() }
        // The copy: another replica of this vault, with an entry this one lacks and lacking "one"'s later change.
        let other = store("other.vault")
        try FileManager.default.copyItem(atPath: local.path, toPath: other.path)
        try other.open(with: passphrase)
        try other.put("from the other", forKey: "other")
        other.close()
        try local.put("changed here", forKey: "one")
        let otherBytes = try #require(FileManager.default.contents(atPath: other.path)).map { $0 }

        let said: [UInt8] = Array("the file as the merge said it wrote it".utf8)
        var engine = SyncEngine(path: local.path, open: { [local] in SayingVault(local, file: said) }, stateDirectory: nil)
        engine.kdfPolicy = .insecureForTesting
        let copy = ScriptedCopy(read: .object(bytes: otherBytes, version: StorageVersion("v1")), writes: [.stored(version: StorageVersion("v2"))])
        let report = try await engine.sync(with: copy)
        #expect(report.merge?.added == ["other"] && report.pushed)
        #expect(copy.written.withLock { $0 == [said] }, "what was sent is the file the merge said it wrote, not the file read again")
        #expect(try local.getString("other") == "from the other")
    }

    func localVault() throws -> SecureKeyValueStore {
        let local = store("local.vault")
        try local.open(with: passphrase)
        try local.put("1", forKey: "one")
        return local
    }

    @Test func aCopyThatKeepsChangingIsGivenUpAfterTheAttempts() async throws {
        let local = try localVault()
        defer { local.close() }
        let copy = ScriptedCopy(writes: [.preconditionFailed])
        var engine = engine(local)
        engine.attempts = 3
        await #expect(throws: SyncError.keptChanging(remote: "scripted://copy", attempts: 3)) { try await engine.sync(with: copy) }
        #expect(copy.counts.withLock { $0 } == (fetches: 3, stores: 3))
    }

    @Test func aBusyCopyIsWaitedForThenWritten() async throws {
        let local = try localVault()
        defer { local.close() }
        let copy = ScriptedCopy(writes: [.conflict, .conflict, .stored(version: StorageVersion("v1"))])
        var engine = engine(local)
        let waited = Mutex<[Int]>([])
        engine.backOff = { attempt in waited.withLock { $0.append(attempt) } }
        let report = try await engine.sync(with: copy)
        #expect(report.pushed && report.created && report.attempts == 3)
        #expect(waited.withLock { $0 } == [1, 2])
    }

    @Test func aCopyDeletedWhileSyncingIsNotWrittenAgainUnlessAsked() async throws {
        let local = try localVault()
        defer { local.close() }
        await #expect(throws: SyncError.deletedInStore(remote: "scripted://copy", whileSyncing: true)) {
            try await engine(local).sync(with: ScriptedCopy(writes: [.notFound]))
        }
        var recreating = engine(local)
        recreating.recreate = true
        let report = try await recreating.sync(with: ScriptedCopy(writes: [.notFound, .stored(version: nil)]))
        #expect(report.pushed && report.attempts == 2)
    }

    @Test func neitherCopyIsNothingToSync() async throws {
        let path = directory + "/none.vault"
        let engine = SyncEngine(path: path, open: { throw VaultError.vaultNotFound(path: path) }, stateDirectory: nil)
        await #expect(throws: SyncError.nothingToSync(local: path, remote: "scripted://copy")) {
            try await engine.sync(with: ScriptedCopy(writes: [.preconditionFailed]))
        }
    }
}

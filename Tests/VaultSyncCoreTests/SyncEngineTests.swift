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

    /// A copy whose answers are scripted, counting reads and writes.
    final class ScriptedCopy: VaultCopy {
        let label = "scripted://copy"
        let writes: [StoredCopy]
        let counts = Mutex((fetches: 0, stores: 0))

        init(writes: [StoredCopy]) { self.writes = writes }

        func fetch(ifNoneMatch: StorageVersion?) async throws -> FetchedCopy {
            counts.withLock { $0.fetches += 1 }
            return .notFound(deleted: nil)
        }

        func store(_ bytes: [UInt8], ifMatch: StorageVersion?) async throws -> StoredCopy {
            let index = counts.withLock { counts in
                counts.stores += 1
                return counts.stores - 1
            }
            return writes[min(index, writes.count - 1)]
        }
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

import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// A storage that lets a test act between a writer's load and its replace, and counts what happened.
final class InterferingStorage: VaultStorage, @unchecked Sendable {
    let inner: LocalFileStorage
    /// Runs before each replace (another writer, between this writer's load and its write).
    var beforeReplace: (() throws -> Void)?
    private(set) var replaces = 0
    private(set) var conflicts = 0

    init(_ inner: LocalFileStorage) { self.inner = inner }
    var label: String { inner.label }
    func load() throws -> StoredVault? { try inner.load() }
    func replace(_ bytes: [UInt8], expecting expected: StorageVersion?) throws -> StorageVersion {
        try beforeReplace?()
        replaces += 1
        do {
            return try inner.replace(bytes, expecting: expected)
        } catch VaultError.storageConflict {
            conflicts += 1
            throw VaultError.storageConflict(path: label)
        }
    }
}

/// Issue 18 §1: the storage seam, and writers that never lose each other's batches.
@Suite("Document store on a storage (format v2)")
struct DocumentStoreTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("v2.vault") }
    static let passphrase = SecureBytes(string: "correct horse battery staple")

    func store(_ storage: any VaultStorage, replica: UInt64) -> DocumentStore {
        DocumentStore(storage: storage, replica: ReplicaID(rawValue: replica), clock: SettableClock(1_000), policy: .insecureForTesting)
    }

    func text(_ store: DocumentStore, _ name: String) -> String? {
        store.document?.value(of: "password", in: name).map { String(decoding: $0.unprotectedBytes, as: UTF8.self) }
    }

    @Test func theLocalFileIsWrittenWholeAndOnlyOverTheVersionItWasReadAs() throws {
        let storage = LocalFileStorage(path: path, lockTimeoutSeconds: 2)
        #expect(try storage.load() == nil)
        let first = try storage.replace([1, 2, 3], expecting: nil)
        #expect(try storage.load()?.bytes == [1, 2, 3])
        #expect(try storage.load()?.version == first)
        // Expecting nothing stored, or a stale version: refused, nothing written.
        #expect(throws: VaultError.storageConflict(path: path)) { try storage.replace([9], expecting: nil) }
        #expect(throws: VaultError.storageConflict(path: path)) { try storage.replace([9], expecting: StorageVersion("stale")) }
        #expect(try storage.load()?.bytes == [1, 2, 3])
        let second = try storage.replace([4, 5], expecting: first)
        #expect(second != first)
        #expect(try storage.load()?.bytes == [4, 5])
        #expect(try storage.load()?.version == second)
        // 0600 in a 0700 directory, whatever the umask.
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    /// A load reads only the bytes that name the version when the file still starts with those of the bytes last
    /// read or written and has their size (the agent's reload after its own write): another writer's seal of the same
    /// size within the same second is read whole, a file of another size too.
    @Test func aLoadReadsAgainWhateverChangedTheVersion() throws {
        let storage = LocalFileStorage(path: path, lockTimeoutSeconds: 2)
        let a = store(storage, replica: 1)
        try a.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        let b = store(LocalFileStorage(path: path, lockTimeoutSeconds: 2), replica: 2)
        try b.open(with: .passphrase(Self.passphrase))
        for round in 0..<5 {
            try a.update([.setField(entry: "github", field: "password", value: SecureBytes(string: "t0k3n-\(round)"))])
            try b.reload()
            #expect(text(b, "github") == "t0k3n-\(round)")
            try b.update([.setField(entry: "github", field: "password", value: SecureBytes(string: "other-\(round)"))])
            try a.reload()
            #expect(text(a, "github") == "other-\(round)")
        }
        // Written here (in place, as no writer of a vault does), at the same size and with the same first bytes: the
        // same version, read whole or not; at another size, read whole.
        let bytes = try #require(try storage.load()).bytes
        var changed = bytes
        changed[changed.count - 1] ^= 1
        try Data(changed).write(to: URL(fileURLWithPath: path))
        #expect(try storage.load()?.version == LocalFileStorage.version(of: changed))
        try Data(bytes + [0]).write(to: URL(fileURLWithPath: path))
        #expect(try storage.load()?.bytes == bytes + [0])
    }

    /// A write keeps the guarded regions of the document it replaced for the next write only when nothing else holds
    /// that document: one a reader still holds keeps its values and its entries through the writes after it, and
    /// the writes recycling the regions of the others read and write every value right.
    @Test func aReplacedDocumentAReaderHoldsKeepsItsValuesThroughLaterWrites() throws {
        let a = store(LocalFileStorage(path: path, lockTimeoutSeconds: 2), replica: 1)
        try a.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        var held: [(round: Int, document: VaultDocument)] = []
        for round in 0..<12 {
            try a.update([
                .setField(entry: "github", field: "password", value: SecureBytes(string: "t0k3n-\(round)")),
                .setField(entry: "entry-\(round)", field: "notes", value: SecureBytes(string: String(repeating: "n", count: 100 * round))),
            ])
            #expect(text(a, "github") == "t0k3n-\(round)")
            if round % 3 == 0 { held.append((round, try #require(a.document))) }
        }
        for (round, document) in held {
            #expect(document.value(of: "password", in: "github")?.stringValue == "t0k3n-\(round)")
            #expect(document.value(of: "notes", in: "entry-\(round)")?.count == 100 * round)
            #expect(document.count == round + 2)
        }
        let reopened = store(LocalFileStorage(path: path, lockTimeoutSeconds: 2), replica: 2)
        try reopened.open(with: .passphrase(Self.passphrase))
        #expect(text(reopened, "github") == "t0k3n-11")
        #expect(reopened.document?.value(of: "notes", in: "entry-11")?.count == 1100)
    }

    @Test func createOpenUpdateRoundTrip() throws {
        let storage = LocalFileStorage(path: path, lockTimeoutSeconds: 2)
        let a = store(storage, replica: 1)
        try a.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        #expect(throws: VaultError.vaultAlreadyExists(path: path)) {
            try store(storage, replica: 2).create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        }
        try a.update([.setField(entry: "github", field: "password", value: SecureBytes(string: "t0k3n"))])
        let b = store(storage, replica: 2)
        try b.open(with: .passphrase(Self.passphrase))
        #expect(text(b, "github") == "t0k3n")
        #expect(b.document?.vaultID == a.document?.vaultID)
        #expect(throws: VaultError.wrongPassphrase(path: path)) {
            try store(storage, replica: 3).open(with: .passphrase(SecureBytes(string: "wrong")))
        }
        #expect(throws: VaultError.vaultNotFound(path: directory.file("none.vault"))) {
            try store(LocalFileStorage(path: directory.file("none.vault")), replica: 4).open(with: .passphrase(Self.passphrase))
        }
    }

    /// Two writers open the same vault; B writes between A's load and A's replace. A's replace conflicts, A loads
    /// again and applies its batch to B's vault: both entries are there, and each writer's clock is its own.
    @Test func aWriterThatMeetsAConflictReappliesItsBatchAndLosesNothing() throws {
        let interfering = InterferingStorage(LocalFileStorage(path: path, lockTimeoutSeconds: 2))
        let a = store(interfering, replica: 1)
        try a.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        let b = store(LocalFileStorage(path: path, lockTimeoutSeconds: 2), replica: 2)
        try b.open(with: .passphrase(Self.passphrase))
        var interfered = false
        interfering.beforeReplace = {
            guard !interfered else { return }
            interfered = true
            try b.update([.setField(entry: "from-b", field: "password", value: SecureBytes(string: "b"))])
        }
        try a.update([.setField(entry: "from-a", field: "password", value: SecureBytes(string: "a"))])
        #expect(interfering.conflicts == 1 && interfering.replaces == 3)  // create, the conflict, the retry
        let check = store(LocalFileStorage(path: path), replica: 9)
        try check.open(with: .passphrase(Self.passphrase))
        #expect(check.document?.names == ["from-a", "from-b"])
        #expect(Set(check.document!.replicas.keys) == [ReplicaID(rawValue: 1), ReplicaID(rawValue: 2)])
        #expect(text(check, "from-a") == "a" && text(check, "from-b") == "b")
    }

    /// Conflicts on every attempt: after the bounded attempts the writer gives up, and the stored vault is the
    /// other writers' alone.
    @Test func aWriterGivesUpAfterItsAttemptsAndWritesNothing() throws {
        let interfering = InterferingStorage(LocalFileStorage(path: path, lockTimeoutSeconds: 2))
        let a = store(interfering, replica: 1)
        try a.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        let b = store(LocalFileStorage(path: path, lockTimeoutSeconds: 2), replica: 2)
        try b.open(with: .passphrase(Self.passphrase))
        var round = 0
        interfering.beforeReplace = {
            round += 1
            try b.update([.setField(entry: "b\(round)", field: "password", value: SecureBytes(string: "b"))])
        }
        #expect(throws: VaultError.storageConflict(path: path)) {
            try a.update([.setField(entry: "from-a", field: "password", value: SecureBytes(string: "a"))], attempts: 3)
        }
        #expect(interfering.conflicts == 3)
        let check = store(LocalFileStorage(path: path), replica: 9)
        try check.open(with: .passphrase(Self.passphrase))
        #expect(check.document?.names == ["b1", "b2", "b3"])
        // A batch that another writer's change made invalid fails as such, with nothing written.
        interfering.beforeReplace = { try b.update([.setField(entry: "taken", field: "password", value: SecureBytes(string: "b"))]) }
        #expect(throws: VaultError.entryExists(key: "taken", path: path)) {
            try a.update([.copy(from: "b1", to: "taken")])
        }
    }

    /// The local file's load skips reading a file it read before when its identity (inode, size, times) is
    /// unchanged and a second old; anything written since (a rename, a write in place) is read.
    @Test func aLoadSeesEveryWriteAndSkipsOnlyAnUnchangedFile() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("cache.vault")
        let storage = LocalFileStorage(path: path)
        let first = [UInt8](repeating: 1, count: 512), second = [UInt8](repeating: 2, count: 512)
        let version = try storage.replace(first, expecting: nil)
        #expect(try storage.load()?.bytes == first, "a file written just now is read")
        // In place, same size, at once: read (the times' clock is coarse, so a young file is never trusted).
        try Data(second).write(to: URL(fileURLWithPath: path))
        #expect(try storage.load()?.bytes == second)
        usleep(2_100_000)
        #expect(try storage.load()?.bytes == second)
        #expect(try storage.load()?.bytes == second, "unchanged: the remembered bytes")
        try Data(first).write(to: URL(fileURLWithPath: path))
        #expect(try storage.load()?.bytes == first, "a write in place changes the change time")
        #expect(try storage.load()?.version == version)
        _ = try storage.replace(second, expecting: version)
        #expect(try storage.load()?.bytes == second, "a rename is a new inode")
    }
}

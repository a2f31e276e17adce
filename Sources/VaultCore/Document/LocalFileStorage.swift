import Synchronization
import VaultSodium
#if canImport(Glibc)
import Glibc
#endif

/// The local vault file as a ``VaultStorage``: the version is a hash of the file's bytes; a replace takes the
/// vault's lock (`flock` on `<path>.lock`, waiting up to `lockTimeoutSeconds`), re-reads the file, compares, then
/// writes a temporary file, `fsync`s it, renames it over the vault and `fsync`s the directory, as the store does.
/// Files are 0600 in a directory of 0700; symbolic links and loose permissions are refused.
public struct LocalFileStorage: VaultStorage {
    public let path: String
    public let lockTimeoutSeconds: Double

    /// The file as last loaded, with its identity (shared by copies of this value).
    private let cache = LoadCache()

    final class LoadCache: Sendable {
        private let held = Mutex<(identity: FileIdentity, stored: StoredVault)?>(nil)
        func withLock<R>(_ body: (inout (identity: FileIdentity, stored: StoredVault)?) -> R) -> R { held.withLock { body(&$0) } }
        /// What ``loadForWrite()`` read while the vault's lock is held (``exclusively(_:)`` forgets it when it takes
        /// the lock): the file's identity and its version.
        let readForWrite = Mutex<(identity: FileIdentity, version: StorageVersion)?>(nil)
        /// The bytes last read or written, whatever their file's times.
        let lastKnown = Mutex<StoredVault?>(nil)
    }

    public init(path: String, lockTimeoutSeconds: Double = 10) {
        self.path = path
        self.lockTimeoutSeconds = lockTimeoutSeconds
    }

    public var label: String { path }

    /// A hash of the file's size and of the bytes that name its content: for a version-2 file the header up to
    /// and including the body's tag (``DocumentHeader/identifyingPrefixLength(_:)``: hashing a 1 MB body three
    /// times per write was a fifth of a put's time at 10,000 entries), for anything else every byte.
    public static func version(of bytes: [UInt8]) -> StorageVersion {
        let covered = DocumentHeader.identifyingPrefixLength(bytes) ?? bytes.count
        var input = withUnsafeBytes(of: UInt64(bytes.count).littleEndian, Array.init)
        input += bytes[0..<covered]
        return StorageVersion(Posix.hex(input.withUnsafeBytes { Sodium.blake2b256($0) }.prefix(16)))
    }

    public func load() throws -> StoredVault? {
        // The file as last read, when its inode says it is the same file, unchanged: the agent loads before every
        // request, and reading and hashing a 1 MB vault each time was most of a request's work. Every write
        // renames a new file into place (a new inode, a new ctime); chmod, chown and any write in place change
        // the ctime too.
        let before = Self.identity(of: path)
        if let before, let cached = cache.withLock({ $0?.identity == before ? $0?.stored : nil }) { return cached }
        // Else read (the agent loads before every request, and its own last write is too recent for the cache above).
        guard let stored = try read() else { return nil }
        // Only a file whose change time is a second old is remembered: file times come from a coarse clock (a
        // few ms), so a write in place within the same tick would leave every field of the identity as it was
        // (git's "racily clean" rule).
        if let before, Self.identity(of: path) == before, before.changed.0 < Self.nowSeconds() - 1 {
            cache.withLock { $0 = (before, stored) }
        }
        return stored
    }

    /// Reads the file, always (a writer under the lock: attributes alone may be stale on NFS), but not past the
    /// bytes that name its version when they are those last read or written (``read()``).
    public func loadForWrite() throws -> StoredVault? {
        let before = Self.identity(of: path)
        guard let stored = try read() else { return nil }
        if let before, Self.identity(of: path) == before { cache.readForWrite.withLock { $0 = (before, stored.version) } }
        return stored
    }

    /// The file's bytes (`nil`: none): the bytes last read or written when the file has their size and starts with
    /// the bytes that name their version (the header up to the body's tag: ``version(of:)``), without reading the
    /// body again (at 100,000 entries, reading it under the lock was a tenth of a put's time); else the whole file.
    private func read() throws -> StoredVault? {
        let known = cache.lastKnown.withLock { $0 }
        let stored: StoredVault
        if let known, let length = DocumentHeader.identifyingPrefixLength(known.bytes) {
            switch try VaultFile.read(path: path, unlessItStartsWith: Array(known.bytes[0..<length]), size: known.bytes.count) {
            case .missing: return nil
            case .unchanged: return known
            case .contents(let bytes): stored = StoredVault(bytes: bytes, version: Self.version(of: bytes))
            }
        } else {
            guard let bytes = try VaultFile.read(path: path) else { return nil }
            stored = StoredVault(bytes: bytes, version: Self.version(of: bytes))
        }
        cache.lastKnown.withLock { $0 = stored }
        return stored
    }

    /// What tells one file at `path` from another: device, inode, size, modification and change times (ns).
    struct FileIdentity: Equatable, Sendable {
        let device: UInt64, inode: UInt64, size: Int64
        let modified: (Int, Int), changed: (Int, Int)

        static func == (a: FileIdentity, b: FileIdentity) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size && a.modified == b.modified && a.changed == b.changed
        }
    }

    static func nowSeconds() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now.tv_sec
    }

    static func identity(of path: String) -> FileIdentity? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return FileIdentity(
            device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
            modified: (info.st_mtim.tv_sec, info.st_mtim.tv_nsec), changed: (info.st_ctim.tv_sec, info.st_ctim.tv_nsec))
    }

    public func replace(_ bytes: [UInt8], expecting expected: StorageVersion?) throws -> StorageVersion {
        try exclusively { replace in try replace(bytes, expected) }
    }

    /// Runs `body` holding the vault's lock; its `replace` re-reads, compares and writes without taking it again.
    public func exclusively<R>(_ body: (_ replace: ([UInt8], StorageVersion?) throws -> StorageVersion) throws -> R) throws -> R {
        try VaultFile.createDirectory(for: path)
        let lock = try VaultLock(vaultPath: path, timeoutSeconds: lockTimeoutSeconds)
        defer { lock.release() }
        cache.readForWrite.withLock { $0 = nil }
        return try body { bytes, expected in
            // Read under the lock, never remembered from before it (file attributes may be cached, on NFS, where
            // the bytes are not): what a load under this lock read is the version expected when the file is the
            // same one, unchanged (the same identity; a writer that takes the lock cannot have written since).
            // Reading it again (a second read of the whole vault per write) would only catch a writer that ignores
            // the lock and writes in place within one tick of the file clock at the same size, and such a writer
            // can as well write after that read.
            let read = cache.readForWrite.withLock { read in defer { read = nil }; return read }
            let stored: StorageVersion?
            if let read, read.version == expected, Self.identity(of: path) == read.identity {
                stored = read.version
            } else {
                stored = try VaultFile.read(path: path).map(Self.version(of:))
            }
            guard stored == expected else { throw VaultError.storageConflict(path: path) }
            try VaultFile.writeAtomically(bytes, to: path)
            let written = StoredVault(bytes: bytes, version: Self.version(of: bytes))
            cache.lastKnown.withLock { $0 = written }
            return written.version
        }
    }
}

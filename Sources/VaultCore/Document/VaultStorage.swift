/// The version of stored vault bytes, as the storage knows it: what a conditional replace expects (an S3 ETag,
/// an OpenBao KV version, a local file's content hash).
public struct StorageVersion: Hashable, Sendable, CustomStringConvertible {
    public let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { value }
}

/// Stored vault bytes and their version.
public struct StoredVault: Sendable {
    public let bytes: [UInt8]
    public let version: StorageVersion
    public init(bytes: [UInt8], version: StorageVersion) {
        self.bytes = bytes
        self.version = version
    }
}

/// Where the vault a program opens lives (issue 18 §1): the local file. A storage knows nothing of the format; the
/// document layer knows nothing of where bytes live. It is the synchronous, lockable form of the one seam of copies
/// (``VaultCopy``, issue 34 §2): every storage is a copy too, so sync reaches it as it reaches S3 or OpenBao.
public protocol VaultStorage: VaultCopy {
    /// How messages name the vault (a path, a URL).
    var label: String { get }
    /// The stored bytes and their version, or `nil` when nothing is stored.
    func load() throws -> StoredVault?
    /// Stores `bytes` only if the stored version is still `expected` (`nil`: only if nothing is stored), as one
    /// atomic, durable step; returns the new version.
    ///
    /// - Throws: ``VaultError/storageConflict(path:)`` when the stored version moved (nothing is written).
    func replace(_ bytes: [UInt8], expecting expected: StorageVersion?) throws -> StorageVersion
    /// Runs `body` while no other writer can replace the stored vault, where the storage can promise that (a local
    /// file: its lock), so that a load, a change and a replace inside it never conflict: writers queue instead of
    /// retrying. `body` replaces through the function it is given (``replace(_:expecting:)`` would wait for the
    /// lock held). A storage without such a lock runs `body` as it is, and its conditional replace catches other
    /// writers (the default).
    func exclusively<R>(_ body: (_ replace: ([UInt8], StorageVersion?) throws -> StorageVersion) throws -> R) throws -> R
    /// The stored bytes read anew, for a writer (a local file: never what was remembered of it).
    func loadForWrite() throws -> StoredVault?
}

extension VaultStorage {
    public func loadForWrite() throws -> StoredVault? { try load() }

    public func exclusively<R>(_ body: (_ replace: ([UInt8], StorageVersion?) throws -> StorageVersion) throws -> R) throws -> R {
        try body { bytes, expected in try replace(bytes, expecting: expected) }
    }
}

/// A copy of a vault read and written conditionally (compare-and-set): the one seam of sync (issue 34 §2). The local
/// file (``LocalFileStorage``), an S3 object (conditional writes), an OpenBao KV secret (check-and-set) are copies;
/// a new backend (WebDAV's `If-Match`, say) is one more conformer of these two functions, and the sync engine
/// (VaultSyncCore's `SyncEngine`) merges this vault with any of them.
///
/// ``VaultStorage`` is this seam's synchronous form, for the copy a vault is opened from: every storage is a copy
/// (it refines this protocol, and its ``fetch(ifNoneMatch:)`` and ``store(_:ifMatch:)`` are its ``VaultStorage/load()``
/// and ``VaultStorage/replace(_:expecting:)``), so a vault file on a mounted disk syncs as an S3 object does. The two
/// are not one protocol with one calling convention: the document layer reads and writes the local file on every
/// `get` and `put`, synchronously and under its lock, and an `async` there would put a task hop on `vault`'s hot
/// paths; a remote copy is reached over the network and is `async`.
///
/// The version is the copy's own tag, kept as the store gave it (an S3 ETag, an OpenBao version, a file's hash).
public protocol VaultCopy: Sendable {
    /// How messages name it: a path, `s3://BUCKET/KEY`, `bao://HOST:PORT/MOUNT/PATH`.
    var label: String { get }
    /// What names this copy among every store a machine may reach, for the record of the last sync (the label,
    /// unless the label leaves out where the store is: an S3 bucket's endpoint and region).
    var recordKey: String { get }
    /// The copy, or ``FetchedCopy/notModified`` when it is still the version `ifNoneMatch`.
    func fetch(ifNoneMatch: StorageVersion?) async throws -> FetchedCopy
    /// Writes `bytes` only over version `ifMatch`, or only when there is no copy (`nil`).
    func store(_ bytes: [UInt8], ifMatch: StorageVersion?) async throws -> StoredCopy
}

extension VaultCopy {
    public var recordKey: String { label }
}

/// What reading a copy found.
public enum FetchedCopy: Sendable, Equatable {
    /// The copy is still the version given.
    case notModified
    /// No copy; `deleted`: the version to write over when the store keeps one for a deleted copy (OpenBao's soft
    /// delete: its next write must name the deleted version).
    case notFound(deleted: StorageVersion?)
    case object(bytes: [UInt8], version: StorageVersion)
}

/// What a conditional write did.
public enum StoredCopy: Sendable, Equatable {
    /// Written; its new version when the store gave one.
    case stored(version: StorageVersion?)
    /// The copy is no longer the version given (or exists, when creating).
    case preconditionFailed
    /// Another write is in progress: back off and try again.
    case conflict
    /// The copy was deleted since it was read.
    case notFound
}

/// A storage as a copy: its load and conditional replace, run off the cooperative pool (they block on the file and
/// its lock).
extension VaultStorage {
    public func fetch(ifNoneMatch: StorageVersion?) async throws -> FetchedCopy {
        guard let stored = try await runBlocking({ try self.load() }) else { return .notFound(deleted: nil) }
        if let ifNoneMatch, stored.version == ifNoneMatch { return .notModified }
        return .object(bytes: stored.bytes, version: stored.version)
    }

    public func store(_ bytes: [UInt8], ifMatch: StorageVersion?) async throws -> StoredCopy {
        do {
            return .stored(version: try await runBlocking { try self.replace(bytes, expecting: ifMatch) })
        } catch VaultError.storageConflict {
            return .preconditionFailed
        }
    }
}

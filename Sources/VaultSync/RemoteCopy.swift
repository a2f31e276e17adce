/// A copy of a vault kept elsewhere, read and written conditionally (compare-and-set): what `vault sync` needs of
/// a store. The version tag (an S3 ETag, an OpenBao secret version) is kept as the store gave it and handed back.
public protocol RemoteCopy: Sendable {
    /// How messages name it: `s3://BUCKET/KEY`, `bao://HOST:PORT/MOUNT/PATH`.
    var label: String { get }
    /// What names this copy among every store a machine may reach, for the record of the last sync (the label,
    /// unless the label leaves out where the store is: an S3 bucket's endpoint and region).
    var recordKey: String { get }
    /// The copy, or ``RemoteFetched/notModified`` when it is still the version `ifNoneMatch`.
    func get(ifNoneMatch: String?) async throws -> RemoteFetched
    /// Writes `bytes` only over version `ifMatch`, or only when there is no copy (`nil`).
    func put(_ bytes: [UInt8], ifMatch: String?) async throws -> RemoteStored
}

extension RemoteCopy {
    public var recordKey: String { label }
}

public enum RemoteFetched: Sendable, Equatable {
    /// The copy is still the version given.
    case notModified
    /// No copy; `deleted`: the version tag to write over when the store keeps one for a deleted copy (OpenBao's
    /// soft delete: its next write must name the deleted version).
    case notFound(deleted: String?)
    case object(bytes: [UInt8], etag: String)
}

public enum RemoteStored: Sendable, Equatable {
    /// Written; its new version tag when the store gave one.
    case stored(etag: String?)
    /// The copy is no longer the version given (or exists, when creating).
    case preconditionFailed
    /// Another write is in progress: back off and try again.
    case conflict
    /// The copy was deleted since it was read.
    case notFound
}

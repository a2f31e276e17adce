/// Format version 3's sync bookkeeping (docs/FORMAT.md, "Version 3"): what each replica has seen, the tombstone
/// horizon below which deletions are dropped, and what a deletion deleted and kept.
extension VaultDocument {
    /// What a tombstone knows besides when it was made.
    struct Deletion: Sendable {
        /// The `modified` stamp of the version deleted.
        var of: HybridTimestamp
        /// A version made after ``of`` and before the deletion (a change on another copy that the deletion won over
        /// at a merge), with the name the entry had: what ``DocumentChange/restoreDeleted(entry:)`` brings back.
        var kept: Kept?
    }

    /// A version a deletion kept.
    struct Kept: Sendable {
        var name: String
        var version: Version
    }

    /// The parts of a document that only version 3 stores, as one value (to build a document).
    struct SyncState: Sendable {
        var seen: [ReplicaID: UInt64] = [:]
        var horizon: UInt64 = 0
        var deletions: [DocumentID: Deletion] = [:]
    }

    var syncState: SyncState { SyncState(seen: seen, horizon: horizon, deletions: deletions) }

    /// ``syncState`` with the kept versions' values copied into `arena`.
    func syncState(movedInto arena: GuardedArena) -> SyncState {
        var state = syncState
        state.deletions = deletions.mapValues { deletion in
            var deletion = deletion
            if let fields = deletion.kept?.version.fields { deletion.kept!.version.fields = moved(fields: fields, into: arena) }
            return deletion
        }
        return state
    }

    /// What tombstone `id` deleted and kept: recorded, or (a version-2 tombstone) the version stamped as the
    /// deletion itself, nothing kept.
    func deletion(of id: DocumentID) -> Deletion {
        deletions[id] ?? Deletion(of: tombstones[id] ?? HybridTimestamp(packed: 0, replica: ReplicaID(rawValue: 0)), kept: nil)
    }

    /// A deleted entry of which a version is kept (``DocumentChange/restoreDeleted(entry:)`` brings it back).
    public struct DeletedEntry: Equatable, Sendable {
        public let id: DocumentID
        /// The name the entry had in the version kept.
        public let name: String
        public let deleted: HybridTimestamp
        /// When the version kept was made.
        public let kept: HybridTimestamp
    }

    /// The deleted entries with a kept version, by name, then newest kept first.
    public var deleted: [DeletedEntry] {
        deletions.compactMap { id, deletion in
            guard let kept = deletion.kept, let time = tombstones[id] else { return nil }
            return DeletedEntry(id: id, name: kept.name, deleted: time, kept: kept.version.modified)
        }.sorted { ($0.name, $1.kept) < ($1.name, $0.kept) }
    }

    /// The latest time below which this copy holds every timestamp any replica issued (or had them before a
    /// horizon dropped their tombstones): what a merge compares with the other copy's ``horizon``.
    var knownBelow: UInt64 { max(horizon, seen.values.max() ?? 0) }

    /// After `replica` changed or merged this document (version 3 only; a version-2 file stores none of this):
    /// notes what `replica` has seen, the smallest clock of every replica in its table (whatever that replica's
    /// age: a replica that went quiet may still hold changes nobody has seen, so it bounds what anyone has seen).
    ///
    /// No tombstone is dropped by this version (docs/FORMAT.md, "Version 3": the horizon stays as it is). A review
    /// found that dropping by "every active replica has seen it and it is 180 days old" with a table that forgets
    /// quiet replicas lets a deletion come back (a copy that comes back after 180 days and writes once, a deletion
    /// that arrives late, a clock set far ahead or behind); dropping safely needs what each replica saw of each
    /// other replica, which this version records only as one number per replica.
    func settle(replica: ReplicaID, now: UInt64) {
        guard formatVersion >= 3, replicas[replica] != nil, let least = replicas.values.map(\.packed).min() else { return }
        seen[replica] = max(seen[replica] ?? 0, least)
    }

    /// The tombstones and deletions of two copies united: per id the later deletion; what was deleted, the later
    /// of what either deletion deleted (a version either deleter saw was deleted on purpose); the latest version
    /// either kept that is later than that (the same whichever side is ours and in whatever order copies are merged).
    static func unitedDeletions(
        _ ours: VaultDocument, _ theirs: VaultDocument, into values: GuardedArena
    ) -> (tombstones: [DocumentID: HybridTimestamp], deletions: [DocumentID: Deletion]) {
        var tombstones = ours.tombstones
        var deletions: [DocumentID: Deletion] = [:]
        for (id, _) in ours.tombstones where ours.deletions[id] != nil { deletions[id] = ours.deletions[id] }
        for (id, time) in theirs.tombstones {
            let other = theirs.deletion(of: id)
            guard let mine = tombstones[id] else {
                tombstones[id] = time
                var moved = other
                if let kept = other.kept {
                    moved.kept!.version.fields = theirs.moved(fields: kept.version.fields, into: values)
                }
                deletions[id] = moved
                continue
            }
            tombstones[id] = max(mine, time)
            let ours = ours.deletion(of: id)
            var kept = ours.kept
            // Theirs's kept version when it is the later one (ours's, already in `values`, when they are the same).
            if let candidate = other.kept, later(kept, candidate).map({ same($0, candidate) }) == true, kept.map({ same($0, candidate) }) != true {
                var moved = candidate
                moved.version.fields = theirs.moved(fields: candidate.version.fields, into: values)
                kept = moved
            }
            deletions[id] = Deletion(of: max(ours.of, other.of), kept: kept)
        }
        // What the deletion deleted, or anything older, is not kept.
        for (id, deletion) in deletions {
            if let kept = deletion.kept, kept.version.modified <= deletion.of { deletions[id]!.kept = nil }
        }
        return (tombstones, deletions)
    }

    /// Whether two kept versions are the same version (a version's clock names its content) under one name.
    static func same(_ a: Kept, _ b: Kept) -> Bool { a.version.modified == b.version.modified && a.name == b.name }

    /// The later of two kept versions (by clock, then name: the same whichever comes first).
    static func later(_ a: Kept?, _ b: Kept?) -> Kept? {
        guard let a else { return b }
        guard let b else { return a }
        if a.version.modified != b.version.modified { return a.version.modified > b.version.modified ? a : b }
        return a.name.utf8.lexicographicallyPrecedes(b.name.utf8) ? b : a
    }

    /// `fields` (of this document) with their values copied into `arena`.
    func moved(fields: [Field], into arena: GuardedArena) -> [Field] {
        values.withUnsafeBytes { all in
            fields.map { Field(name: $0.name, value: arena.append(UnsafeRawBufferPointer(rebasing: all[$0.value])), isSecret: $0.isSecret, code: $0.code) }
        }
    }
}

/// Format version 3's sync bookkeeping (docs/FORMAT.md, "Version 3"): what each replica has seen, the tombstone
/// horizon below which deletions are dropped, and what a deletion deleted and kept.
extension VaultDocument {
    /// How long a replica that writes nothing still counts (its clock holds the horizon), and how long a tombstone
    /// is kept at least: 180 days.
    public static let replicaLifetime: UInt64 = 180 * 86_400_000

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

    /// The latest time below which this copy holds every timestamp any replica issued (or has dropped it below
    /// the horizon): what a merge compares with the other copy's ``horizon``.
    var knownBelow: UInt64 { max(horizon, seen.values.max() ?? 0) }

    /// The time replicas and tombstones are aged against: the latest clock of the table not more than a day
    /// ahead of `now`, else `now` (packed).
    func referenceTime(now: UInt64) -> UInt64 {
        let limit = min(now &+ Self.maximumClockLead, HybridTimestamp.maximumMilliseconds)
        let latest = replicas.values.filter { $0.milliseconds <= limit }.map(\.packed).max()
        return latest ?? min(now, HybridTimestamp.maximumMilliseconds) << 16
    }

    /// Whether `replica` still counts: its clock within ``replicaLifetime`` of `reference` (packed).
    func isActive(_ replica: ReplicaID, reference: UInt64) -> Bool {
        guard let time = replicas[replica] else { return false }
        return time.packed >= reference &- min(reference, Self.replicaLifetime << 16)
    }

    /// After `replica` changed or merged this document (version 3 only; a version-2 file stores none of this):
    /// notes what `replica` has seen (the smallest clock of the active replicas), drops the tombstones deleted
    /// before what every active replica has seen and before ``replicaLifetime`` ago (the horizon then records the
    /// latest of them), and drops the replicas that no longer count and that no stamp names.
    func settle(replica: ReplicaID, now: UInt64) {
        guard formatVersion >= 3 else { return }
        let reference = referenceTime(now: now)
        let active = replicas.keys.filter { isActive($0, reference: reference) }
        if replicas[replica] != nil, let least = active.compactMap({ replicas[$0]?.packed }).min() {
            seen[replica] = max(seen[replica] ?? 0, least)
        }
        let everySeen = active.map { seen[$0] ?? 0 }.min() ?? 0
        let bound = min(everySeen, reference &- min(reference, Self.replicaLifetime << 16))
        for (id, time) in tombstones where time.packed < bound {
            tombstones[id] = nil
            deletions[id] = nil
            horizon = max(horizon, time.packed + 1)
        }
        let leaving = replicas.keys.filter { !isActive($0, reference: reference) }
        guard !leaving.isEmpty else { return }
        var named = Set<ReplicaID>()
        for entry in entries.values {
            named.insert(entry.created.replica)
            named.insert(entry.modified.replica)
            for version in entry.history { named.insert(version.modified.replica) }
        }
        for (id, time) in tombstones {
            named.insert(time.replica)
            let deletion = deletion(of: id)
            named.insert(deletion.of.replica)
            if let kept = deletion.kept { named.insert(kept.version.modified.replica) }
        }
        for replica in leaving where !named.contains(replica) {
            replicas[replica] = nil
            seen[replica] = nil
        }
    }

    /// The tombstones and deletions of two copies united: per id the later deletion with what it deleted, and the
    /// latest version either kept that is later than what the chosen deletion deleted.
    static func unitedDeletions(
        _ ours: VaultDocument, _ theirs: VaultDocument, into values: GuardedArena
    ) -> (tombstones: [DocumentID: HybridTimestamp], deletions: [DocumentID: Deletion]) {
        var tombstones = ours.tombstones
        var deletions: [DocumentID: Deletion] = [:]
        /// `kept` with its values in `values`, which starts as a copy of ours's (``merge(_:_:now:)``).
        func moved(_ kept: Kept?, from document: VaultDocument) -> Kept? {
            guard var kept, document !== ours else { return kept }
            kept.version.fields = document.moved(fields: kept.version.fields, into: values)
            return kept
        }
        for (id, _) in ours.tombstones {
            let deletion = ours.deletion(of: id)
            if ours.deletions[id] != nil { deletions[id] = Deletion(of: deletion.of, kept: moved(deletion.kept, from: ours)) }
        }
        for (id, time) in theirs.tombstones {
            let mine = tombstones[id]
            let other = theirs.deletion(of: id)
            let chosen = mine.map { time > $0 } ?? true
            let otherKept = moved(other.kept, from: theirs)
            let best = later(deletions[id]?.kept, otherKept)
            if chosen {
                tombstones[id] = time
                deletions[id] = Deletion(of: other.of, kept: best)
            } else {
                deletions[id] = Deletion(of: ours.deletion(of: id).of, kept: best)
            }
        }
        // What the chosen deletion deleted, or anything older, is not kept.
        for (id, deletion) in deletions {
            if let kept = deletion.kept, kept.version.modified <= deletion.of { deletions[id]!.kept = nil }
        }
        return (tombstones, deletions)
    }

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

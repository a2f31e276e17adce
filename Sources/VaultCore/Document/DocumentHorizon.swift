/// Format version 3's sync bookkeeping (docs/FORMAT.md, "The tombstone horizon"): what each replica has seen of every
/// other, the tombstone horizon (per replica, the latest of its deletions dropped), when a writer drops a tombstone and
/// when a merge refuses a copy, and what a deletion deleted and kept.
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
        var seen: [ReplicaID: [ReplicaID: UInt64]] = [:]
        var dropped: [ReplicaID: UInt64] = [:]
        var deletions: [DocumentID: Deletion] = [:]
    }

    var syncState: SyncState { SyncState(seen: seen, dropped: dropped, deletions: deletions) }

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

        public init(id: DocumentID, name: String, deleted: HybridTimestamp, kept: HybridTimestamp) {
            (self.id, self.name, self.deleted, self.kept) = (id, name, deleted, kept)
        }
    }

    /// The deleted entries with a kept version, by name, then newest kept first.
    public var deleted: [DeletedEntry] {
        deletions.compactMap { id, deletion in
            guard let kept = deletion.kept, let time = tombstones[id] else { return nil }
            return DeletedEntry(id: id, name: kept.name, deleted: time, kept: kept.version.modified)
        }.sorted { ($0.name, $1.kept) < ($1.name, $0.kept) }
    }

    /// How long a tombstone is kept at least (its kept version recoverable), and how long a replica may be quiet
    /// (its largest `seen` time that far behind now) before a writer stops waiting for it: 180 days.
    public static let tombstoneRetention: UInt64 = 180 * 86_400_000

    /// Whether this copy has seen every deletion `other` no longer records: for each replica, its clock here is at
    /// or above `other`'s dropped mark (a table that holds time t for a replica has seen every deletion it stamped
    /// up to t). Clocks are compared only with clocks of the same replica.
    func hasSeenDrops(of other: VaultDocument) -> Bool {
        other.dropped.allSatisfy { replica, mark in (replicas[replica]?.packed ?? 0) >= mark }
    }

    /// Whether this copy holds everything `other` holds: its clock of every replica of `other`'s table at or above
    /// `other`'s (a replica's clock rises with each of its writes, so a table at or above it has seen them all).
    /// An entry `other` has and this copy has neither as an entry nor as a tombstone was then deleted here.
    func holdsAll(of other: VaultDocument) -> Bool {
        other.replicas.allSatisfy { replica, time in (replicas[replica]?.packed ?? 0) >= time.packed }
    }

    /// After `replica` changed or merged this document, when it is about to be written (version 3 only; a
    /// version-2 file stores none of this), docs/FORMAT.md, "The tombstone horizon": `replica`'s `seen` becomes its
    /// whole table; a replica other than it whose view is more than ``tombstoneRetention`` old is forgotten (it stays
    /// in the table; a copy it still holds is refused once a deletion it did not see is dropped); then, unless a
    /// replica active in that time has no known view, every tombstone older than ``tombstoneRetention`` that every
    /// known view has seen is dropped, with what it kept, and its replica's dropped mark rises to it.
    ///
    /// `now` (the wall clock) decides when, and which views count: a clock set far ahead here forgets every other
    /// view and drops what only this copy has seen, so that other copies with changes of their own are refused by
    /// ``hasSeenDrops(of:)``; none brings a deletion back (the check compares a replica's clocks with its own).
    func settle(replica: ReplicaID, now: UInt64) {
        guard formatVersion >= 3, replicas[replica] != nil else { return }
        seen[replica] = replicas.mapValues(\.packed)
        let since = now >= Self.tombstoneRetention ? now - Self.tombstoneRetention : 0
        for (other, view) in seen where other != replica {
            guard let latest = view.values.max(), HybridTimestamp(packed: latest, replica: other).milliseconds < since else { continue }
            seen[other] = nil
        }
        guard !tombstones.isEmpty,
              !replicas.contains(where: { id, time in seen[id] == nil && time.milliseconds >= since })
        else { return }
        // Per deleting replica, the least of what every known view has of it: a tombstone at or below it is seen by all.
        var seenByAll: [ReplicaID: UInt64] = [:]
        for deleter in replicas.keys {
            seenByAll[deleter] = seen.values.reduce(UInt64.max) { min($0, $1[deleter] ?? 0) }
        }
        for (id, deleted) in tombstones where deleted.milliseconds < since {
            guard deleted.packed <= seenByAll[deleted.replica] ?? 0 else { continue }
            tombstones[id] = nil
            deletions[id] = nil
            dropped[deleted.replica] = max(dropped[deleted.replica] ?? 0, deleted.packed)
        }
    }

    /// The tombstones a merge keeps of `tombstones`: those above their replica's mark in `dropped` (one copy
    /// dropped the others, having found that every copy which counts had seen them).
    static func undropped(
        _ tombstones: inout [DocumentID: HybridTimestamp], _ deletions: inout [DocumentID: Deletion], dropped: [ReplicaID: UInt64]
    ) {
        guard !dropped.isEmpty else { return }
        for (id, deleted) in tombstones where deleted.packed <= dropped[deleted.replica] ?? 0 {
            tombstones[id] = nil
            deletions[id] = nil
        }
    }

    /// Two copies' `seen`, united: per replica and replica seen, the larger time (a replica's view only grows).
    static func unitedSeen(_ a: [ReplicaID: [ReplicaID: UInt64]], _ b: [ReplicaID: [ReplicaID: UInt64]]) -> [ReplicaID: [ReplicaID: UInt64]] {
        var united = a
        for (replica, view) in b {
            guard let mine = united[replica] else {
                united[replica] = view
                continue
            }
            united[replica] = mine.merging(view, uniquingKeysWith: max)
        }
        return united
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

    /// `fields` (of this document) with their values copied into `arena` (as they are when `arena` is this
    /// document's).
    func moved(fields: [Field], into arena: GuardedArena) -> [Field] {
        guard arena !== values else { return fields }
        return values.withUnsafeBytes { all in
            fields.map { Field(name: $0.name, value: arena.append(UnsafeRawBufferPointer(rebasing: all[$0.value])), isSecret: $0.isSecret, code: $0.code) }
        }
    }
}

/// Bringing clocks from the future back to now (`vault repair --clocks`): a vault that took in a copy whose clocks
/// were far ahead (before merges refused such copies, or from a machine whose wall clock was set years ahead) keeps
/// every value and every version, each stamped in the present.
extension VaultDocument {
    /// What ``repairClocks(replica:now:)`` changed (or would change).
    public struct ClockRepair: Sendable, Equatable {
        /// Entries with a version (current or earlier) stamped in the future, by name.
        public var entries: [String] = []
        /// Deletions (tombstones, or what they deleted or kept) stamped in the future.
        public var deletions = 0
        /// Replicas whose clock (table time, views, dropped mark) was in the future.
        public var replicas: [ReplicaID] = []

        public init() {}

        public var isEmpty: Bool { entries.isEmpty && deletions == 0 && replicas.isEmpty }
    }

    /// Re-stamps every stamp more than ``maximumClockLead`` ahead of `now` (milliseconds) as `replica`, in the present:
    /// in the order they had (so every version keeps its place in its entry's history, and every deletion what it
    /// deleted and kept), each after every stamp that stays. A replica's clock, view or dropped mark in the future is
    /// brought down to the latest stamp of it that stays (a replica that keeps none leaves the table). Values, names and
    /// histories are kept. O(entries + versions + tombstones).
    ///
    /// `replica` should not itself have a clock in the future (a new replica, then: ``DocumentVault`` takes one).
    ///
    /// - Throws: ``VaultError/clockExhausted`` only when the stamps that stay are at the end of time.
    public func repairClocks(replica: ReplicaID, now: UInt64) throws -> ClockRepair {
        let limit = now &+ Self.maximumClockLead
        func future(_ stamp: HybridTimestamp) -> Bool { stamp.milliseconds > limit }
        func futurePacked(_ packed: UInt64) -> Bool { packed >> 16 > limit }
        var repair = ClockRepair()
        // The stamps that stay: the latest of each replica, and of all.
        var present: [ReplicaID: UInt64] = [:]
        var futureStamps = Set<HybridTimestamp>()
        func note(_ stamp: HybridTimestamp) {
            if future(stamp) { futureStamps.insert(stamp) } else { present[stamp.replica] = max(present[stamp.replica] ?? 0, stamp.packed) }
        }
        var touched = Set<DocumentID>()
        for (id, entry) in entries {
            for stamp in [entry.modified, entry.created] + entry.history.map(\.modified) where future(stamp) { touched.insert(id) }
            note(entry.modified)
            note(entry.created)
            for version in entry.history { note(version.modified) }
        }
        var tombstonesAhead = 0
        for (id, deleted) in tombstones {
            let deletion = self.deletion(of: id)
            let stamps = [deleted, deletion.of] + (deletion.kept.map { [$0.version.modified] } ?? [])
            if stamps.contains(where: future) { tombstonesAhead += 1 }
            stamps.forEach(note)
        }
        var aheadReplicas = Set<ReplicaID>()
        for (id, time) in replicas where future(time) { aheadReplicas.insert(id) }
        for (id, mark) in dropped where futurePacked(mark) { aheadReplicas.insert(id) }
        for view in seen.values {
            for (id, time) in view where futurePacked(time) { aheadReplicas.insert(id) }
        }
        // A replica's time stays when it is in the present (it may have issued what no stamp here shows).
        for (id, time) in replicas where !future(time) { present[id] = max(present[id] ?? 0, time.packed) }
        guard !futureStamps.isEmpty || !aheadReplicas.isEmpty else { return repair }

        // New stamps, in the old order, after everything that stays.
        let latest = present.map { HybridTimestamp(packed: $0.value, replica: $0.key) }.max()
        var last = latest
        var mapped: [HybridTimestamp: HybridTimestamp] = [:]
        for stamp in futureStamps.sorted() {
            let next = try HybridTimestamp.next(after: last, replica: replica, now: now)
            mapped[stamp] = next
            last = next
        }
        func map(_ stamp: HybridTimestamp) -> HybridTimestamp { mapped[stamp] ?? stamp }

        var table = entries
        for id in touched {
            var entry = table[id]!
            entry.modified = map(entry.modified)
            var created = map(entry.created)
            if created.packed > entry.modified.packed { created = HybridTimestamp(packed: entry.modified.packed, replica: created.replica) }
            entry.created = created
            entry.history = entry.history.map { Version(fields: $0.fields, modified: map($0.modified), conflict: $0.conflict) }
            table[id] = entry
            repair.entries.append(entry.name)
        }
        if !touched.isEmpty { entries = table }
        if tombstonesAhead > 0 {
            for (id, deleted) in tombstones {
                tombstones[id] = map(deleted)
                guard var deletion = deletions[id] else { continue }
                deletion.of = map(deletion.of)
                if let kept = deletion.kept?.version.modified { deletion.kept!.version.modified = map(kept) }
                deletions[id] = deletion
            }
        }
        repair.deletions = tombstonesAhead

        // Every replica's clock: what stays of it (one that keeps nothing leaves the table), and the new one's.
        var clocks: [ReplicaID: HybridTimestamp] = [:]
        for (id, time) in replicas {
            if !future(time) {
                clocks[id] = time
            } else if let kept = present[id] {
                clocks[id] = HybridTimestamp(packed: kept, replica: id)
            }
        }
        if let last, last.replica == replica { clocks[replica] = max(clocks[replica] ?? last, last) }
        replicas = clocks
        for (id, mark) in dropped {
            guard let clock = clocks[id] else { dropped[id] = nil; continue }
            if mark > clock.packed { dropped[id] = clock.packed }
            if dropped[id] == 0 { dropped[id] = nil }
        }
        for (viewer, view) in seen {
            guard clocks[viewer] != nil else { seen[viewer] = nil; continue }
            var lowered: [ReplicaID: UInt64] = [:]
            for (id, time) in view {
                guard let clock = clocks[id] else { continue }
                // A view never takes in the new stamps (it has not seen them).
                let bound = id == replica ? (present[id] ?? 0) : clock.packed
                let value = min(time, bound)
                if value > 0 { lowered[id] = value }
            }
            seen[viewer] = lowered
        }
        repair.replicas = aheadReplicas.sorted()
        repair.entries.sort()
        return repair
    }
}

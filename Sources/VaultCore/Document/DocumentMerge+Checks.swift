/// What a merge refuses in a copy: clocks from the future (``VaultDocument/clockBound(now:)``) and claims it cannot
/// have seen (``VaultDocument/checkClaims(about:ownClock:mergingInto:now:)``); and a deletion a copy forgot.
extension VaultDocument {
    /// Throws ``VaultError/clockAhead(path:replica:milliseconds:)`` for the first time of this document's replica
    /// table, dropped marks or views (packed times) later than `bound` milliseconds: O(replicas²) at most.
    /// `known`: a clock at or below the one `known` holds for that replica (in its table or dropped marks) passes.
    func checkClocks(below bound: UInt64, known: VaultDocument? = nil) throws {
        func check(_ packed: UInt64, _ replica: ReplicaID) throws {
            guard packed >> 16 > bound else { return }
            if let known, packed <= max(known.replicas[replica]?.packed ?? 0, known.dropped[replica] ?? 0) { return }
            throw VaultError.clockAhead(path: label, replica: replica, milliseconds: packed >> 16)
        }
        for (replica, time) in replicas { try check(time.packed, replica) }
        for (replica, mark) in dropped { try check(mark, replica) }
        for view in seen.values {
            for (replica, time) in view { try check(time, replica) }
        }
    }

    /// Throws ``VaultError/clockAhead(path:replica:milliseconds:)`` for a clock of this document later than `bound`:
    /// its replica table, dropped marks and views, and every stamp of an entry or deletion that differs from `other`'s
    /// (git's merge driver checks both of its files so, against the wall clock alone: neither is this vault's own,
    /// and during a rebase git's "ours" is the upstream).
    func checkStamps(differingFrom other: VaultDocument, below bound: UInt64) throws {
        try checkClocks(below: bound)
        func check(_ stamp: HybridTimestamp) throws {
            if stamp.milliseconds > bound { throw VaultError.clockAhead(path: label, replica: stamp.replica, milliseconds: stamp.milliseconds) }
        }
        for (id, time) in tombstones where other.tombstones[id] != time {
            try check(time)
            if let kept = deletions[id]?.kept { try check(kept.version.modified) }
        }
        for (id, entry) in entries {
            if let theirs = other.entries[id], entry.isSameVersion(as: theirs) { continue }
            try check(entry.modified)
            try check(entry.created)
            for version in entry.history { try check(version.modified) }
        }
    }

    /// The latest clock a merge into this document takes (``merge(_:_:now:)``): `maximumClockLead` past the later of
    /// `now` and this document's latest replica clock that is at most `maximumClockLead` ahead of `now`.
    func clockBound(now: UInt64) -> UInt64 {
        let lead = now &+ Self.maximumClockLead
        let latest = replicas.values.lazy.map(\.milliseconds).filter { $0 <= lead }.max() ?? 0
        return max(now, latest) &+ Self.maximumClockLead
    }

    /// Whether this document has seen version `entry.modified` (its table's clock of that replica is at or above it)
    /// and a deletion later than it whose tombstone it dropped (a dropped mark above it): an entry it then holds
    /// neither live nor as a tombstone was deleted and forgotten, and a copy that brings it back resurrects it.
    func forgotDeletion(of entry: Entry) -> Bool {
        guard !dropped.isEmpty, (replicas[entry.modified.replica]?.packed ?? 0) >= entry.modified.packed else { return false }
        return dropped.contains { replica, mark in HybridTimestamp(packed: mark, replica: replica) > entry.modified }
    }

    /// Throws ``VaultError/untrustedCopy(path:reason:)`` when this copy (another machine's, to merge into `ours`, which
    /// `replica` writes at wall time `now`; `nil`: git's files, of which neither need be this replica's latest) claims
    /// what it cannot have seen, O(replicas²) at most:
    /// - changes of `replica` beyond `ownClock` (packed: the latest this replica made), in its replica table, its
    ///   dropped marks or any view. A copy cannot have seen what was never made; a table ahead of every replica would
    ///   make a merge take it for one that holds everything, and remove what it lacks;
    /// - deletions forgotten that `ours` has not seen, while it holds everything of `ours`, although `replica` changed
    ///   `ours` within the last 180 days: a tombstone is dropped only once every replica that wrote in that time has
    ///   seen it (docs/FORMAT.md, "The tombstone horizon"), so no such copy can exist; merged, it would remove every
    ///   entry it lacks without a trace.
    public func checkClaims(about replica: ReplicaID, ownClock: UInt64, mergingInto ours: VaultDocument?, now: UInt64) throws {
        var claimed = replicas[replica]?.packed ?? 0
        claimed = max(claimed, dropped[replica] ?? 0)
        for view in seen.values { claimed = max(claimed, view[replica] ?? 0) }
        if claimed > ownClock {
            throw VaultError.untrustedCopy(
                path: label,
                reason: "it claims changes of this machine's replica \(replica) up to \(HybridTimestamp(packed: claimed, replica: replica)), later than any it made (\(HybridTimestamp(packed: ownClock, replica: replica)))")
        }
        if let ours, let mine = ours.replicas[replica], mine.milliseconds &+ Self.tombstoneRetention > now &+ Self.maximumClockLead,
           !ours.hasSeenDrops(of: self), holdsAll(of: ours) {
            throw VaultError.untrustedCopy(
                path: label,
                reason: "it has forgotten deletions this vault has not seen, though this machine changed the vault less than 180 days ago (no copy forgets a deletion before every machine that wrote in that time has seen it)")
        }
    }
}

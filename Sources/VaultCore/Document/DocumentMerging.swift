// The steps of VaultDocument.merge (DocumentMerge.swift), one method per step of docs/FORMAT.md's merge.

/// One merge of two copies (``VaultDocument/merge(_:_:now:)``), step by step as docs/FORMAT.md's "Merging two
/// copies" reads: the copies refused (behind the horizon, clocks from the future, forgotten deletions), the
/// deletions united, each entry id merged, each name given once, the replica tables united, the report.
struct Merging {
    typealias Entry = VaultDocument.Entry

    let ours: VaultDocument
    let theirs: VaultDocument
    /// Wall-clock milliseconds.
    let now: UInt64
    /// The latest clock of theirs taken (``VaultDocument/clockBound(now:)``).
    let bound: UInt64
    /// A copy that has not seen deletions the other dropped (``VaultDocument/hasSeenDrops(of:)``), which holds all
    /// the other holds (else it is refused).
    let oursBehind: Bool
    let theirsBehind: Bool
    /// The result's values: ours's as they are, and what comes from theirs.
    let values: GuardedArena
    var report = MergeReport()
    var tombstones: [DocumentID: HybridTimestamp]
    var deletions: [DocumentID: VaultDocument.Deletion]
    let dropped: [ReplicaID: UInt64]
    /// The result's entries: ours's table, with only the entries that are not ours's as they were written.
    var entries: VaultDocument.Entries
    /// The entries written (changed or new) and removed, and those whose version lost to a concurrent one.
    var changed: [DocumentID] = []
    var removed: [DocumentID] = []
    var conflicted: Set<DocumentID> = []
    var idsByName: [String: DocumentID]
    /// The ids that must give up a name another id keeps: (the id, the name, the id that keeps it).
    var renames: [(DocumentID, String, keeper: DocumentID)] = []
    /// The replica merging (its changes that lost at a merge made elsewhere are reported), if known.
    var replica: ReplicaID?

    /// The copies checked (refused as ``VaultDocument/merge(_:_:now:)`` says) and their deletions united.
    init(_ ours: VaultDocument, _ theirs: VaultDocument, now: UInt64) throws {
        (self.ours, self.theirs, self.now) = (ours, theirs, now)
        // A copy that has not seen deletions the other dropped is refused, unless the other holds all it holds (a
        // copy left behind that changed nothing since: the other is what it becomes, and what it alone holds was
        // deleted).
        oursBehind = !ours.hasSeenDrops(of: theirs)
        theirsBehind = !theirs.hasSeenDrops(of: ours)
        guard !theirsBehind || ours.holdsAll(of: theirs) else { throw VaultError.behindHorizon(path: theirs.label) }
        guard !oursBehind || theirs.holdsAll(of: ours) else { throw VaultError.behindHorizon(path: ours.label) }
        // A clock of theirs from the future is refused, not taken (it would hold back every later change, and at the end
        // of time stop them): the replica table, dropped marks and views here; the stamps of what differs from ours
        // below (``aheadOf(_:)``).
        // The bound: a day past now, or past ours's latest clock that is itself within a day of now (as a write takes
        // its clock, ``apply(_:replica:clock:)``): a clock ours took from an earlier copy further ahead does not move
        // it, else each merge of a hostile copy would move the bound another day. A clock theirs holds that ours holds
        // already (a copy of this vault echoing its own past, a machine once set ahead) is no news and passes.
        let bound = ours.clockBound(now: now)
        self.bound = bound
        try theirs.checkClocks(below: bound, known: ours)
        for (id, time) in theirs.tombstones where ours.tombstones[id] != time {
            try Self.check(time, of: theirs, into: ours, below: bound)
            if let kept = theirs.deletions[id]?.kept { try Self.check(kept.version.modified, of: theirs, into: ours, below: bound) }
        }
        // The result starts from a copy of ours's values as they are (one copy of the region: every range of ours
        // stays valid, no entry is rebuilt); only what comes from theirs is moved in. When theirs was opened against
        // ours (its arena began as such a copy, and it shares ours's entries it holds unchanged), its arena is that
        // copy, with theirs's other values: nothing is moved (``moved(_:into:)`` into a document's own arena).
        values = theirs.holdsValues(of: ours) ? theirs.values : ours.values.copy(reserving: 64 << 10)
        (tombstones, deletions) = VaultDocument.unitedDeletions(ours, theirs, into: values)
        dropped = ours.dropped.merging(theirs.dropped, uniquingKeysWith: max)
        // The result starts as ours's table (shared, not copied, until an entry differs: most entries of two copies
        // are the same version); only the entries that are not ours's as they were are written.
        entries = ours.entries
        idsByName = ours.idsByName
        // A deletion is dropped only 180 days after it was made: a mark of theirs over a younger tombstone of ours would
        // take it (and the change it keeps) without a trace. O(tombstones), only when theirs's marks are above ours's.
        if theirs.dropped.contains(where: { $0.value > ours.dropped[$0.key] ?? 0 }) {
            for (_, deleted) in ours.tombstones where deleted.packed <= theirs.dropped[deleted.replica] ?? 0
                && deleted.milliseconds &+ VaultDocument.tombstoneRetention > now &+ VaultDocument.maximumClockLead {
                throw VaultError.untrustedCopy(
                    path: theirs.label, reason: "it marks as forgotten a deletion made less than 180 days ago (\(deleted)), which this vault still records")
            }
        }
        VaultDocument.undropped(&tombstones, &deletions, dropped: dropped)
    }

    /// Throws ``VaultError/clockAhead(path:replica:milliseconds:)`` for a stamp of `theirs` later than `bound` that is
    /// news to `ours` (later than ours's clock of that replica).
    static func check(_ stamp: HybridTimestamp, of theirs: VaultDocument, into ours: VaultDocument, below bound: UInt64) throws {
        guard stamp.milliseconds > bound, stamp.packed > ours.replicas[stamp.replica]?.packed ?? 0 else { return }
        throw VaultError.clockAhead(path: theirs.label, replica: stamp.replica, milliseconds: stamp.milliseconds)
    }

    // Inlined, as `copied`: called for each entry from mutating methods, a non-mutating call gets a copy of the
    // merge's state (a retain and release of each of its tables per call).
    @inline(__always)
    func check(_ stamp: HybridTimestamp) throws { try Self.check(stamp, of: theirs, into: ours, below: bound) }

    /// An entry with its values in the new arena (ours's are there already), its history too, under its name
    /// before any merge renamed it.
    @inline(__always)
    func copied(_ entry: Entry, from document: VaultDocument) -> Entry {
        var entry = document === ours ? entry : document.moved(entry, into: values)
        let name = VaultDocument.baseName(entry)
        if name != entry.name { entry.name = name }
        return entry
    }

    /// Every entry id of either copy merged (ours's first, in its table's order).
    mutating func mergeEntries() throws {
        var found = 0
        for (id, mine) in ours.entries {
            let their = theirs.entries[id]
            if their != nil { found += 1 }
            try mergeEntry(id, mine, their)
        }
        if found < theirs.entries.count {
            for (id, their) in theirs.entries where ours.entries[id] == nil { try mergeEntry(id, nil, their) }
        }
    }

    /// Entry `id` of the result, from ours's version `mine` and theirs's `their`, and the deletion of it either holds.
    mutating func mergeEntry(_ id: DocumentID, _ mine: Entry?, _ their: Entry?) throws {
        // Bound as it is returned: a second reference to the entry's parts would make the change of its history
        // below copy them. `united`: a history that may be past the caps (each side's is within them).
        guard case var (merged, united)? = try version(id, mine, their) else { return }
        if let deletion = tombstones[id] {
            // A version made after the deletion brings the entry back; else the deletion wins.
            guard merged.modified > deletion else {
                deletionWins(id, over: merged, deletedAt: deletion, mine: mine)
                return
            }
            if bringBack(id, as: &merged) { united = true }
        }
        if united { merged.history = ours.capped(merged.history) }
        // Ours's version as it was (the same parts, or the same version united again): left as it is.
        if let mine, mine.identity == merged.identity || mine.isSameVersion(as: merged) { return }
        entries[id] = merged
        changed.append(id)
    }

    /// The version of entry `id` the copies make, and whether its history was united (`nil`: none, the entry
    /// removed or left out as a copy behind the horizon says).
    mutating func version(_ id: DocumentID, _ mine: Entry?, _ their: Entry?) throws -> (Entry, united: Bool)? {
        if let a = mine, let b = their, a.isSameVersion(as: b) {
            // The same version with the same history on both sides (most entries of two copies): one of them.
            return (copied(a, from: ours), false)
        }
        if let their {
            try check(their.modified)
            try check(their.created)
            for version in their.history { try check(version.modified) }
        }
        let a = mine.map { copied($0, from: ours) }
        let b = their.map { copied($0, from: theirs) }
        switch (a, b) {
        case let (a?, b?):
            return (VaultDocument.unite(a, b, conflicted: &conflicted), true)
        case let (a?, nil):
            guard oursBehind else { return (a, false) }
            // Theirs holds all ours holds (the check above): an entry only ours has was deleted there, and
            // its tombstone dropped, which needs a deletion older than 180 days; the entry's last change
            // came before it. An entry changed since cannot be gone that way: such a copy is refused, and
            // no entry is removed without a trace.
            if mine!.modified.milliseconds &+ VaultDocument.tombstoneRetention > now &+ VaultDocument.maximumClockLead {
                throw VaultError.untrustedCopy(
                    path: theirs.label,
                    reason: "it lacks entry '\(mine!.name)', changed less than 180 days ago, yet records no deletion of it (only a deletion older than 180 days is forgotten)")
            }
            remove(id, mine!)
            return nil
        case let (nil, b?):
            guard !theirsBehind else { return nil }  // likewise
            return (b, false)
        case (nil, nil): return nil
        }
    }

    /// Ours's entry `id` is not in the result.
    mutating func remove(_ id: DocumentID, _ mine: Entry) {
        entries[id] = nil
        removed.append(id)
        report.deleted.append(mine.name)
    }

    /// The deletion of entry `id` made at `deletion` wins over `merged`, and keeps it when it was made after the
    /// version deleted (a concurrent change).
    mutating func deletionWins(_ id: DocumentID, over merged: Entry, deletedAt deletion: HybridTimestamp, mine: Entry?) {
        let of = deletions[id]?.of ?? deletion
        if merged.modified > of, merged.modified < deletion {
            let kept = VaultDocument.Kept(
                name: merged.name, version: VaultDocument.Version(fields: merged.fields, modified: merged.modified, conflict: true))
            deletions[id] = VaultDocument.Deletion(of: of, kept: VaultDocument.later(deletions[id]?.kept, kept))
        }
        if let mine { remove(id, mine) }
    }

    /// `merged`, made after the deletion of entry `id`, brings it back: the tombstone goes. A version the deletion
    /// kept goes into the history of the version that brought the entry back (marked a conflict), so that no order of
    /// merging loses it; whether it did (the history is then past the caps, maybe).
    /// (Not the version a deletion keeps for restoring: what it deleted, which the version bringing the entry back
    /// was made from, or restored from.)
    mutating func bringBack(_ id: DocumentID, as merged: inout Entry) -> Bool {
        tombstones[id] = nil
        var united = false
        if let kept = deletions[id]?.kept, kept.version.conflict, kept.version.modified != merged.modified,
           !merged.history.contains(where: { $0.modified == kept.version.modified }) {
            merged.history.append(kept.version)
            merged.history.sort { $0.modified > $1.modified }
            united = true
        }
        deletions[id] = nil
        return united
    }

    /// One name, one id: ours's names, but those that the entries changed or removed had or have now, each of
    /// those given to the ids that carry it (created first, then the lower id, keeps it; the others are to be
    /// renamed, ``renameTheOthers()``).
    mutating func giveNamesOnce() {
        guard !changed.isEmpty || !removed.isEmpty else { return }
        var carriers: [String: [DocumentID]] = [:]
        var affected = Set<String>()
        for id in changed {
            if let entry = entries[id] { carriers[entry.name, default: []].append(id) }
            if let before = ours.entries[id] { affected.insert(before.name) }
        }
        for id in removed { affected.insert(ours.entries[id]!.name) }
        affected.formUnion(carriers.keys)
        let moved = Set(changed + removed)
        for name in affected {
            var ids = carriers[name] ?? []
            if let holder = ours.idsByName[name], !moved.contains(holder) { ids.append(holder) }  // unchanged: still named so
            guard !ids.isEmpty else {
                idsByName[name] = nil
                continue
            }
            let ordered = ids.sorted { (entries[$0]!.created, $0) < (entries[$1]!.created, $1) }
            // Under the spelling of the entry that keeps it (a canonically equivalent key keeps its old bytes).
            idsByName.removeValue(forKey: name)
            idsByName[entries[ordered[0]]!.name] = ordered[0]
            for id in ordered.dropFirst() { renames.append((id, name, ordered[0])) }
        }
    }

    /// The ids that do not keep their name: `<name>~<first 8 hex digits of the id>`, the whole id if that is taken
    /// too (then a counter).
    mutating func renameTheOthers() {
        for (id, name, keeper) in renames.sorted(by: { $0.0 < $1.0 }) {
            // Within the name's bound: the base shortened (at a character) when the suffix would not fit.
            func named(_ suffix: String) -> String {
                var base = Substring(name)
                while base.utf8.count + suffix.utf8.count > VaultFormat.maximumNameByteCount { base = base.dropLast() }
                return base + suffix
            }
            var candidate = named("~" + id.description.prefix(8))
            if idsByName[candidate] != nil { candidate = named("~" + id.description) }
            var counter = 2
            while idsByName[candidate] != nil {
                candidate = named("~" + id.description + "-\(counter)")
                counter += 1
            }
            entries[id]!.name = candidate
            idsByName[candidate] = id
            // Said once, at the merge that renamed it: every later merge drops the suffix and gives the same name again.
            guard ours.entries[id]?.name != candidate, let renamed = entries[id], let kept = entries[keeper] else { continue }
            report.renamed.append(.init(
                from: name, to: candidate, owner: renamed.created.replica, keeper: kept.created.replica,
                yours: renamed.created.replica == replica, keptByYou: kept.created.replica == replica,
                renamedIsNewer: renamed.modified > kept.modified))
        }
    }

    /// What changed for ours, each list in name order (only the changed entries are sorted; an entry left as
    /// ours had it is none of these). Each entry is counted once: a conflict (a version of either side in the history,
    /// marked so, in this merge; or, ours's version made by ``replica``, a conflict it lost or won at a merge made
    /// elsewhere, which theirs holds) is not also updated.
    mutating func reportChanges(names: [ReplicaID: ReplicaName]) {
        var lostEdits: [MergeReport.LostEdit] = [], won: [MergeReport.WonConflict] = []
        for id in changed {
            guard let entry = entries[id] else { continue }
            if let before = ours.entries[id] {
                // Ours's version lost to a later one: in the history now, marked a conflict (in this merge; or, ours's
                // own change, at one made elsewhere that theirs holds).
                if entry.modified > before.modified, conflicted.contains(id) || before.modified.replica == replica,
                   let index = entry.history.firstIndex(where: { $0.modified == before.modified && $0.conflict }) {
                    lostEdits.append(.init(
                        name: entry.name, winner: entry.modified.replica, winnerName: names[entry.modified.replica]?.name,
                        loser: before.modified.replica, version: index + 1))
                    report.conflicts.append(entry.name)
                    continue
                }
                if let index = wonOver(before, in: entry) {
                    // Ours's version won: the other change is in the history, marked a conflict.
                    let loser = entry.history[index].modified.replica
                    won.append(.init(name: entry.name, loser: loser, loserName: names[loser]?.name, version: index + 1))
                    report.conflicts.append(entry.name)
                    continue
                }
                // Its name again: a merge's `~` suffix dropped, the entry that held the name being gone.
                if entry.name != before.name, VaultDocument.baseName(before) == entry.name, !renames.contains(where: { $0.0 == id }) {
                    report.namedBack.append(.init(from: before.name, to: entry.name))
                }
                // Renamed there (a later version under another name, not a merge's suffix given or dropped here).
                if !conflicted.contains(id), entry.modified > before.modified, entry.name != before.name,
                   VaultDocument.baseName(before) != entry.name, !renames.contains(where: { $0.0 == id }) {
                    report.moved.append(.init(from: before.name, to: entry.name, by: entry.modified.replica, byName: names[entry.modified.replica]?.name))
                    continue
                }
                if !conflicted.contains(id), entry.modified != before.modified { report.updated.append(entry.name) }
            } else if ours.tombstones[id] != nil || ours.forgotDeletion(of: entry) {
                report.resurrected.append(entry.name)
                let deleter = ours.tombstones[id]?.replica
                report.cameBack.append(.init(
                    name: entry.name, changer: entry.modified.replica, changerName: names[entry.modified.replica]?.name, deleter: deleter,
                    deleterName: deleter.flatMap { names[$0]?.name }, changedByYou: entry.modified.replica == replica,
                    deletedByYou: deleter != nil && deleter == replica))
            } else {
                report.added.append(entry.name)
            }
            if conflicted.contains(id) { report.conflicts.append(entry.name) }
        }
        report.updated.sort()
        report.resurrected.sort()
        // An entry new here that a rename line names (the one renamed, or the one that took the name of ours's) is
        // said there, not as added too.
        let renamedNames = Set(report.renamed.flatMap { [$0.from, $0.to] })
        report.added = report.added.filter { !renamedNames.contains($0) }.sorted()
        for index in report.renamed.indices {
            report.renamed[index].ownerName = names[report.renamed[index].owner]?.name
            report.renamed[index].keeperName = names[report.renamed[index].keeper]?.name
        }
        report.conflicts.sort()
        report.deleted.sort()
        report.lostEdits = lostEdits.sorted { $0.name < $1.name }
        report.wonConflicts = won.sorted { $0.name < $1.name }
        report.cameBack.sort { $0.name < $1.name }
        report.moved.sort { $0.from < $1.from }
        report.namedBack.sort { $0.from < $1.from }
        report.keptDeletions = deletions.compactMap { id, deletion in
            // A concurrent change the deletion won over (a version kept at the deletion itself is no news).
            guard let kept = deletion.kept, kept.version.conflict, kept.version.modified != ours.deletions[id]?.kept?.version.modified else { return nil }
            let changer = kept.version.modified.replica, deleter = tombstones[id]?.replica
            return MergeReport.Attribution(
                name: kept.name, changer: changer, changerName: names[changer]?.name, deleter: deleter,
                deleterName: deleter.flatMap { names[$0]?.name }, changedByYou: changer == replica, deletedByYou: deleter != nil && deleter == replica)
        }.sorted { $0.name < $1.name }
        report.keptDeleted = report.keptDeletions.map(\.name)
    }

    /// The index in `entry`'s history of the change ours's version `before` won over, when it is still the version:
    /// theirs's, in a conflict of this merge; else one that ours's history lacks, marked a conflict, when
    /// ``replica`` made `before` (it won at a merge made elsewhere).
    func wonOver(_ before: Entry, in entry: Entry) -> Int? {
        guard entry.modified == before.modified else { return nil }
        if conflicted.contains(entry.id) {
            guard let their = theirs.entries[entry.id] else { return nil }
            return entry.history.firstIndex { $0.modified == their.modified && $0.conflict }
        }
        guard before.modified.replica == replica else { return nil }
        return entry.history.firstIndex { version in version.conflict && !before.history.contains { $0.modified == version.modified } }
    }

    /// The merged document (replica tables, views and names united; ours's stanzas and those of recipients theirs
    /// adds) and the report.
    mutating func result() -> (VaultDocument, MergeReport) {
        var replicas = ours.replicas
        for (replica, time) in theirs.replicas where time > replicas[replica] ?? time.lowest { replicas[replica] = time }
        report.replicasAhead = replicas.filter { $0.value.milliseconds > now &+ VaultDocument.maximumClockLead }.map(\.key).sorted()
        let names = VaultDocument.unitedNames(ours.replicaNames, theirs.replicaNames)
        reportChanges(names: names)
        let seen = VaultDocument.unitedSeen(ours.seen, theirs.seen)
        let formatVersion = max(ours.formatVersion, theirs.formatVersion)
        if formatVersion < 3 {
            // Version 2 stores none of it: nothing is kept, and nothing is said to be.
            deletions = [:]
            report.keptDeleted = []
            report.keptDeletions = []
        }

        let merged = VaultDocument(
            vaultID: ours.vaultID, generation: max(ours.generation, theirs.generation), dataKeyID: ours.dataKeyID,
            stanzas: ours.stanzas(unitedWith: theirs), replicas: replicas, tombstones: tombstones, entries: entries, idsByName: idsByName,
            values: values, label: ours.label, formatVersion: formatVersion,
            sync: VaultDocument.SyncState(seen: seen, dropped: dropped, deletions: deletions))
        // Live bytes: ours's as they were (its dead values came along in the copy) and everything moved in.
        merged.compactedByteCount = ours.compactedByteCount + (values.count - ours.values.count)
        merged.replicaNames = names
        merged.recipientLabels = VaultDocument.unitedLabels(ours.recipientLabels, theirs.recipientLabels)
        // Ours's entries kept as they were: their bytes as ours was last sealed, for the next seal, which encodes
        // only the entries changed since (ours's changes and the merge's).
        merged.encoded.withLock { $0 = ours.encoded.withLock { $0 } }
        if var tracked = ours.changed {
            for id in changed + removed + renames.map(\.0) where tracked.index(forKey: id) == nil {
                tracked.updateValue(ours.entries[id]?.identity, forKey: id)
            }
            merged.changed = tracked
        }
        report.otherLacks = !merged.isHeld(by: theirs)
        return (merged, report)
    }
}

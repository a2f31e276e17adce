extension VaultDocument {
    /// How far ahead of now a replica's clock may be before it is not adopted (24 hours).
    public static let maximumClockLead: UInt64 = 24 * 3_600_000

    /// Merges `ours` and `theirs`, two copies of one vault, into a new document (neither is changed): entry by
    /// entry id, the later version wins (by hybrid logical clock, then replica); a version of the other side that
    /// the winner does not descend from (it is not in the winner's history) goes into the history marked
    /// `conflict`; a deletion wins over a version older than it, and a version made after it brings the entry
    /// back; histories are united and capped as always; tombstones and replica tables are united. Two live ids
    /// with one name: the entry created first (then the lower id) keeps it, the other is renamed
    /// `<name>~<first 8 hex digits of its id>` (the full id if that is taken too); such a suffix is dropped again
    /// at the next merge where the name is free (``baseName(_:)``). The result is the same
    /// whichever side is ours, and merging its parts in any order gives the same content (commutative,
    /// associative, idempotent); its generation is above both inputs' once sealed. The result keeps ours's key
    /// stanzas and data key id; under one data key, the `x25519` stanzas of recipients theirs has and ours lacks
    /// are added (an addition made on one side is kept; a removal changes the data key, so it is never undone
    /// here).
    ///
    /// - Parameter now: wall-clock milliseconds, to tell replicas whose clock is far ahead (the report names them).
    /// - Throws: ``VaultError/notTheSameVault(path:)`` when the vault ids differ (nothing is merged);
    ///   ``VaultError/behindHorizon(path:)`` naming the copy that has not seen deletions whose tombstones the other
    ///   dropped (merging it would bring deleted entries back: ``hasSeenDrops(of:)``).
    public static func merge(_ ours: VaultDocument, _ theirs: VaultDocument, now: UInt64) throws -> (VaultDocument, MergeReport) {
        guard ours.vaultID == theirs.vaultID else { throw VaultError.notTheSameVault(path: theirs.label) }
        // A copy that has not seen deletions the other dropped is refused, unless the other holds all it holds (a
        // copy left behind that changed nothing since: the other is what it becomes, and what it alone holds was
        // deleted).
        let oursBehind = !ours.hasSeenDrops(of: theirs), theirsBehind = !theirs.hasSeenDrops(of: ours)
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
        func check(_ stamp: HybridTimestamp) throws {
            guard stamp.milliseconds > bound, stamp.packed > ours.replicas[stamp.replica]?.packed ?? 0 else { return }
            throw VaultError.clockAhead(path: theirs.label, replica: stamp.replica, milliseconds: stamp.milliseconds)
        }
        try theirs.checkClocks(below: bound, known: ours)
        for (id, time) in theirs.tombstones where ours.tombstones[id] != time {
            try check(time)
            if let kept = theirs.deletions[id]?.kept { try check(kept.version.modified) }
        }
        // The result starts from a copy of ours's values as they are (one copy of the region: every range of ours
        // stays valid, no entry is rebuilt); only what comes from theirs is moved in. When theirs was opened against
        // ours (its arena began as such a copy, and it shares ours's entries it holds unchanged), its arena is that
        // copy, with theirs's other values: nothing is moved (``moved(_:into:)`` into a document's own arena).
        let values = theirs.holdsValues(of: ours) ? theirs.values : ours.values.copy(reserving: 64 << 10)
        var report = MergeReport()

        /// An entry with its values in the new arena (ours's are there already), its history too, under its name
        /// before any merge renamed it.
        func copied(_ entry: Entry, from document: VaultDocument) -> Entry {
            var entry = document === ours ? entry : document.moved(entry, into: values)
            let name = baseName(entry)
            if name != entry.name { entry.name = name }
            return entry
        }

        var (tombstones, deletions) = unitedDeletions(ours, theirs, into: values)
        let dropped = ours.dropped.merging(theirs.dropped, uniquingKeysWith: max)
        // A deletion is dropped only 180 days after it was made: a mark of theirs over a younger tombstone of ours would
        // take it (and the change it keeps) without a trace. O(tombstones), only when theirs's marks are above ours's.
        if theirs.dropped.contains(where: { $0.value > ours.dropped[$0.key] ?? 0 }) {
            for (_, deleted) in ours.tombstones where deleted.packed <= theirs.dropped[deleted.replica] ?? 0
                && deleted.milliseconds &+ tombstoneRetention > now &+ maximumClockLead {
                throw VaultError.untrustedCopy(
                    path: theirs.label, reason: "it marks as forgotten a deletion made less than 180 days ago (\(deleted)), which this vault still records")
            }
        }
        undropped(&tombstones, &deletions, dropped: dropped)
        // The result starts as ours's table (shared, not copied, until an entry differs: most entries of two copies
        // are the same version); only the entries that are not ours's as they were are written.
        var entries = ours.entries
        var changed: [DocumentID] = []
        var removed: [DocumentID] = []
        var conflicted: Set<DocumentID> = []
        var found = 0
        /// Entry `id` of the result, from ours's version `mine` and theirs's `their`.
        func merge(_ id: DocumentID, _ mine: Entry?, _ their: Entry?) throws {
            var merged: Entry
            var united = false  // a history that may be past the caps (each side's is within them)
            if let a = mine, let b = their, a.isSameVersion(as: b) {
                // The same version with the same history on both sides (most entries of two copies): one of them.
                merged = copied(a, from: ours)
            } else {
                if let their {
                    try check(their.modified)
                    try check(their.created)
                    for version in their.history { try check(version.modified) }
                }
                let a = mine.map { copied($0, from: ours) }
                let b = their.map { copied($0, from: theirs) }
                switch (a, b) {
                case let (a?, b?):
                    merged = unite(a, b, conflicted: &conflicted)
                    united = true
                case let (a?, nil):
                    if oursBehind {
                        // Theirs holds all ours holds (the check above): an entry only ours has was deleted there, and
                        // its tombstone dropped, which needs a deletion older than 180 days; the entry's last change
                        // came before it. An entry changed since cannot be gone that way: such a copy is refused, and
                        // no entry is removed without a trace.
                        if mine!.modified.milliseconds &+ tombstoneRetention > now &+ maximumClockLead {
                            throw VaultError.untrustedCopy(
                                path: theirs.label,
                                reason: "it lacks entry '\(mine!.name)', changed less than 180 days ago, yet records no deletion of it (only a deletion older than 180 days is forgotten)")
                        }
                        entries[id] = nil
                        removed.append(id)
                        report.deleted.append(mine!.name)
                        return
                    }
                    merged = a
                case let (nil, b?):
                    guard !theirsBehind else { return }  // likewise
                    merged = b
                case (nil, nil): return
                }
            }
            if let deletion = tombstones[id] {
                // A version made after the deletion brings the entry back; else the deletion wins, and keeps the
                // version when it was made after the one deleted (a concurrent change).
                guard merged.modified > deletion else {
                    let of = deletions[id]?.of ?? deletion
                    if merged.modified > of, merged.modified < deletion {
                        let kept = Kept(name: merged.name, version: Version(fields: merged.fields, modified: merged.modified, conflict: true))
                        deletions[id] = Deletion(of: of, kept: later(deletions[id]?.kept, kept))
                    }
                    if let mine {
                        entries[id] = nil
                        removed.append(id)
                        report.deleted.append(mine.name)
                    }
                    return
                }
                tombstones[id] = nil
                // A version the deletion kept goes into the history of the version that brought the entry back
                // (marked a conflict), so that no order of merging loses it.
                // (Not the version a deletion keeps for restoring: what it deleted, which the version bringing the
                // entry back was made from, or restored from.)
                if let kept = deletions[id]?.kept, kept.version.conflict, kept.version.modified != merged.modified,
                   !merged.history.contains(where: { $0.modified == kept.version.modified }) {
                    merged.history.append(kept.version)
                    merged.history.sort { $0.modified > $1.modified }
                    united = true
                }
                deletions[id] = nil
            }
            if united { merged.history = ours.capped(merged.history) }
            // Ours's version as it was (the same parts, or the same version united again): left as it is.
            if let mine, mine.identity == merged.identity || mine.isSameVersion(as: merged) { return }
            entries[id] = merged
            changed.append(id)
        }
        for (id, mine) in ours.entries {
            let their = theirs.entries[id]
            if their != nil { found += 1 }
            try merge(id, mine, their)
        }
        if found < theirs.entries.count {
            for (id, their) in theirs.entries where ours.entries[id] == nil { try merge(id, nil, their) }
        }

        // One name, one id: ours's names, but those that the entries changed or removed had or have now, each of
        // those given to the ids that carry it (created first, then the lower id, keeps it; the others are renamed).
        var idsByName = ours.idsByName
        var renames: [(DocumentID, String)] = []
        if !changed.isEmpty || !removed.isEmpty {
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
                for id in ordered.dropFirst() { renames.append((id, name)) }
            }
        }
        for (id, name) in renames.sorted(by: { $0.0 < $1.0 }) {
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
            report.renamed.append(.init(from: name, to: candidate))
        }

        var replicas = ours.replicas
        for (replica, time) in theirs.replicas where time > replicas[replica] ?? time.lowest { replicas[replica] = time }
        report.replicasAhead = replicas.filter { $0.value.milliseconds > now &+ maximumClockLead }.map(\.key).sorted()

        // What changed for ours, each list in name order (only the changed entries are sorted; an entry left as
        // ours had it is none of these).
        var lostEdits: [(String, ReplicaID, ReplicaID, Int)] = []
        for id in changed {
            guard let entry = entries[id] else { continue }
            if let before = ours.entries[id] {
                if entry.modified != before.modified { report.updated.append(entry.name) }
                // Ours's version lost to a concurrent one: it is in the history now, marked a conflict.
                if conflicted.contains(id), entry.modified > before.modified,
                   let index = entry.history.firstIndex(where: { $0.modified == before.modified && $0.conflict }) {
                    lostEdits.append((entry.name, entry.modified.replica, before.modified.replica, index + 1))
                }
            } else if ours.tombstones[id] != nil || ours.forgotDeletion(of: entry) {
                report.resurrected.append(entry.name)
            } else {
                report.added.append(entry.name)
            }
            if conflicted.contains(id) { report.conflicts.append(entry.name) }
        }
        report.updated.sort()
        report.resurrected.sort()
        report.added.sort()
        report.conflicts.sort()
        report.deleted.sort()
        let names = unitedNames(ours.replicaNames, theirs.replicaNames)
        report.lostEdits = lostEdits.sorted { $0.0 < $1.0 }.map {
            MergeReport.LostEdit(name: $0.0, winner: $0.1, winnerName: names[$0.1]?.name, loser: $0.2, version: $0.3)
        }
        report.keptDeleted = deletions.compactMap { id, deletion in
            // A concurrent change the deletion won over (a version kept at the deletion itself is no news).
            guard let kept = deletion.kept, kept.version.conflict, kept.version.modified != ours.deletions[id]?.kept?.version.modified else { return nil }
            return kept.name
        }.sorted()
        let seen = unitedSeen(ours.seen, theirs.seen)
        let formatVersion = max(ours.formatVersion, theirs.formatVersion)
        if formatVersion < 3 {
            // Version 2 stores none of it: nothing is kept, and nothing is said to be.
            deletions = [:]
            report.keptDeleted = []
        }

        let merged = VaultDocument(
            vaultID: ours.vaultID, generation: max(ours.generation, theirs.generation), dataKeyID: ours.dataKeyID,
            stanzas: ours.stanzas(unitedWith: theirs), replicas: replicas, tombstones: tombstones, entries: entries, idsByName: idsByName,
            values: values, label: ours.label, formatVersion: formatVersion,
            sync: SyncState(seen: seen, dropped: dropped, deletions: deletions))
        // Live bytes: ours's as they were (its dead values came along in the copy) and everything moved in.
        merged.compactedByteCount = ours.compactedByteCount + (values.count - ours.values.count)
        merged.replicaNames = names
        merged.recipientLabels = unitedLabels(ours.recipientLabels, theirs.recipientLabels)
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

    /// Whether `other` holds what this document holds: the same entries (names, clocks, histories and their
    /// marks; a version's clock names its content), tombstones and replica clocks.
    func sameContent(as other: VaultDocument) -> Bool {
        guard tombstones == other.tombstones, Set(recipients) == Set(other.recipients), replicas == other.replicas, entries.count == other.entries.count,
              formatVersion == other.formatVersion, seen == other.seen, dropped == other.dropped, replicaNames == other.replicaNames,
              sealedRecipientLabels == other.sealedRecipientLabels,
              tombstones.keys.allSatisfy({ deletion(of: $0).of == other.deletion(of: $0).of
                  && deletion(of: $0).kept?.version.modified == other.deletion(of: $0).kept?.version.modified })
        else { return false }
        // In step while both tables are in one order (a merge's result that kept ours's table, against ours): no
        // lookups.
        var others = other.entries.makeIterator()
        var inStep = true
        for (id, entry) in entries {
            if inStep, let (otherID, theirs) = others.next(), otherID == id {
                guard entry.isSameVersion(as: theirs) else { return false }
                continue
            }
            inStep = false
            guard let theirs = other.entries[id], entry.isSameVersion(as: theirs) else { return false }
        }
        return true
    }

    /// Whether `other` holds everything of this document that a copy passes on: every entry as it is here (the same
    /// version and history), every tombstone with what it deleted and kept, every replica's clock (or a later one),
    /// every recipient, the format version. The sync bookkeeping alone (the `seen` views, dropped marks, tombstones
    /// dropped here) is not sent for its own sake: it travels with the next change, so that two copies do not send
    /// each other their views back and forth.
    func isHeld(by other: VaultDocument) -> Bool {
        guard formatVersion <= other.formatVersion, dataKeyID == other.dataKeyID,
              Set(recipients).isSubset(of: other.recipients),
              replicas.allSatisfy({ replica, time in other.replicas[replica].map { $0 >= time } ?? false }),
              replicaNames.allSatisfy({ replica, name in other.replicaNames[replica].map { $0.time >= name.time } ?? false }),
              sealedRecipientLabels.allSatisfy({ recipient, label in other.recipientLabels[recipient].map { $0.time >= label.time } ?? false }),
              tombstones.allSatisfy({ id, time in
                  other.tombstones[id] == time && deletion(of: id).of == other.deletion(of: id).of
                      && deletion(of: id).kept?.version.modified == other.deletion(of: id).kept?.version.modified
              })
        else { return false }
        return entries.allSatisfy { id, entry in other.entries[id].map { entry.isSameVersion(as: $0) } ?? false }
    }

    /// Our stanzas, and, when `other` has our data key, its recipient stanzas for recipients we do not have, of the
    /// kind ours are (`x25519` or `mlkem768x25519`, never both in one vault: age's rule; when ours has none, of the
    /// kind of its first).
    func stanzas(unitedWith other: VaultDocument) -> [KeyStanza] {
        guard other.dataKeyID == dataKeyID else { return stanzas }
        let ours = Set(recipients)
        let kind = recipientStanzas.first?.kind ?? other.recipientStanzas.first?.kind
        var seen = Set<String>()
        let added = other.recipientStanzas.filter {
            $0.kind == kind && !ours.contains($0.recipient) && seen.insert($0.recipient).inserted
        }
        return stanzas + added.map(\.stanza)
    }

    /// The name of `entry` without the suffix a merge gives when two ids have one name (`~` and the first 8 hex
    /// digits of its id, or the whole id): names are made unique again at every merge, from the names the entries
    /// were given, so that a rename made at one merge (for an entry deleted since, say) does not stick in one
    /// copy and not in another.
    static func baseName(_ entry: Entry) -> String {
        guard entry.name.utf8.contains(UInt8(ascii: "~")) else { return entry.name }  // most names: no suffix
        let id = entry.id.description
        for suffix in ["~" + id, "~" + id.prefix(8)] where entry.name.hasSuffix(suffix) && entry.name.utf8.count > suffix.utf8.count {
            return String(entry.name.dropLast(suffix.count))
        }
        return entry.name
    }

    /// Two versions of one entry made one: the later wins; histories united (newest first, one version per
    /// clock, marked a conflict only when no copy holds it as an ancestor); the losing version joins the history as
    /// a conflict unless the winner descends from it.
    static func unite(_ a: Entry, _ b: Entry, conflicted: inout Set<DocumentID>) -> Entry {
        // The winner: the later clock; on the same clock (the same version) the greater name, so that every order
        // of merging picks the same.
        let aWins = a.modified != b.modified ? a.modified > b.modified : a.name.utf8.lexicographicallyPrecedes(b.name.utf8) == false
        var (winner, loser) = aWins ? (a, b) : (b, a)
        var versions: [HybridTimestamp: Version] = [:]
        for version in a.history + b.history {
            if let seen = versions[version.modified] {
                // An ancestor in one copy is no conflict: that copy's change descends from it (so the mark
                // does not depend on the order of merges).
                versions[version.modified]!.conflict = seen.conflict && version.conflict
            } else {
                versions[version.modified] = version
            }
        }
        if loser.modified != winner.modified, versions[loser.modified] == nil {
            // Not an ancestor of the winner: a concurrent change, kept in the history.
            versions[loser.modified] = Version(fields: loser.fields, modified: loser.modified, conflict: true)
            conflicted.insert(winner.id)
        }
        versions[winner.modified] = nil
        winner.history = versions.values.sorted { $0.modified > $1.modified }
        winner.created = min(a.created, b.created)
        loser.history = []
        return winner
    }
}

extension HybridTimestamp {
    /// The earliest timestamp (a stand-in for "none" in comparisons).
    var lowest: HybridTimestamp { HybridTimestamp(milliseconds: 0, counter: 0, replica: ReplicaID(rawValue: 0)) }
}

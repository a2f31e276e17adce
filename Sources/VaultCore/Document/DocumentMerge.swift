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
    /// - Parameters:
    ///   - now: wall-clock milliseconds, to tell replicas whose clock is far ahead (the report names them).
    ///   - replica: the replica merging into ours, when known: an entry whose version in ours it made, and that theirs
    ///     keeps only as a `conflict` version (it lost at a merge made elsewhere), is reported as a lost edit.
    /// - Throws: ``VaultError/notTheSameVault(path:)`` when the vault ids differ (nothing is merged);
    ///   ``VaultError/behindHorizon(path:)`` naming the copy that has not seen deletions whose tombstones the other
    ///   dropped (merging it would bring deleted entries back: ``hasSeenDrops(of:)``).
    public static func merge(
        _ ours: VaultDocument, _ theirs: VaultDocument, now: UInt64, replica: ReplicaID? = nil
    ) throws -> (VaultDocument, MergeReport) {
        guard ours.vaultID == theirs.vaultID else { throw VaultError.notTheSameVault(path: theirs.label) }
        var merging = try Merging(ours, theirs, now: now)
        merging.replica = replica
        try merging.mergeEntries()
        merging.giveNamesOnce()
        merging.renameTheOthers()
        return merging.result()
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

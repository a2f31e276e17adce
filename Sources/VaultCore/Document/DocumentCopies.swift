/// How two copies of a vault compare: the same content, one held by the other, and their recipient stanzas united.
extension VaultDocument {
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
}

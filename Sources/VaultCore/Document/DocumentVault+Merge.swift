import VaultSodium

/// Merging into a version-2 or -3 vault: another copy's file (`vault merge`, sync), git's two files (its merge
/// driver), and what `vault merge --describe` shows of a file.
extension DocumentVault {
    /// Merges two files of this vault given as bytes (git's merge driver: `ours` and `theirs`, neither of them the
    /// vault's own file) with the data key held here, and returns the merged file sealed with it, and the report.
    /// Nothing is read or written on disk; the key never leaves this process.
    ///
    /// - Throws: ``VaultError/notTheSameVault(path:)``, ``VaultError/needsVersion2(path:)``,
    ///   ``VaultError/wrongPassphrase(path:)`` (the key held does not open one of them), what opening them throws.
    public func mergeFiles(ours: [UInt8], theirs: [UInt8], labels: (String, String), now: UInt64) throws -> ([UInt8], MergeReport) {
        guard let dataKey = store.dataKey, let vaultID else { throw VaultError.notOpen }
        var documents: [VaultDocument] = []
        for (bytes, label) in [(ours, labels.0), (theirs, labels.1)] {
            guard DocumentHeader.isVersion2(bytes) else { throw VaultError.needsVersion2(path: label) }
            let header = try DocumentHeader.parse(bytes, label: label, policy: store.policy)
            guard header.vaultID == vaultID else { throw VaultError.notTheSameVault(path: label) }
            guard header.dataKeyID == store.document?.dataKeyID else {
                // Why, as its key links from the key held here tell (a recipient's removal is no passphrase change).
                throw VaultError.otherKey(path: label, reason: store.document.flatMap { KeyLinks.reason(header.stanzas, from: $0.dataKeyID) })
            }
            documents.append(try VaultDocument.open(bytes, with: .dataKey(dataKey), label: label, policy: store.policy, against: documents.first).document)
        }
        // Neither file may claim changes of this replica beyond its latest write (recorded: git's files may be older).
        if let protection = rollbackProtection,
           let own = ReplicaRegistry.latestWrite(of: store.replica, to: vaultID, stateDirectory: protection.stateDirectory) {
            for document in documents { try document.checkClaims(about: store.replica, ownClock: own, mergingInto: nil, now: now) }
        }
        // Neither file is this vault's own (during a rebase git's "ours" is the upstream): both files' clocks are checked
        // against the wall clock alone, never against either file's own table (a clock from the future in "ours" would
        // otherwise raise the bound for "theirs").
        let bound = now &+ VaultDocument.maximumClockLead
        try documents[0].checkStamps(differingFrom: documents[1], below: bound)
        try documents[1].checkStamps(differingFrom: documents[0], below: bound)
        var (merged, report) = try VaultDocument.merge(documents[0], documents[1], now: now, replica: store.replica)
        // The driver cannot ask: a mass deletion stops it (a conflict; `vault sync` asks, or takes --accept-deletions).
        // Counted over both files (either may be the local one): entries live in either and not in the result.
        let live = Set(documents[0].entries.keys).union(documents[1].entries.keys)
        let gone = live.subtracting(merged.entries.keys)
        if gone.count > 10, gone.count * 10 > live.count {
            let names = Set(gone.compactMap { documents[0].entries[$0]?.name ?? documents[1].entries[$0]?.name }).sorted()
            throw VaultError.massDeletion(path: labels.1, names: names)
        }
        merged.settle(replica: store.replica, now: now)
        report.written = true
        return (try merged.seal(dataKey: dataKey), report)
    }

    /// What a file of this vault (given as bytes: a version git hands its textconv) holds, without a single value:
    /// each live entry's name, id, last change (its time in ISO 8601 and the replica that made it, by name when it has
    /// one), field names (secret ones marked) and number of earlier versions,
    /// sorted by name; then the number of tombstones. The data key held opens it; nothing on disk is read.
    public func describeFile(_ bytes: [UInt8], label: String) throws -> [String] {
        guard let dataKey = store.dataKey, let vaultID else { throw VaultError.notOpen }
        guard DocumentHeader.isVersion2(bytes) else { throw VaultError.needsVersion2(path: label) }
        guard try DocumentHeader.parse(bytes, label: label, policy: store.policy).vaultID == vaultID else {
            throw VaultError.notTheSameVault(path: label)
        }
        let document = try VaultDocument.open(bytes, with: .dataKey(dataKey), label: label, policy: store.policy).document
        var lines = ["vault \(document.vaultID) generation \(document.generation)"]
        for name in document.names {
            guard let entry = document.entry(name) else { continue }
            lines.append("\(name)")
            // The time as a person reads it (ISO 8601, UTC), and who made the change: its replica's name, else its id.
            let by = document.name(of: entry.modified.replica) ?? "replica \(entry.modified.replica)"
            lines.append("  id \(entry.id)  modified \(UTCTime.iso8601(milliseconds: Int64(entry.modified.milliseconds), fractional: true)) by \(by)"
                + "  earlier versions \(entry.versionCount)")
            lines.append("  fields " + entry.fields.map { $0.name + ($0.isSecret ? " (secret)" : "") }.joined(separator: ", "))
        }
        lines.append("deleted entries \(document.tombstones.count)")
        return lines
    }

    public func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> MergeReport {
        try merge(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, otherKey: nil, acceptDeletions: acceptDeletions)
    }

    /// The merge, and the file it wrote: read back through the storage, which knows the bytes it last wrote (the
    /// file's header prefix is read to confirm them, not its body).
    public func mergeKeepingFile(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> (report: MergeReport, file: [UInt8]?) {
        let report = try merge(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions)
        guard report.written, !dryRun else { return (report, nil) }
        return (report, try store.storage.loadForWrite()?.bytes)
    }

    /// ``merge(_:label:dryRun:otherPassphrase:)`` where the other copy's key (when it is not ours) may also come from
    /// `otherKey` (an age identity unwrapping one of its `x25519` stanzas), tried before `otherPassphrase`.
    public func merge(
        _ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?,
        otherKey: ((DocumentHeader) throws -> DocumentKey?)?, acceptDeletions: Bool = false
    ) throws -> MergeReport {
        let oldKey = store.dataKey, oldID = store.document?.dataKeyID
        let protection = rollbackProtection
        let source = otherKeySource.withLock { $0 }
        let otherKey = otherKey ?? source.map { source in { header in try source(header, label) } }
        // A key change made here and not yet published: a copy under the key it retired is merged into ours as content.
        var previousKey: (id: DocumentID, key: SecureBytes)?
        if let protection, let vaultID, let oldID, let oldKey,
           let pending = RollbackGuard.pending(vaultID, keyID: oldID, protection: protection),
           let key = Self.open(pending.sealedKey, under: oldKey) {
            previousKey = (pending.retiredKeyID, key)
        }
        let report = try store.merge(
            other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, otherKey: otherKey, previousKey: previousKey,
            mayFollow: { header in
                // A key this vault retired is never followed back, whatever links lead to it.
                guard let protection else { return }
                do {
                    try RollbackGuard.checkVault(header.vaultID, dataKeyID: header.dataKeyID, path: label, protection: protection, accept: false)
                } catch VaultError.retiredKey {
                    throw VaultError.unauthorizedKey(path: label)
                }
            }, acceptDeletions: acceptDeletions)
        if !dryRun {
            if store.document?.dataKeyID != oldID {
                // The other copy's key followed: this vault's own is retired, so that a copy under it is refused here;
                // the change was made elsewhere, so nothing of ours is pending.
                recordWrite(retiring: oldKey, retiringID: oldID)
            } else {
                recordWrite()
                // A copy already under our key: a key change made here has reached another copy.
                if let protection, let vaultID, let oldID, DocumentHeader.isVersion2(other),
                   let header = try? DocumentHeader.parse(other, label: label, policy: .insecureForTesting), header.dataKeyID == oldID {
                    RollbackGuard.clearPending(vaultID, keyID: oldID, protection: protection)
                }
            }
        }
        return report
    }
}

import VaultCore

/// The service's operations of format version 2: an entry's versions, document changes, merges of another copy,
/// and git's merge driver and textconv on files of a vault held here (found by the vault id in their header).
extension AgentService {
    func performOnDocument(_ request: AgentRequest.VaultRequest, on store: any KeyValueVault) throws -> AgentResponse {
        let document = try store.requiringFields()
        switch request {
        case .records(let name, let which):
            try store.reload()
            return .records(try document.records(of: name, which))
        case .search(let prefix, let required):
            try store.reload()
            return .found(try document.search(prefix: prefix, required: required))
        case .deleted:
            try store.reload()
            return .deleted(try document.deletedEntries())
        case .merge(let merge) where merge.keepFile:
            let (report, file) = try document.mergeKeepingFile(
                merge.file, label: merge.label, dryRun: merge.dryRun, otherPassphrase: merge.otherPassphrase,
                acceptDeletions: merge.acceptDeletions)
            return .merged(report, file: file)
        case .merge(let merge):
            let report = try document.merge(
                merge.file, label: merge.label, dryRun: merge.dryRun, otherPassphrase: merge.otherPassphrase,
                acceptDeletions: merge.acceptDeletions)
            return .merged(report, file: nil)
        default:
            throw AgentError.badRequest("not an operation on a document")
        }
    }

    /// The unlocked version-2 vault whose id the file `bytes` carries (whatever its path), or `nil`. With
    /// `keptOverOlderFile`, also one whose file on disk no longer opens with its key when that key replaced the key of
    /// `bytes` (a rebase checked out a file from before a key change made here): its key merges, and the merge says
    /// which side is older.
    private func vault(holding bytes: [UInt8], label: String, keptOverOlderFile: Bool = false) throws -> DocumentVault? {
        guard DocumentHeader.isVersion2(bytes) else { throw VaultError.needsVersion2(path: label) }
        // Only its id and links are read here (no KDF runs): any parameters do.
        let header = try DocumentHeader.parse(bytes, label: label, policy: .insecureForTesting)
        let wanted = header.vaultID
        // Reloaded when it can be (a passphrase changed since), else as last opened: git rewrites a vault in its work tree
        // to older commits (a rebase checks out the upstream first), which the rollback record refuses to open; the
        // files git hands over are merged with the key held, and the vault's own file is neither read nor written.
        // A key that no longer opens the file (a passphrase changed since) is no key to merge with: that vault
        // counts as locked, and the driver says to unlock it.
        guard let vault = ring.documentVaults().first(where: { candidate in
            do {
                try candidate.reload()
            } catch VaultError.keyChanged {
                return keptOverOlderFile && candidate.replacedKey(of: header)
            } catch {}
            return candidate.vaultID == wanted
        }) else { return nil }
        _ = ring.vault(at: vault.path, touch: true)
        return vault
    }

    /// git's textconv: what a file of a vault unlocked here holds, never a value.
    func describeFile(_ bytes: [UInt8], label: String) throws -> AgentResponse {
        guard let vault = try vault(holding: bytes, label: label) else { return .locked }
        return .described(try vault.describeFile(bytes, label: label))
    }

    /// git's merge driver: two files of a vault unlocked here (by vault id, whatever its path), merged with its key.
    func mergeFiles(ours: [UInt8], theirs: [UInt8], labels: (String, String)) throws -> AgentResponse {
        guard let vault = try vault(holding: ours, label: labels.0, keptOverOlderFile: true) else { return .locked }
        let (merged, report) = try vault.mergeFiles(
            ours: ours, theirs: theirs, labels: labels, now: configuration.wallClock.milliseconds())
        return .mergedFiles(merged, report)
    }
}

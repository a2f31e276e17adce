import VaultCore

/// The service's operations of format version 2: an entry's versions, document changes, merges of another copy,
/// and git's merge driver and textconv on files of a vault held here (found by the vault id in their header).
extension AgentService {
    func performOnDocument(_ operation: AgentOperation, _ request: AgentWire.Message, on store: any KeyValueVault, reply: AgentWire.Writer) throws {
        let document = try store.requiringFields()
        switch operation {
        case .records:
            let which: EntryVersions
            if request.bool(.flags) { which = .all }
            else if let number = request.number(.version) { which = .version(Int(clamping: number)) }
            else { which = .current }
            try store.reload()
            if let records = try document.records(of: try text(request, .name), which) { AgentWire.encode(records, into: reply) }
        case .apply:
            try document.apply(try AgentWire.documentChanges(from: request))
        case .deleted:
            try store.reload()
            AgentWire.encode(try document.deletedEntries(), into: reply)
        case .merge:
            guard let other = request.first(.value) else { throw AgentError.badRequest("a request without a required field") }
            let bytes = request.payload.withUnsafeBytes { Array($0[other]) }
            let report = try document.merge(
                bytes, label: try text(request, .source), dryRun: request.bool(.flags), otherPassphrase: request.secret(.passphrase),
                acceptDeletions: request.strings(.code).contains("accept-deletions"))
            AgentWire.encode(report, into: reply)
        default:
            throw AgentError.badRequest("not an operation on a document")
        }
    }

    /// The unlocked version-2 vault whose id the file `bytes` carries (whatever its path), or `nil`.
    private func vault(holding bytes: [UInt8], label: String) throws -> DocumentVault? {
        guard DocumentHeader.isVersion2(bytes) else { throw VaultError.needsVersion2(path: label) }
        // Only its id is read here (no KDF runs): any parameters do.
        let wanted = try DocumentHeader.parse(bytes, label: label, policy: .insecureForTesting).vaultID
        // Reloaded when it can be (a passphrase changed since), else as last opened: git rewrites a vault in its work tree
        // to older commits (a rebase checks out the upstream first), which the rollback record refuses to open; the
        // files git hands over are merged with the key held, and the vault's own file is neither read nor written.
        // A key that no longer opens the file (a passphrase changed since) is no key to merge with: that vault
        // counts as locked, and the driver says to unlock it.
        guard let vault = ring.documentVaults().first(where: { candidate in
            do {
                try candidate.reload()
            } catch VaultError.keyChanged {
                return false
            } catch {}
            return candidate.vaultID == wanted
        }) else { return nil }
        _ = ring.vault(at: vault.path, touch: true)
        return vault
    }

    /// git's textconv: what a file of a vault unlocked here holds, never a value.
    func describeFile(_ request: AgentWire.Message) throws -> AgentWire.Writer {
        guard let range = request.first(.value) else { throw AgentError.badRequest("a request without a required field") }
        let bytes = request.payload.withUnsafeBytes { Array($0[range]) }
        let label = request.string(.source) ?? "file"
        guard let vault = try vault(holding: bytes, label: label) else { return locked() }
        let reply = ok()
        for line in try vault.describeFile(bytes, label: label) { reply.field(.message, line) }
        return reply
    }

    /// git's merge driver: two files of a vault unlocked here (by vault id, whatever its path), merged with its key.
    func mergeFiles(_ request: AgentWire.Message) throws -> AgentWire.Writer {
        let files = request.fields.filter { $0.tag == AgentWire.Tag.value.rawValue }.map { field in
            request.payload.withUnsafeBytes { Array($0[field.range]) }
        }
        let labels = request.strings(.source)
        guard files.count == 2, labels.count == 2 else { throw AgentError.badRequest("a merge of two files needs two files") }
        guard let vault = try vault(holding: files[0], label: labels[0]) else { return locked() }
        let (merged, report) = try vault.mergeFiles(
            ours: files[0], theirs: files[1], labels: (labels[0], labels[1]), now: configuration.wallClock.milliseconds())
        let reply = ok()
        merged.withUnsafeBytes { reply.field(.value, $0) }
        AgentWire.encode(report, into: reply)
        return reply
    }
}

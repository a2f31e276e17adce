import FoundationEssentials
import VaultCore

/// A vault unlocked in the agent, reached through its socket: a ``KeyValueVault`` like the local
/// ``SecureKeyValueStore``, so code written against the protocol runs over either. The key stays in the
/// agent; values arrive here in guarded memory.
public final class AgentVault: KeyValueVault {
    public let path: String
    private let client: AgentClient

    /// How long a `get` waits for its answer (`nil`: the ordinary 30 s).
    private let getTimeoutSeconds: Int?

    init(path: String, client: AgentClient, timeoutSeconds: Int? = nil) {
        self.path = path
        self.client = client
        self.getTimeoutSeconds = timeoutSeconds
    }

    public func getBytes(_ key: String) throws -> SecureBytes? {
        guard case .value(let value) = try client.request(.get(name: key), on: path, timeoutSeconds: getTimeoutSeconds) else {
            throw AgentResponse.unexpected
        }
        return value
    }

    public func contains(_ key: String) throws -> Bool {
        try entries([key])[0] != nil
    }

    public func keys() throws -> [String] {
        guard case .names(let names) = try client.request(.names(withoutActivity: false), on: path) else { throw AgentResponse.unexpected }
        return names
    }

    public func attributes(forKey key: String) throws -> EntryAttributes? {
        try entries([key])[0]?.attributes
    }

    /// Several entries in one request (not a listing of the whole vault, as `contains` and `attributes` were).
    public func entries(_ keys: [String]) throws -> [(value: SecureBytes?, attributes: EntryAttributes)?] {
        guard case .entries(let entries) = try client.request(.entries(names: keys), on: path) else { throw AgentResponse.unexpected }
        guard entries.count == keys.count else { throw AgentError.protocolError("an answer for \(entries.count) entries, not \(keys.count)") }
        return entries.map { entry in entry.map { ($0.value, $0.attributes.entryAttributes) } }
    }

    /// Every entry's name and attributes, sorted by name, in one request.
    public func listing() throws -> [(name: String, attributes: EntryAttributes)] {
        guard case .listing(let listing) = try client.request(.list, on: path) else { throw AgentResponse.unexpected }
        return listing.map { ($0.name, $0.attributes.entryAttributes) }
    }

    /// The batch as one `apply` (the agent's one write), in the document's terms (``VaultChanges/documentChanges()``)
    /// streamed from the batch's one guarded region.
    public func write(_ changes: VaultChanges) throws {
        _ = try client.request(.apply(.formatOne(changes)), on: path)
    }

    /// The versions of entry `name` (format version 2), in one request; the agent answers a version-1 vault with
    /// ``VaultError/needsVersion2(path:)``.
    public func records(of name: String, _ which: EntryVersions) throws -> [EntryRecord]? {
        guard case .records(let records) = try client.request(.records(name: name, which), on: path) else { throw AgentResponse.unexpected }
        return records
    }

    public func search(prefix: String, required: [(field: String, value: [UInt8])]) throws -> [EntryRecord] {
        guard case .found(let found) = try client.request(.search(prefix: prefix, required: required), on: path) else {
            throw AgentResponse.unexpected
        }
        return found
    }

    public func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> MergeReport {
        try mergeKeepingFile(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions, keepFile: false).report
    }

    /// The merge and the file the agent wrote, in one request (an agent that does not send the file: `nil`).
    public func mergeKeepingFile(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> (report: MergeReport, file: [UInt8]?) {
        try mergeKeepingFile(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions, keepFile: true)
    }

    private func mergeKeepingFile(
        _ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool, keepFile: Bool
    ) throws -> (report: MergeReport, file: [UInt8]?) {
        let merge = AgentRequest.Merge(
            label: label, file: other, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions, keepFile: keepFile)
        guard case .merged(let report, let file) = try client.request(.merge(merge), on: path) else { throw AgentResponse.unexpected }
        return (report, file)
    }

    public func apply(_ changes: [DocumentChange]) throws {
        _ = try client.request(.apply(.document(changes)), on: path)
    }

    public func deletedEntries() throws -> [VaultDocument.DeletedEntry] {
        guard case .deleted(let entries) = try client.request(.deleted, on: path) else { throw AgentResponse.unexpected }
        return entries
    }

    @discardableResult
    public func remove(_ key: String) throws -> Bool {
        guard case .existed(let existed) = try client.request(.remove(name: key), on: path) else { throw AgentResponse.unexpected }
        return existed
    }

    public func changePassphrase(to newPassphrase: SecureBytes, parameters: Argon2id.Parameters?) throws {
        precondition(parameters == nil, "the agent keeps the vault's Argon2id parameters")
        _ = try client.request(.passwd(newPassphrase), on: path)
    }

    /// Nothing to do: the agent re-reads the file before every read.
    public func reload() throws {}

    /// Nothing to release here: the key is the agent's, and the vault stays unlocked there.
    public func close() {}
}

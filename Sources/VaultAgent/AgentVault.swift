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
        try client.request(.get(name: key), on: path, timeoutSeconds: getTimeoutSeconds).secret(.value)
    }

    public func contains(_ key: String) throws -> Bool {
        try entries([key])[0] != nil
    }

    public func keys() throws -> [String] {
        try client.request(.names(withoutActivity: false), on: path).strings(.name)
    }

    public func attributes(forKey key: String) throws -> SecureKeyValueStore.EntryAttributes? {
        try entries([key])[0]?.attributes
    }

    /// Several entries in one request (not a listing of the whole vault, as `contains` and `attributes` were).
    public func entries(_ keys: [String]) throws -> [(value: SecureBytes?, attributes: SecureKeyValueStore.EntryAttributes)?] {
        let answer = try client.request(.entries(names: keys), on: path)
        func date(_ milliseconds: UInt64) -> Date { Date(timeIntervalSince1970: Double(Int64(bitPattern: milliseconds)) / 1000) }
        var out: [(value: SecureBytes?, attributes: SecureKeyValueStore.EntryAttributes)?] = []
        var current: (created: UInt64?, modified: UInt64?, size: UInt64?, value: SecureBytes?)?
        func finish() throws {
            guard let entry = current else { return }
            guard let created = entry.created, let modified = entry.modified, let size = entry.size, size <= UInt64(Int.max) else {
                throw AgentError.protocolError("a malformed entry")
            }
            out.append((entry.value, SecureKeyValueStore.EntryAttributes(created: date(created), modified: date(modified), byteCount: Int(size))))
            current = nil
        }
        for field in answer.fields {
            switch AgentWire.Tag(rawValue: field.tag) {
            case .bool:
                try finish()
                if answer.bool(field.range) { current = (nil, nil, nil, nil) } else { out.append(nil) }
            case .created: current?.created = answer.number(field.range)
            case .modified: current?.modified = answer.number(field.range)
            case .size: current?.size = answer.number(field.range)
            case .value: current?.value = answer.secret(field.range)
            default: break
            }
        }
        try finish()
        guard out.count == keys.count else { throw AgentError.protocolError("an answer for \(out.count) entries, not \(keys.count)") }
        return out
    }

    /// Every entry's name and attributes, sorted by name, in one request.
    public func listing() throws -> [(name: String, attributes: SecureKeyValueStore.EntryAttributes)] {
        let answer = try client.request(.list, on: path)
        let names = answer.strings(.name)
        let created = answer.numbers(.created)
        let modified = answer.numbers(.modified)
        let sizes = answer.numbers(.size)
        guard [created.count, modified.count, sizes.count].allSatisfy({ $0 == names.count }) else {
            throw AgentError.protocolError("a malformed list")
        }
        func date(_ milliseconds: UInt64) -> Date { Date(timeIntervalSince1970: Double(Int64(bitPattern: milliseconds)) / 1000) }
        return names.indices.map {
            (names[$0], SecureKeyValueStore.EntryAttributes(
                created: date(created[$0]), modified: date(modified[$0]), byteCount: Int(sizes[$0])))
        }
    }

    public func write(_ changes: SecureKeyValueStore.Changes) throws {
        _ = try client.request(.write(changes), on: path)
    }

    /// The versions of entry `name` (format version 2), in one request; the agent answers a version-1 vault with
    /// ``VaultError/needsVersion2(path:)``.
    public func records(of name: String, _ which: EntryVersions) throws -> [EntryRecord]? {
        let answer = try client.request(.records(name: name, which), on: path)
        return try AgentWire.records(from: answer)
    }

    public func search(prefix: String, required: [(field: String, value: [UInt8])]) throws -> [EntryRecord] {
        try AgentWire.searchResults(from: try client.request(.search(prefix: prefix, required: required), on: path))
    }

    public func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> MergeReport {
        let answer = try client.request(.merge(AgentRequest.Merge(
            label: label, file: other, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions)), on: path)
        return try AgentWire.mergeReport(from: answer)
    }

    /// The merge and the file the agent wrote, in one request (an agent that does not send the file: `nil`).
    public func mergeKeepingFile(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> (report: MergeReport, file: [UInt8]?) {
        let answer = try client.request(.merge(AgentRequest.Merge(
            label: label, file: other, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions, keepFile: true)), on: path)
        let file = answer.first(.value).map { range in answer.payload.withUnsafeBytes { Array($0[range]) } }
        return (try AgentWire.mergeReport(from: answer), file)
    }

    public func apply(_ changes: [DocumentChange]) throws {
        _ = try client.request(.apply(changes), on: path)
    }

    public func deletedEntries() throws -> [VaultDocument.DeletedEntry] {
        try AgentWire.deletedEntries(from: try client.request(.deleted, on: path))
    }

    @discardableResult
    public func remove(_ key: String) throws -> Bool {
        try client.request(.remove(name: key), on: path).bool(.bool)
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

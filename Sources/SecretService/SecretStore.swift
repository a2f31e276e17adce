import FoundationEssentials
import VaultAgent
import VaultCore

/// A collection of the Secret Service: one vault, reached through the agent.
struct SecretCollection: Equatable {
    /// The last element of its object path (the vault file's name without `.vault`).
    let id: String
    let path: String
    let vaultPath: String
}

/// An item as the provider shows it, without its secret: an entry `secret-service/ID` of its collection's vault.
struct SecretItem {
    let collection: SecretCollection
    let id: String
    let path: String
    let label: String
    let attributes: [(String, String)]
    let contentType: String
    /// Seconds since 1970.
    let created: UInt64
    let modified: UInt64

    var entryName: String { SecretStore.entryPrefix + id }
}

/// The items of the Secret Service as vault entries (docs/SECRET-SERVICE.md): item `ID` of a collection is the entry
/// `secret-service/ID` of its vault, the secret its `password` field, the label, the content type and each attribute
/// `KEY` non-secret fields (`label`, `content-type`, `attribute:KEY`). So an item syncs, is shared, keeps history, and
/// `vault get secret-service/ID` prints its secret. Every operation is one request to the agent (an attribute search
/// too: ``KeyValueVault/search(prefix:required:)``); the provider holds no key and keeps no secret past one reply.
final class SecretStore {
    static let entryPrefix = "secret-service/"
    /// The entry that holds a collection's label (field `label`), when one was set over D-Bus: outside
    /// `secret-service/`, so it is no item, and found by the same listing (prefix `secret-service`).
    static let collectionEntry = "secret-service-collection"
    static let attributePrefix = "attribute:"
    static let collectionPrefix = "/org/freedesktop/secrets/collection"
    static let defaultAlias = "/org/freedesktop/secrets/aliases/default"

    /// Bounds on what a client sends, checked before anything is written.
    static let maximumSecretBytes = 4 << 20
    static let maximumAttributes = 128
    static let maximumTextBytes = 64 << 10

    /// The first is the `default` alias.
    let collections: [SecretCollection]
    let socketPath: String
    private var client: AgentClient?
    /// What the provider has seen of each collection while its vault was unlocked: collection id → item id → item,
    /// the non-secret fields only (never a secret). Refreshed by every answer from an unlocked vault and kept across
    /// a lock, so that a locked collection still lists its items (as locked); empty until a vault is first seen
    /// unlocked (its entry names are encrypted in the file).
    private(set) var index: [String: [String: SecretItem]] = [:]
    /// The labels set on collections (collection id → label), as last read from their vaults; kept across a lock.
    private var labels: [String: String] = [:]

    init(vaultPaths: [String], socketPath: String) {
        var collections: [SecretCollection] = []
        for vaultPath in vaultPaths {
            var stem = String(vaultPath.split(separator: "/").last ?? "vault")
            if stem.hasSuffix(".vault") { stem.removeLast(6) }
            var id = stem.isEmpty ? "vault" : stem
            var suffix = 2
            while collections.contains(where: { $0.id == id }) {
                id = "\(stem)_\(suffix)"
                suffix += 1
            }
            collections.append(SecretCollection(id: id, path: DBusConnection.path(Self.collectionPrefix, id), vaultPath: vaultPath))
        }
        self.collections = collections
        self.socketPath = socketPath
    }

    /// The collection at `path` (its own path or the `default` alias's).
    func collection(at path: String) -> SecretCollection? {
        if path == Self.defaultAlias { return collections.first }
        return collections.first { $0.path == path }
    }

    /// The collection and item id of the item at `path`, or `nil` for a path that is no item's.
    func itemAddress(_ path: String) -> (SecretCollection, String)? {
        for collection in collections {
            if let id = DBusConnection.id(of: path, below: collection.path), !id.isEmpty, !id.contains("/") { return (collection, id) }
        }
        return nil
    }

    // MARK: The agent

    /// `body` on `collection`'s vault in the agent; a vault it does not hold (or no agent) is ``SecretServiceError/isLocked(_:)``.
    /// A broken connection is made again once.
    func withVault<T>(_ collection: SecretCollection, _ body: (AgentVault) throws -> T) throws(SecretServiceError) -> T {
        for attempt in 0..<2 {
            do {
                if client == nil { client = try AgentClient.connect(socketPath: socketPath, timeoutSeconds: 5) }
                guard let client else { throw AgentError.locked(path: collection.vaultPath) }
                return try body(client.vaultWithoutProbe(at: collection.vaultPath))
            } catch let error as SecretServiceError {
                throw error
            } catch AgentError.locked {
                throw .isLocked("the vault '\(collection.vaultPath)' is locked: unlock it with 'vault unlock --vault \(collection.vaultPath)'")
            } catch let error as AgentError {
                client = nil
                if attempt == 0, case .connection = error { continue }
                if attempt == 0, case .protocolError = error { continue }
                throw .failed("the agent: \(error)")
            } catch let error as VaultError {
                switch error {
                case .invalidFieldName, .invalidEntryName: throw .invalidArguments("the vault refused it: \(error)")
                default: throw .failed("the vault '\(collection.vaultPath)': \(error)")
                }
            } catch {
                throw .failed("\(error)")
            }
        }
        throw .failed("the agent does not answer")
    }

    /// The collections whose vaults the agent holds: one `status` request (not a use of any vault: it extends no
    /// idle time), empty when no agent answers.
    func unlockedCollections() -> Set<String> {
        for attempt in 0..<2 {
            do {
                if client == nil { client = try AgentClient.connect(socketPath: socketPath, timeoutSeconds: 5) }
                guard let client else { return [] }
                let held = Set(try client.status().vaults.map(\.path))
                return Set(collections.filter { held.contains(RollbackGuard.canonicalPath($0.vaultPath)) }.map(\.id))
            } catch {
                client = nil
                if attempt == 0 { continue }
            }
        }
        return []
    }

    /// Whether the agent does not hold `collection`'s vault.
    func isLocked(_ collection: SecretCollection) -> Bool {
        !unlockedCollections().contains(collection.id)
    }

    // MARK: The index

    /// The items of `collection` the index holds whose attributes include every one of `attributes`, by id.
    func indexed(in collection: SecretCollection, matching attributes: [(String, String)]) -> [SecretItem] {
        (index[collection.id] ?? [:]).values.filter { item in
            attributes.allSatisfy { wanted in item.attributes.contains { $0 == wanted } }
        }.sorted { $0.id < $1.id }
    }

    /// The item at `path` as the index holds it.
    func indexedItem(at path: String) -> SecretItem? {
        guard let (collection, id) = itemAddress(path) else { return nil }
        return index[collection.id]?[id]
    }

    /// Records `found`, the items of `collection` that match `attributes` (all its items when empty): an indexed
    /// item that matches but is not among them is gone.
    private func remember(_ found: [SecretItem], in collection: SecretCollection, matching attributes: [(String, String)]) {
        var known = index[collection.id] ?? [:]
        for item in indexed(in: collection, matching: attributes) { known[item.id] = nil }
        for item in found { known[item.id] = item }
        index[collection.id] = known
    }

    private func remember(_ item: SecretItem?, id: String, in collection: SecretCollection) {
        index[collection.id, default: [:]][id] = item
    }

    // MARK: Reading

    /// The items of `collection` whose attributes include every one of `attributes`, by name.
    func items(in collection: SecretCollection, matching attributes: [(String, String)]) throws(SecretServiceError) -> [SecretItem] {
        let required = attributes.map { (field: Self.attributePrefix + $0.0, value: Array($0.1.utf8)) }
        // All of them: the prefix without its slash brings the collection's label too, in the same request.
        let prefix = attributes.isEmpty ? String(Self.entryPrefix.dropLast()) : Self.entryPrefix
        let records = try withVault(collection) { try $0.search(prefix: prefix, required: required) }
        let found = records.compactMap { item(from: $0, in: collection) }
        if attributes.isEmpty {
            labels[collection.id] = records.first { $0.name == Self.collectionEntry }?.field("label")?.value.stringValue
        }
        remember(found, in: collection, matching: attributes)
        return found
    }

    /// ``items(in:matching:)``, or for a locked collection the items of the index (``indexed(in:matching:)``).
    func itemsOrIndexed(in collection: SecretCollection, matching attributes: [(String, String)]) throws(SecretServiceError) -> [SecretItem] {
        do {
            return try items(in: collection, matching: attributes)
        } catch .isLocked {
            return indexed(in: collection, matching: attributes)
        }
    }

    /// The item at `path`.
    func item(at path: String) throws(SecretServiceError) -> SecretItem {
        guard let (collection, id) = itemAddress(path) else { throw .noSuchObject("no such item: \(path)") }
        let name = Self.entryPrefix + id
        let found = try withVault(collection) { try $0.search(prefix: name, required: []) }.first { $0.name == name }
        let seen = found.flatMap { self.item(from: $0, in: collection) }
        remember(seen, id: id, in: collection)
        guard let seen else { throw .noSuchObject("no such item: \(path)") }
        return seen
    }

    private func item(from record: EntryRecord, in collection: SecretCollection) -> SecretItem? {
        guard record.name.hasPrefix(Self.entryPrefix) else { return nil }
        let id = String(record.name.dropFirst(Self.entryPrefix.count))
        guard !id.isEmpty, !id.contains("/") else { return nil }
        func text(_ field: EntryRecord.Field) -> String { field.value.stringValue ?? "" }
        let attributes = record.fields.filter { !$0.isSecret && $0.name.hasPrefix(Self.attributePrefix) }
            .map { (String($0.name.dropFirst(Self.attributePrefix.count)), text($0)) }
        return SecretItem(
            collection: collection, id: id, path: DBusConnection.path(collection.path, id),
            label: record.field("label").map(text) ?? id, attributes: attributes,
            contentType: record.field("content-type").map(text) ?? "text/plain",
            created: record.created.milliseconds / 1000, modified: record.modified.milliseconds / 1000)
    }

    /// The item at `path` and its secret (its `password` field, empty when it has none), for one reply: one request.
    func itemWithSecret(at path: String) throws(SecretServiceError) -> (SecretItem, SecureBytes) {
        guard let (collection, id) = itemAddress(path) else { throw .noSuchObject("no such item: \(path)") }
        let record = try withVault(collection) { try $0.record(of: Self.entryPrefix + id) }
        let seen = record.flatMap { self.item(from: $0, in: collection) }
        remember(seen, id: id, in: collection)
        guard let record, let seen else { throw .noSuchObject("no such item: \(path)") }
        return (seen, record.field("password")?.value ?? SecureBytes(count: 0) { _ in })
    }

    // MARK: Writing

    static func check(label: String?, attributes: [(String, String)]?, secret: SecureBytes?) throws(SecretServiceError) {
        if let label, label.utf8.count > maximumTextBytes { throw .invalidArguments("the label is longer than \(maximumTextBytes) bytes") }
        if let secret, secret.count > maximumSecretBytes {
            throw .invalidArguments("the secret is larger than \(maximumSecretBytes) bytes")
        }
        for (key, value) in attributes ?? [] {
            let field = attributePrefix + key
            guard !key.isEmpty, field.utf8.count <= VaultDocument.maximumFieldNameByteCount,
                  !key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw .invalidArguments("an attribute name has 1 to \(VaultDocument.maximumFieldNameByteCount - attributePrefix.utf8.count) bytes and no control characters")
            }
            guard value.utf8.count <= maximumTextBytes else { throw .invalidArguments("an attribute value is longer than \(maximumTextBytes) bytes") }
        }
    }

    private static func text(_ string: String) -> SecureBytes {
        let bytes = Array(string.utf8)
        return SecureBytes(count: bytes.count) { $0.copyBytes(from: bytes) }
    }

    /// Makes an item (or, with `replace`, replaces the secret and label of one whose attributes are exactly
    /// `attributes`) in one atomic write; whether it was made, and its path.
    func create(
        in collection: SecretCollection, label: String, attributes: [(String, String)], secret: SecureBytes,
        contentType: String, replace: Bool
    ) throws(SecretServiceError) -> (path: String, created: Bool) {
        try Self.check(label: label, attributes: attributes, secret: secret)
        try Self.check(label: contentType, attributes: nil, secret: nil)
        let sorted = attributes.sorted { $0.0 < $1.0 }
        var existing: SecretItem?
        if replace {
            existing = try items(in: collection, matching: attributes).first { item in
                item.attributes.sorted { $0.0 < $1.0 }.elementsEqual(sorted) { $0 == $1 }
            }
        }
        let id = existing?.id ?? SecureBytes.random(count: 16).unprotectedBytes.map { String($0, radix: 16).leftPadded(2) }.joined()
        let name = Self.entryPrefix + id
        var changes: [DocumentChange] = [.require(entry: name, exists: existing != nil)]
        changes.append(.setField(entry: name, field: "password", value: secret, secret: true))
        changes.append(.setField(entry: name, field: "label", value: Self.text(label), secret: false))
        changes.append(.setField(entry: name, field: "content-type", value: Self.text(contentType), secret: false))
        if existing == nil {
            for (key, value) in attributes {
                changes.append(.setField(entry: name, field: Self.attributePrefix + key, value: Self.text(value), secret: false))
            }
        }
        try withVault(collection) { try $0.apply(changes) }
        let path = DBusConnection.path(collection.path, id)
        _ = try? item(at: path)  // the index
        return (path, existing == nil)
    }

    @discardableResult
    func setSecret(_ item: SecretItem, _ secret: SecureBytes, contentType: String) throws(SecretServiceError) -> SecretItem? {
        try Self.check(label: contentType, attributes: nil, secret: secret)
        try withVault(item.collection) {
            try $0.apply([
                .require(entry: item.entryName, exists: true),
                .setField(entry: item.entryName, field: "password", value: secret, secret: true),
                .setField(entry: item.entryName, field: "content-type", value: Self.text(contentType), secret: false),
            ])
        }
        return try? self.item(at: item.path)  // the index, and the item as written
    }

    @discardableResult
    func setLabel(_ item: SecretItem, _ label: String) throws(SecretServiceError) -> SecretItem? {
        try Self.check(label: label, attributes: nil, secret: nil)
        try withVault(item.collection) {
            try $0.apply([
                .require(entry: item.entryName, exists: true),
                .setField(entry: item.entryName, field: "label", value: Self.text(label), secret: false),
            ])
        }
        return try? self.item(at: item.path)  // the index, and the item as written
    }

    @discardableResult
    func setAttributes(_ item: SecretItem, _ attributes: [(String, String)]) throws(SecretServiceError) -> SecretItem? {
        try Self.check(label: nil, attributes: attributes, secret: nil)
        var changes: [DocumentChange] = [.require(entry: item.entryName, exists: true)]
        for (key, _) in item.attributes where !attributes.contains(where: { $0.0 == key }) {
            changes.append(.removeField(entry: item.entryName, field: Self.attributePrefix + key))
        }
        for (key, value) in attributes {
            changes.append(.setField(entry: item.entryName, field: Self.attributePrefix + key, value: Self.text(value), secret: false))
        }
        try withVault(item.collection) { try $0.apply(changes) }
        return try? self.item(at: item.path)  // the index, and the item as written
    }

    /// The label of `collection`: the one set over D-Bus (``setLabel(of:_:)``), else its id (the vault file's name).
    func label(of collection: SecretCollection) -> String {
        labels[collection.id] ?? collection.id
    }

    /// Sets the label of `collection`: field `label` of the entry ``collectionEntry`` of its vault (so it syncs).
    func setLabel(of collection: SecretCollection, _ label: String) throws(SecretServiceError) {
        try Self.check(label: label, attributes: nil, secret: nil)
        try withVault(collection) {
            try $0.apply([.setField(entry: Self.collectionEntry, field: "label", value: Self.text(label), secret: false)])
        }
        labels[collection.id] = label
    }

    func delete(_ item: SecretItem) throws(SecretServiceError) {
        try withVault(item.collection) { try $0.apply([.delete(entry: item.entryName)]) }
        remember(nil, id: item.id, in: item.collection)
    }

    /// Locks `collection`'s vault in the agent (`Lock`); whether it was unlocked.
    func lock(_ collection: SecretCollection) throws(SecretServiceError) {
        do {
            if client == nil { client = try AgentClient.connect(socketPath: socketPath, timeoutSeconds: 5) }
            try client?.lock(path: collection.vaultPath)
        } catch {
            client = nil
            throw .failed("cannot lock '\(collection.vaultPath)': \(error)")
        }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

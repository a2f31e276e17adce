import FoundationEssentials

/// An unlocked vault: the entries of one vault file, readable and writable, whoever holds its key.
///
/// ``SecureKeyValueStore`` is the local one (this process derived the key; it opens every format version); the
/// agent's client is another (the key stays in the `vault agent` process, which answers requests). Code that reads
/// and writes entries (the credential store, device registration, the CLI's verbs) takes a `KeyValueVault`, so it
/// works over either. An entry's fields, earlier versions and merges (format versions 2 and 3) are part of it: a
/// version-1 vault answers them with ``VaultError/needsVersion2(path:)``. Every method blocks (see
/// ``SecureKeyValueStore``).
public protocol KeyValueVault: AnyObject, Sendable {
    /// The vault file's path.
    var path: String { get }
    /// Whether an entry exists under `key`.
    func contains(_ key: String) throws -> Bool
    /// The value under `key` as secret bytes, or `nil` if there is none.
    func getBytes(_ key: String) throws -> SecureBytes?
    /// The names of all entries, sorted.
    func keys() throws -> [String]
    /// When the entry under `key` was created and last modified, and its size.
    func attributes(forKey key: String) throws -> EntryAttributes?
    /// Every entry's name and attributes, sorted by name (one request through the agent).
    func listing() throws -> [(name: String, attributes: EntryAttributes)]
    /// Several entries at once, in the order of `keys`: each one's value and attributes, or `nil` when there is
    /// no such entry (one request through the agent, where asking entry by entry is a round trip each).
    func entries(_ keys: [String]) throws -> [(value: SecureBytes?, attributes: EntryAttributes)?]
    /// Writes a batch of puts and removes in one atomic, durable write.
    func write(_ changes: VaultChanges) throws
    /// Removes the entry under `key`; whether there was one. Removing a missing key writes nothing.
    @discardableResult func remove(_ key: String) throws -> Bool
    /// Re-wraps the data key under a new passphrase (see ``SecureKeyValueStore/changePassphrase(to:parameters:)``).
    func changePassphrase(to newPassphrase: SecureBytes, parameters: Argon2id.Parameters?) throws
    /// Re-reads the file, so that reads see what other processes wrote.
    func reload() throws
    /// Releases this handle: the local store zeroes its key and every decrypted value; a handle on the
    /// agent drops nothing there (the vault stays unlocked in the agent until it locks).
    func close()

    // Format versions 2 and 3: a version-1 vault throws ``VaultError/needsVersion2(path:)``.

    /// The versions `which` of entry `name`, newest first, with their fields' values; `nil` when there is no such
    /// entry.
    ///
    /// - Throws: ``VaultError/noSuchVersion(key:version:)``, ``VaultError/needsVersion2(path:)``.
    func records(of name: String, _ which: EntryVersions) throws -> [EntryRecord]?
    /// The current versions, non-secret fields only, of the entries named `prefix…` whose non-secret fields
    /// include every one of `required` (``VaultDocument/search(prefix:required:)``): one request through the agent.
    func search(prefix: String, required: [(field: String, value: [UInt8])]) throws -> [EntryRecord]
    /// Applies `changes` (fields, restores, …) in one atomic, durable write (``VaultDocument/apply(_:replica:clock:)``);
    /// a version-1 vault takes those its format can hold (puts of the password field, removes, moves, copies).
    func apply(_ changes: [DocumentChange]) throws
    /// Merges another copy of this vault, the bytes of its file (`label` names it in errors), into this one
    /// (``DocumentStore/merge(_:label:dryRun:otherPassphrase:attempts:)``); with `dryRun` nothing is
    /// written. A copy sealed with another data key (a passphrase change on one side) needs `otherPassphrase`.
    /// A merge that would delete more than 10 entries and more than a tenth of the vault is refused
    /// (``VaultError/massDeletion(path:names:)``, nothing written) unless `acceptDeletions`.
    func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> MergeReport
    /// ``merge(_:label:dryRun:otherPassphrase:acceptDeletions:)``, with the vault file as the merge left it when it
    /// wrote it (`nil`: it wrote nothing, or this handle cannot say): what a sync sends next, without reading the
    /// file again (through the agent: the merge and the file in one request).
    func mergeKeepingFile(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> (report: MergeReport, file: [UInt8]?)
    /// The deleted entries that keep a change a deletion won over (format version 3: ``VaultDocument/deleted``),
    /// what `vault restore NAME --deleted` brings back.
    func deletedEntries() throws -> [VaultDocument.DeletedEntry]
    /// Throws ``VaultError/needsVersion2(path:)`` when this handle knows its vault has no fields (a version-1 vault
    /// opened in this process), before anything is asked or written; a vault held by the agent answers at its first
    /// operation of fields instead.
    func requireFields() throws
}

/// What a vault with fields was called when only versions 2 and 3 had them: every ``KeyValueVault`` answers
/// their operations now.
public typealias DocumentEntries = KeyValueVault

extension KeyValueVault {
    /// The merge alone: the file is not known here.
    public func mergeKeepingFile(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> (report: MergeReport, file: [UInt8]?) {
        (try merge(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions), nil)
    }

    /// Merges another copy of this vault sealed with this vault's data key.
    public func merge(_ other: [UInt8], label: String, dryRun: Bool) throws -> MergeReport {
        try merge(other, label: label, dryRun: dryRun, otherPassphrase: nil, acceptDeletions: false)
    }

    /// Merges another copy, refusing a mass deletion (``merge(_:label:dryRun:otherPassphrase:acceptDeletions:)``).
    public func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?) throws -> MergeReport {
        try merge(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: false)
    }

    /// The current version of entry `name`, or `nil`.
    public func record(of name: String) throws -> EntryRecord? { try records(of: name, .current)?.first }

    /// Every vault whose format has fields, and one through the agent, passes the check.
    public func requireFields() throws {}

    /// This vault, after ``requireFields()``: what the verbs of fields, history and merges start with.
    public func requiringFields() throws -> Self {
        try requireFields()
        return self
    }
}

extension KeyValueVault {
    /// Makes several puts and removes in one atomic, durable write.
    public func update(_ body: (inout VaultChanges) throws -> Void) throws {
        var changes = VaultChanges()
        try body(&changes)
        try write(changes)
    }

    /// Stores secret bytes under `key`, replacing any previous value.
    public func put(_ value: SecureBytes, forKey key: String) throws {
        try update { try $0.put(value, forKey: key) }
    }

    /// Stores the UTF-8 bytes of `value` under `key`.
    public func put(_ value: String, forKey key: String) throws {
        try update { try $0.put(value, forKey: key) }
    }

    /// The value under `key` as a `String` (an ordinary, unwiped copy), or `nil` if there is none.
    /// - Throws: ``VaultError/typeMismatch(key:reason:)`` if the value is not valid UTF-8.
    public func getString(_ key: String) throws -> String? {
        guard let bytes = try getBytes(key) else { return nil }
        guard let text = bytes.stringValue else {
            throw VaultError.typeMismatch(key: key, reason: "the value is not valid UTF-8")
        }
        return text
    }
}

/// The tutorials' conveniences, over any vault.
extension KeyValueVault {
    /// Stores `value` under `key`.
    public func put(_ value: Data, forKey key: String) throws {
        try put(SecureBytes(value), forKey: key)
    }

    /// Stores `value` under `key`.
    public func put(_ value: [UInt8], forKey key: String) throws {
        try put(SecureBytes(value), forKey: key)
    }

    /// Stores `value` under `key` as JSON (read it back with ``getJSON(_:as:)``).
    ///
    /// A separate name, not a `put` overload: a generic `put` would also catch an `Optional<String>` and store
    /// it as the JSON text `"…"`, quotes included. The encoder's output passes through an ordinary `Data`.
    public func putJSON<T: Encodable>(_ value: T, forKey key: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try put(SecureBytes(try encoder.encode(value)), forKey: key)
    }

    /// The value under `key` as `Data`, or `nil`. The copy is ordinary memory.
    public func getData(_ key: String) throws -> Data? {
        try getBytes(key).map { $0.withUnsafeBytes { Data($0) } }
    }

    /// The value under `key` decoded from JSON as `type`, or `nil` if there is none.
    /// - Throws: ``VaultError/typeMismatch(key:reason:)`` if it does not decode.
    public func getJSON<T: Decodable>(_ key: String, as type: T.Type) throws -> T? {
        guard let data = try getData(key) else { return nil }
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw VaultError.typeMismatch(key: key, reason: "does not decode as \(type)")
        }
    }

    /// Removes every entry, including those other processes added since this vault was read (the vault and its
    /// passphrase stay).
    public func removeAll() throws {
        var changes = VaultChanges()
        changes.removeAll()
        try write(changes)
    }

    /// ``changePassphrase(to:parameters:)`` under the tutorials' name (it changes the passphrase and the data
    /// key that encrypts the entries).
    public func changeEncryptionKey(with newPassphrase: SecureBytes, parameters: Argon2id.Parameters? = nil) throws {
        try changePassphrase(to: newPassphrase, parameters: parameters)
    }

    /// ``changePassphrase(to:parameters:)`` with a `String` (the tutorials' signature).
    public func changeEncryptionKey(with newPassphrase: String) throws {
        try changePassphrase(to: SecureBytes(string: newPassphrase), parameters: nil)
    }
}

extension KeyValueVault {
    /// Entry by entry (``entries(_:)``): what a vault in this process does.
    public func entries(_ keys: [String]) throws -> [(value: SecureBytes?, attributes: EntryAttributes)?] {
        try keys.map { key in try attributes(forKey: key).map { (try getBytes(key), $0) } }
    }
}

extension FormatOneStore: KeyValueVault {
    public func listing() throws -> [(name: String, attributes: EntryAttributes)] {
        try keys().compactMap { name in try attributes(forKey: name).map { (name, $0) } }
    }

    // A version-1 vault has no fields, versions or replicas.
    public func records(of name: String, _ which: EntryVersions) throws -> [EntryRecord]? { throw VaultError.needsVersion2(path: path) }
    public func search(prefix: String, required: [(field: String, value: [UInt8])]) throws -> [EntryRecord] {
        throw VaultError.needsVersion2(path: path)
    }
    /// The changes a version-1 vault can hold (``VaultChanges/init(formatOne:path:)``: its puts, removes, moves and
    /// copies in the document's terms), in one write; any other throws ``VaultError/needsVersion2(path:)``.
    public func apply(_ changes: [DocumentChange]) throws { try write(VaultChanges(formatOne: changes, path: path)) }
    public func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> MergeReport {
        throw VaultError.needsVersion2(path: path)
    }
    public func deletedEntries() throws -> [VaultDocument.DeletedEntry] { throw VaultError.needsVersion2(path: path) }
    public func requireFields() throws { throw VaultError.needsVersion2(path: path) }
}

extension VaultChanges {
    /// One change of a batch, in order: a put (its value's bytes, valid only inside ``forEach(_:)``) or a remove.
    package enum Item {
        case put(name: String, value: UnsafeRawBufferPointer)
        case remove(name: String)
        case copy(name: String, from: String, keepCreated: Bool)
        case require(name: String, exists: Bool)
    }

    /// Whether the batch starts by removing every entry.
    package var removesEverything: Bool { removesAll }

    /// Calls `body` with each requirement, then each change in order (the agent's client sends them one by one).
    package func forEach(_ body: (Item) throws -> Void) throws {
        for (name, exists) in requirements { try body(.require(name: name, exists: exists)) }
        try values.withUnsafeBytes { values in
            for (name, change) in list {
                switch change {
                case .put(let range): try body(.put(name: name, value: UnsafeRawBufferPointer(rebasing: values[range])))
                case .remove: try body(.remove(name: name))
                case .copy(let source, let keepCreated): try body(.copy(name: name, from: source, keepCreated: keepCreated))
                }
            }
        }
    }
}

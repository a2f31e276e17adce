/// An unlocked vault: the entries of one vault file, readable and writable, whoever holds its key.
///
/// ``SecureKeyValueStore`` is the local one (this process derived the key); the agent's client is another
/// (the key stays in the `vault agent` process, which answers requests). Code that only reads and writes
/// entries (the credential store, device registration, the CLI's verbs) takes a `KeyValueVault`, so it works
/// over either. Every method blocks (see ``SecureKeyValueStore``).
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
    func attributes(forKey key: String) throws -> SecureKeyValueStore.EntryAttributes?
    /// Every entry's name and attributes, sorted by name (one request through the agent).
    func listing() throws -> [(name: String, attributes: SecureKeyValueStore.EntryAttributes)]
    /// Several entries at once, in the order of `keys`: each one's value and attributes, or `nil` when there is
    /// no such entry (one request through the agent, where asking entry by entry is a round trip each).
    func entries(_ keys: [String]) throws -> [(value: SecureBytes?, attributes: SecureKeyValueStore.EntryAttributes)?]
    /// Writes a batch of puts and removes in one atomic, durable write.
    func write(_ changes: SecureKeyValueStore.Changes) throws
    /// Removes the entry under `key`; whether there was one. Removing a missing key writes nothing.
    @discardableResult func remove(_ key: String) throws -> Bool
    /// Re-wraps the data key under a new passphrase (see ``SecureKeyValueStore/changePassphrase(to:parameters:)``).
    func changePassphrase(to newPassphrase: SecureBytes, parameters: Argon2id.Parameters?) throws
    /// Re-reads the file, so that reads see what other processes wrote.
    func reload() throws
    /// Releases this handle: the local store zeroes its key and every decrypted value; a handle on the
    /// agent drops nothing there (the vault stays unlocked in the agent until it locks).
    func close()
}

extension KeyValueVault {
    /// Makes several puts and removes in one atomic, durable write.
    public func update(_ body: (inout SecureKeyValueStore.Changes) throws -> Void) throws {
        var changes = SecureKeyValueStore.Changes()
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

extension KeyValueVault {
    /// Entry by entry (``entries(_:)``): what a vault in this process does.
    public func entries(_ keys: [String]) throws -> [(value: SecureBytes?, attributes: SecureKeyValueStore.EntryAttributes)?] {
        try keys.map { key in try attributes(forKey: key).map { (try getBytes(key), $0) } }
    }
}

extension SecureKeyValueStore: KeyValueVault {
    public func listing() throws -> [(name: String, attributes: EntryAttributes)] {
        try keys().compactMap { name in try attributes(forKey: name).map { (name, $0) } }
    }
}

extension SecureKeyValueStore.Changes {
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

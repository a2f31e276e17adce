import FoundationEssentials

/// Reading and writing entries (``FormatOneStore``).
extension FormatOneStore {
    // MARK: Writing entries

    /// Makes several puts and removes in one atomic, durable write.
    ///
    /// ```swift
    /// try store.update { changes in
    ///     try changes.put(user, forKey: "username")
    ///     try changes.put(password, forKey: "password")
    /// }
    /// ```
    public func update(_ body: (inout VaultChanges) throws -> Void) throws {
        var changes = VaultChanges(values: state.withLock { $0.regions.takeArena() })
        defer {
            var arena: GuardedArena? = changes.detachValues()
            state.withLock { $0.regions.keep(arena.take()) }
        }
        try body(&changes)
        try write(changes)
    }

    /// Writes a batch made elsewhere (``Changes/init()``) in one atomic, durable write.
    public func write(_ changes: VaultChanges) throws {
        try modify { try next($0, applying: changes, regions: &$1) }
    }

    /// Stores secret bytes under `key`, replacing any previous value. One durable write.
    public func put(_ value: SecureBytes, forKey key: String) throws {
        try update { try $0.put(value, forKey: key) }
    }

    /// Stores the UTF-8 bytes of `value` under `key` (the tutorials' `put(_:forKey:)`).
    public func put(_ value: String, forKey key: String) throws {
        try update { try $0.put(value, forKey: key) }
    }

    /// Removes the entry under `key`. Returns whether there was one (in the file as it is under the lock,
    /// whatever this store read before); removing a missing key writes nothing.
    @discardableResult
    public func remove(_ key: String) throws -> Bool {
        var existed = false
        try modify { current, regions in
            guard current.contents.entries[key] != nil else { return current }
            existed = true
            var changes = VaultChanges()
            changes.remove(key)
            return try next(current, applying: changes, regions: &regions)
        }
        return existed
    }

    /// Changes the passphrase and the data key in one atomic write: a new random data key, wrapped under a key
    /// derived from `newPassphrase` with a new salt, and the body sealed under it.
    ///
    /// The old passphrase stops working at once, and so does the old data key: whoever kept an old copy of the
    /// file and its passphrase can neither read later versions nor forge one the new passphrase opens. With
    /// rollback protection on, the old key's id is remembered as retired, so a copy from before the change is
    /// refused (``VaultError/retiredKey(path:)``). Argon2id runs before the vault's lock is taken, so other
    /// writers do not wait for it. Other stores holding this vault open get ``VaultError/keyChanged(path:)``.
    ///
    /// - Parameter parameters: new Argon2id parameters, or `nil` to keep the vault's.
    public func changePassphrase(to newPassphrase: SecureBytes, parameters: Argon2id.Parameters? = nil) throws {
        if let parameters, !options.kdfPolicy.accepts(parameters) {
            throw VaultError.kdfParametersOutOfRange(
                path: path, opsLimit: parameters.opsLimit, memLimitBytes: parameters.memLimitBytes)
        }
        guard let held = state.withLock({ $0.open }) else { throw VaultError.notOpen }
        let newDataKey = SecureBytes.random(count: VaultFormat.dataKeyByteCount)
        let wrapped = try VaultEnvelope.wrap(
            newDataKey, passphrase: newPassphrase, parameters: parameters ?? held.header.parameters,
            generation: try held.header.nextGeneration(path: path))
        try modify { current, regions in
            var header = wrapped
            header.generation = try current.header.nextGeneration(path: path)
            return try rewrite(current, as: header, applying: [], values: nil, regions: &regions, newDataKey: newDataKey)
        }
    }

    // MARK: Reading entries

    func read<R>(_ body: (VaultContents) throws -> R) throws -> R {
        try state.withLock { (state) throws in
            guard let open = state.open else { throw VaultError.notOpen }
            return try body(open.contents)
        }
    }

    /// Whether an entry exists under `key`.
    public func contains(_ key: String) throws -> Bool {
        try read { $0.entries[key] != nil }
    }

    /// The value under `key` as secret bytes, or `nil` if there is none.
    public func getBytes(_ key: String) throws -> SecureBytes? {
        try read { contents in contents.withValue(key) { SecureBytes($0) } }
    }

    /// The value under `key` as a `String`, or `nil` if there is none (the tutorials' `getString(_:)`).
    ///
    /// A `String` is an ordinary, unwiped copy: prefer ``getBytes(_:)`` for secrets you can handle as bytes.
    /// - Throws: ``VaultError/typeMismatch(key:reason:)`` if the value is not valid UTF-8.
    public func getString(_ key: String) throws -> String? {
        let value: String?? = try read { contents in
            contents.withValue(key) { VaultContents.string(utf8: $0) }
        }
        guard let value else { return nil }
        guard let value else { throw VaultError.typeMismatch(key: key, reason: "the value is not valid UTF-8") }
        return value
    }

    /// The names of all entries, sorted.
    public func keys() throws -> [String] {
        try state.withLock { (state) throws in
            guard var open = state.open else { throw VaultError.notOpen }
            if let sorted = open.sortedNames { return sorted }
            let sorted = open.contents.order.sorted()
            open.sortedNames = sorted
            state.open = open
            return sorted
        }
    }

    /// The number of entries.
    public var count: Int {
        get throws { try read { $0.count } }
    }

    /// When the entry under `key` was created and last modified, and its size.
    public func attributes(forKey key: String) throws -> EntryAttributes? {
        try read { contents in
            contents.entries[key].map {
                EntryAttributes(
                    created: Date(timeIntervalSince1970: Double($0.created) / 1000),
                    modified: Date(timeIntervalSince1970: Double($0.modified) / 1000),
                    byteCount: $0.valueCount)
            }
        }
    }

    /// Checks an entry name: 1 to 4,096 bytes of UTF-8, no control characters (C0, DEL or C1: U+0000–U+001F,
    /// U+007F–U+009F).
    public static func validate(key: String) throws {
        let byteCount = key.utf8.count
        guard byteCount > 0 else { throw VaultError.invalidEntryName(reason: "the name is empty") }
        guard byteCount <= VaultFormat.maximumNameByteCount else {
            throw VaultError.invalidEntryName(reason: "the name is longer than \(VaultFormat.maximumNameByteCount) bytes")
        }
        guard !key.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw VaultError.invalidEntryName(reason: "the name contains a control character")
        }
    }
}

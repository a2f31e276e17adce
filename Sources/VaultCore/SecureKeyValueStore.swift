import Foundation
import Synchronization
import VaultSodium

/// An encrypted key-value store in one file, unlocked with a passphrase.
///
/// The API follows the `SecureKeyValueStore` of the SAP mobile tutorials (`init(databaseFileName:)`,
/// `open(with:)`, `put(_:forKey:)`, `getString(_:)`, `changeEncryptionKey(with:)`), without their hard-coded key:
///
/// - Argon2id (`crypto_pwhash`) turns the passphrase and a random 16-byte salt into a key-encryption key,
///   which wraps a random 32-byte data key with `crypto_secretbox`.
/// - All entries (names, values, timestamps) are sealed together under the data key with `crypto_secretbox`,
///   with a fresh random nonce on every write. The header is bound to the sealed body, so editing any byte
///   of the file makes opening fail.
/// - Every write replaces the file atomically and durably, under an exclusive lock on `<path>.lock`, after
///   re-reading the file: writers in several processes never lose each other's updates.
/// - The passphrase, keys and decrypted values live in libsodium-guarded memory, zeroed when released.
///
/// `docs/FORMAT.md` specifies the file. All methods are thread-safe, and all of them block: reads and writes
/// of the file, `fsync`, waiting for another process's lock (up to ``Options/lockTimeoutSeconds``) and, in
/// ``open(with:)-(SecureBytes)`` and ``changePassphrase(to:parameters:)``, Argon2id (up to 1 GiB and seconds).
/// From `async` code use the ``AsyncSecureKeyValueStore`` face, which runs them off the cooperative pool.
///
/// ```swift
/// let store = SecureKeyValueStore(path: "/home/me/.local/share/vault/app.vault")
/// try store.open(with: passphrase)          // creates the vault if there is none
/// try store.put("alice", forKey: "username")
/// let user = try store.getString("username")  // "alice"
/// store.close()                             // zeroes all key material
/// ```
public final class SecureKeyValueStore: Sendable {
    /// The vault file's path.
    public let path: String
    public let options: Options

    /// Everything that changes, behind one lock (held across file I/O: readers in this process wait for a
    /// write's `fsync`, which keeps every reader's view a file that was on disk).
    private let state = Mutex(State())

    private struct State: ~Copyable, Sendable {
        var open: OpenState?
        /// Zeroed regions kept for the next write (``RegionPool``).
        var regions = RegionPool()
    }

    struct OpenState: Sendable {
        var dataKey: SecureBytes
        var header: VaultFormat.Header
        /// The first bytes of the file as last read or written (header and body nonce): if the file on disk
        /// still starts with them, it is the file we hold (the body nonce is fresh on every write).
        var fileIdentity: [UInt8]
        var contents: VaultContents
    }

    /// A store for the vault file at `path`. Nothing is read until ``open(with:)-(SecureBytes)``.
    public init(path: String, options: Options = Options()) {
        self.path = path
        self.options = options
    }

    /// A store for `databaseFileName` in ``defaultDirectory``, like the tutorials' `SecureKeyValueStore(databaseFileName:)`.
    ///
    /// - Throws: ``VaultError/invalidFileName(_:)`` if the name contains `/` or is empty or `.`/`..`.
    public convenience init(databaseFileName: String, options: Options = Options()) throws {
        guard !databaseFileName.isEmpty, !databaseFileName.contains("/"), databaseFileName != ".",
            databaseFileName != ".."
        else { throw VaultError.invalidFileName(databaseFileName) }
        self.init(path: Self.defaultDirectory + "/" + databaseFileName, options: options)
    }

    /// `$XDG_DATA_HOME/vault`, or `~/.local/share/vault` when `XDG_DATA_HOME` is unset or not absolute.
    public static var defaultDirectory: String {
        let environment = ProcessInfo.processInfo.environment
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return data + "/vault"
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/share/vault"
    }

    /// Whether the store is open (unlocked).
    public var isOpen: Bool { state.withLock { $0.open != nil } }

    /// Whether a file exists at ``path`` (it may still be unreadable or not a vault).
    public var exists: Bool { VaultFile.exists(path) }

    /// The Argon2id parameters of the open vault.
    public var kdfParameters: Argon2id.Parameters? { state.withLock { $0.open?.header.parameters } }

    /// The open vault's generation: 1 when created, one more on every write.
    public var generation: UInt64? { state.withLock { $0.open?.header.generation } }

    // MARK: Open, create, close

    /// Opens (unlocks) the vault with `passphrase`, creating an empty one first if none exists at ``path``
    /// (the tutorials' behaviour). Use ``open(with:createIfMissing:)`` with `false` to refuse instead.
    ///
    /// - Throws: ``VaultError/wrongPassphrase(path:)`` for a wrong passphrase or a tampered file;
    ///   ``VaultError/corrupt(path:reason:)``, ``VaultError/kdfParametersOutOfRange(path:opsLimit:memLimitBytes:)``,
    ///   ``VaultError/unsupportedVersion(path:version:)`` for files it refuses before the KDF runs;
    ///   ``VaultError/unsafePermissions(path:reason:hint:)`` for a loose, foreign or symlinked file.
    public func open(with passphrase: SecureBytes) throws {
        try open(with: passphrase, createIfMissing: true)
    }

    /// Opens the vault with a passphrase given as a `String` (the tutorials' signature).
    /// Prefer ``open(with:)-(SecureBytes)``: a `String` cannot be wiped from memory.
    public func open(with passphrase: String) throws {
        try open(with: SecureBytes(string: passphrase))
    }

    /// Opens the vault; when none exists, creates one if `createIfMissing`, else throws ``VaultError/vaultNotFound(path:)``.
    public func open(with passphrase: SecureBytes, createIfMissing: Bool) throws {
        let opened: OpenState
        if let bytes = try VaultFile.read(path: path) {
            opened = try unlock(bytes, passphrase: passphrase)
        } else {
            guard createIfMissing else { throw VaultError.vaultNotFound(path: path) }
            do {
                opened = try createNew(passphrase: passphrase, parameters: options.kdfParametersForNewVaults)
            } catch VaultError.vaultAlreadyExists {
                // Another process created it between our read and our lock: open theirs.
                guard let bytes = try VaultFile.read(path: path) else { throw VaultError.vaultNotFound(path: path) }
                opened = try unlock(bytes, passphrase: passphrase)
            }
        }
        state.withLock { $0.open = opened }
    }

    /// Creates a new, empty vault at ``path`` and leaves it open.
    ///
    /// - Parameter parameters: Argon2id cost; default ``Options/kdfParametersForNewVaults``.
    /// - Throws: ``VaultError/vaultAlreadyExists(path:)`` if a file is already there.
    public func create(with passphrase: SecureBytes, parameters: Argon2id.Parameters? = nil) throws {
        let created = try createNew(passphrase: passphrase, parameters: parameters ?? options.kdfParametersForNewVaults)
        state.withLock { $0.open = created }
    }

    /// Closes the store: drops the data key and all decrypted values (their memory is zeroed).
    public func close() {
        state.withLock {
            $0.open = nil
            $0.regions = RegionPool()
        }
    }

    /// Creates the file. The data key is wrapped (Argon2id) before the lock is taken.
    private func createNew(passphrase: SecureBytes, parameters: Argon2id.Parameters) throws -> OpenState {
        guard options.kdfPolicy.accepts(parameters) else {
            throw VaultError.kdfParametersOutOfRange(
                path: path, opsLimit: parameters.opsLimit, memLimitBytes: parameters.memLimitBytes)
        }
        try sodium { try Sodium.ensureInitialized() }
        try VaultFile.createDirectory(for: path)
        let dataKey = SecureBytes.random(count: VaultFormat.dataKeyByteCount)
        let header = try VaultEnvelope.wrap(dataKey, passphrase: passphrase, parameters: parameters, generation: 1)
        let contents = VaultContents.empty(headerHash: VaultEnvelope.hash(header))
        let lock = try VaultLock(vaultPath: path, timeoutSeconds: options.lockTimeoutSeconds)
        defer { lock.release() }
        if VaultFile.exists(path) { throw VaultError.vaultAlreadyExists(path: path) }
        return try write(header: header, contents: contents, dataKey: dataKey)
    }

    /// Parses, derives, unwraps and decrypts a vault file.
    private func unlock(_ file: [UInt8], passphrase: SecureBytes) throws -> OpenState {
        let header = try VaultEnvelope.parseHeader(file, path: path, policy: options.kdfPolicy)
        let dataKey = try VaultEnvelope.unwrapDataKey(of: header, passphrase: passphrase, path: path)
        return try decrypt(file, header: header, dataKey: dataKey)
    }

    /// Decrypts `file` with `dataKey`, then checks it against the rollback record (``checkRollback``).
    private func decrypt(_ file: [UInt8], header: VaultFormat.Header, dataKey: SecureBytes) throws -> OpenState {
        var file = file
        var header = header
        var retries = 3
        while true {
            let contents = try VaultEnvelope.openBody(file, dataKey: dataKey, path: path)
            let opened = OpenState(
                dataKey: dataKey, header: header, fileIdentity: Array(file[0..<VaultEnvelope.bodyStart]),
                contents: contents)
            guard let newer = try checkRollback(opened, file: file, retries: &retries) else { return opened }
            (file, header) = newer
        }
    }

    /// Checks `opened` against the rollback record. Returns a newer file to decrypt instead when a writer
    /// replaced the file (and raised the record) since it was read; throws when it is a rollback.
    private func checkRollback(
        _ opened: OpenState, file: [UInt8], retries: inout Int
    ) throws -> ([UInt8], VaultFormat.Header)? {
        guard let protection = options.rollbackProtection else { return nil }
        do {
            try RollbackGuard.checkAndRecord(
                path: path, generation: opened.header.generation, dataKey: opened.dataKey, protection: protection,
                accept: options.acceptRollback)
            return nil
        } catch VaultError.rollbackDetected(let path, let seen, let fileGeneration) where retries > 0 {
            retries -= 1
            let error = VaultError.rollbackDetected(path: path, seenGeneration: seen, fileGeneration: fileGeneration)
            guard let again = try VaultFile.read(path: path), again != file else { throw error }
            return (again, try VaultEnvelope.parseHeader(again, path: path, policy: options.kdfPolicy))
        }
    }

    /// Seals `contents` under `dataKey` behind `header` and replaces the file. The caller holds the lock.
    private func write(header: VaultFormat.Header, contents: VaultContents, dataKey: SecureBytes) throws -> OpenState {
        let file = try VaultEnvelope.seal(header: header, plaintext: contents.plaintext, dataKey: dataKey)
        try VaultFile.writeAtomically(file, to: path)
        if let protection = options.rollbackProtection {
            RollbackGuard.record(path: path, generation: header.generation, dataKey: dataKey, protection: protection)
        }
        return OpenState(
            dataKey: dataKey, header: header, fileIdentity: Array(file[0..<VaultEnvelope.bodyStart]),
            contents: contents)
    }

    /// The open state brought up to date with the file on disk: another process may have written since we
    /// read it. Costs one read of the file; decrypts only if the file changed (no KDF: the data key survives
    /// a passphrase change, so the body of a file another process wrote opens with the key we hold, while
    /// a file from a different vault does not).
    private func refreshed(_ current: OpenState) throws -> OpenState {
        // Only the first bytes are read when they show the file is the one we hold.
        let identity = current.fileIdentity
        let file: [UInt8]
        switch try VaultFile.read(path: path, unlessItStartsWith: identity) {
        case .missing: throw VaultError.vaultNotFound(path: path)
        case .unchanged: return current
        case .contents(let bytes): file = bytes
        }
        if file.count >= identity.count && file[0..<identity.count].elementsEqual(identity) { return current }
        let header = try VaultEnvelope.parseHeader(file, path: path, policy: options.kdfPolicy)
        return try decrypt(file, header: header, dataKey: current.dataKey)
    }

    /// Runs `body` with the up-to-date open state under the vault's lock (the file's and this object's), and
    /// keeps what `body` returns; the plaintext it replaced is zeroed and kept for the next write.
    private func modify(_ body: (OpenState, inout RegionPool) throws -> OpenState) throws {
        try state.withLock { (state) throws in
            var replaced = try modifyLocked(&state, body)
            state.regions.keep(replaced.take())
        }
    }

    /// Returns the plaintext that the new state replaced, if any (once nothing else holds it, it can be reused).
    private func modifyLocked(
        _ state: inout State, _ body: (OpenState, inout RegionPool) throws -> OpenState
    ) throws -> SecureBytes? {
        guard let current = state.open else { throw VaultError.notOpen }
        let lock = try VaultLock(vaultPath: path, timeoutSeconds: options.lockTimeoutSeconds)
        defer { lock.release() }
        let fresh = try refreshed(current)
        let next = try body(fresh, &state.regions)
        state.open = next
        return fresh.contents.plaintext === next.contents.plaintext ? nil : fresh.contents.plaintext
    }

    /// `current` with `changes` applied, written as the next generation. The caller holds the lock.
    private func next(_ current: OpenState, applying changes: Changes, regions: inout RegionPool) throws -> OpenState {
        var list = changes.list
        if changes.removesAll {
            list = current.contents.order.map { ($0, VaultContents.Change.remove) } + list
        }
        var header = current.header
        header.generation += 1
        return try rewrite(current, as: header, applying: list, values: changes.values, regions: &regions)
    }

    /// `current` under `header` with `list` applied (values in `values`), written. The caller holds the lock.
    private func rewrite(
        _ current: OpenState, as header: VaultFormat.Header, applying list: [(name: String, change: VaultContents.Change)],
        values: GuardedArena?, regions: inout RegionPool
    ) throws -> OpenState {
        let contents = try (values ?? GuardedArena()).withUnsafeBytes { values in
            try current.contents.applying(
                list, values: values, headerHash: VaultEnvelope.hash(header), now: Self.nowMilliseconds(),
                path: path, reusing: &regions.spare)
        }
        return try write(header: header, contents: contents, dataKey: current.dataKey)
    }

    private static func nowMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }

    /// Re-reads the vault file so that reads see what other processes wrote since this store opened it or
    /// last wrote (writes always start from the file on disk). No KDF runs.
    public func reload() throws {
        try state.withLock { (state) throws in
            guard let current = state.open else { throw VaultError.notOpen }
            state.open = try refreshed(current)
        }
    }

    // MARK: Writing entries

    /// Makes several puts and removes in one atomic, durable write.
    ///
    /// ```swift
    /// try store.update { changes in
    ///     try changes.put(user, forKey: "username")
    ///     try changes.put(password, forKey: "password")
    /// }
    /// ```
    public func update(_ body: (inout Changes) throws -> Void) throws {
        var changes = Changes(values: state.withLock { $0.regions.takeArena() })
        defer {
            var arena: GuardedArena? = changes.detachValues()
            state.withLock { $0.regions.keep(arena.take()) }
        }
        try body(&changes)
        try write(changes)
    }

    /// Writes a batch made elsewhere (``Changes/init()``) in one atomic, durable write.
    public func write(_ changes: Changes) throws {
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

    /// Removes the entry under `key`. Returns whether there was one (in the file as it is under the lock,
    /// whatever this store read before); removing a missing key writes nothing.
    @discardableResult
    public func remove(_ key: String) throws -> Bool {
        var existed = false
        try modify { current, regions in
            guard current.contents.entries[key] != nil else { return current }
            existed = true
            var changes = Changes()
            changes.remove(key)
            return try next(current, applying: changes, regions: &regions)
        }
        return existed
    }

    /// Removes every entry, including those other processes added since this store read the file (the vault
    /// and its passphrase stay).
    public func removeAll() throws {
        var changes = Changes()
        changes.removeAll()
        try write(changes)
    }

    /// Re-wraps the data key under a key derived from `newPassphrase` with a new salt, in one atomic write.
    ///
    /// Entries are not re-encrypted under a new key (the data key stays); the body is sealed again with a
    /// fresh nonce because it is bound to the header. The old passphrase stops working at once. Argon2id runs
    /// before the vault's lock is taken, so other writers do not wait for it.
    ///
    /// - Parameter parameters: new Argon2id parameters, or `nil` to keep the vault's.
    public func changePassphrase(to newPassphrase: SecureBytes, parameters: Argon2id.Parameters? = nil) throws {
        if let parameters, !options.kdfPolicy.accepts(parameters) {
            throw VaultError.kdfParametersOutOfRange(
                path: path, opsLimit: parameters.opsLimit, memLimitBytes: parameters.memLimitBytes)
        }
        guard let held = state.withLock({ $0.open }) else { throw VaultError.notOpen }
        // The data key never changes, so a key wrapped now is still right for the file found under the lock.
        let wrapped = try VaultEnvelope.wrap(
            held.dataKey, passphrase: newPassphrase, parameters: parameters ?? held.header.parameters,
            generation: held.header.generation + 1)
        try modify { current, regions in
            var header = wrapped
            header.generation = current.header.generation + 1
            return try rewrite(current, as: header, applying: [], values: nil, regions: &regions)
        }
    }

    /// ``changePassphrase(to:parameters:)`` under the tutorials' name (it changes the passphrase; the data
    /// key that encrypts the entries stays).
    public func changeEncryptionKey(with newPassphrase: SecureBytes, parameters: Argon2id.Parameters? = nil) throws {
        try changePassphrase(to: newPassphrase, parameters: parameters)
    }

    /// ``changePassphrase(to:parameters:)`` with a `String` (the tutorials' signature).
    public func changeEncryptionKey(with newPassphrase: String) throws {
        try changePassphrase(to: SecureBytes(string: newPassphrase))
    }

    // MARK: Reading entries

    private func read<R>(_ body: (VaultContents) throws -> R) throws -> R {
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

    /// The value under `key` as `Data`, or `nil`. The copy is ordinary memory.
    public func getData(_ key: String) throws -> Data? {
        try read { contents in contents.withValue(key) { Data($0) } }
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

    /// The names of all entries, sorted.
    public func keys() throws -> [String] {
        try read { $0.order.sorted() }
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

    /// Checks an entry name: 1 to 4,096 bytes of UTF-8, no control characters.
    public static func validate(key: String) throws {
        let byteCount = key.utf8.count
        guard byteCount > 0 else { throw VaultError.invalidEntryName(reason: "the name is empty") }
        guard byteCount <= VaultFormat.maximumNameByteCount else {
            throw VaultError.invalidEntryName(reason: "the name is longer than \(VaultFormat.maximumNameByteCount) bytes")
        }
        guard !key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw VaultError.invalidEntryName(reason: "the name contains a control character")
        }
    }
}

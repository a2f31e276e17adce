import Foundation

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
/// `docs/FORMAT.md` specifies the file. All methods are thread-safe.
///
/// ```swift
/// let store = SecureKeyValueStore(path: "/home/me/.local/share/vault/app.vault")
/// try store.open(with: passphrase)          // creates the vault if there is none
/// try store.put("alice", forKey: "username")
/// let user = try store.getString("username")  // "alice"
/// store.close()                             // zeroes all key material
/// ```
public final class SecureKeyValueStore: @unchecked Sendable {
    /// How the store treats new vaults, KDF parameters and the lock.
    public struct Options: Sendable {
        /// The Argon2id parameters of vaults this store creates. Default ``Argon2id/Parameters/moderate``.
        public var kdfParametersForNewVaults: Argon2id.Parameters
        /// Which parameters a vault may ask for when opened.
        public var kdfPolicy: Argon2id.KDFPolicy
        /// How long a writer waits for another process's lock before failing with ``VaultError/busy(path:timeoutSeconds:)``.
        public var lockTimeoutSeconds: Double
        /// Rollback protection: where to remember the highest generation seen of each vault, so that an older
        /// copy put back is refused with ``VaultError/rollbackDetected(path:seenGeneration:fileGeneration:)``.
        /// `nil` (the library's default) turns it off; the `vault` CLI uses ``RollbackProtection/standard``.
        public var rollbackProtection: RollbackProtection? = nil
        /// Opens a vault older than the recorded generation anyway, and lowers the record (a restored backup).
        public var acceptRollback = false

        /// - Parameter allowInsecureKDFForTesting: the explicit test hook: accept and create vaults with
        ///   libsodium's minimum Argon2id cost. Never set it outside tests.
        public init(
            kdfParametersForNewVaults: Argon2id.Parameters = .moderate,
            allowInsecureKDFForTesting: Bool = false,
            lockTimeoutSeconds: Double = 10
        ) {
            self.kdfParametersForNewVaults = kdfParametersForNewVaults
            self.kdfPolicy = allowInsecureKDFForTesting ? .insecureForTesting : .standard
            self.lockTimeoutSeconds = lockTimeoutSeconds
        }

        /// Cheap Argon2id for tests: creates and opens vaults with ``Argon2id/Parameters/insecureForTesting``.
        public static let insecureForTesting = Options(
            kdfParametersForNewVaults: .insecureForTesting, allowInsecureKDFForTesting: true)
    }

    /// A batch of puts and removes written in one atomic replacement of the file.
    ///
    /// The values are copied into one growable guarded region as they are added, so a batch may hold any
    /// number of entries (one guarded mapping per value would hit the kernel's limit on mappings).
    public struct Changes {
        var list: [(name: String, change: VaultContents.Change)] = []
        /// The values of the puts in `list`; a copy of the batch shares it (it is only appended to).
        var values: GuardedArena
        var removesAll = false

        init(values: GuardedArena = GuardedArena()) {
            self.values = values
        }

        public mutating func put(_ value: SecureBytes, forKey key: String) throws {
            try value.withUnsafeBytes { try put(bytes: $0, forKey: key) }
        }

        public mutating func put(_ value: String, forKey key: String) throws {
            var value = value
            try value.withUTF8 { try put(bytes: UnsafeRawBufferPointer($0), forKey: key) }
        }

        private mutating func put(bytes: UnsafeRawBufferPointer, forKey key: String) throws {
            try SecureKeyValueStore.validate(key: key)
            guard bytes.count <= VaultFormat.maximumValueByteCount else {
                throw VaultError.valueTooLarge(key: key, byteCount: bytes.count)
            }
            list.append((key, .put(values.append(bytes))))
        }

        public mutating func remove(_ key: String) {
            list.append((key, .remove))
        }

        /// Removes every entry in the file as it is when the batch is written (then applies the rest).
        public mutating func removeAll() {
            list.removeAll()
            removesAll = true
        }
    }

    /// Creation and modification times of an entry.
    public struct EntryAttributes: Sendable, Equatable {
        public var created: Date
        public var modified: Date
        public var byteCount: Int
    }

    /// The vault file's path.
    public let path: String
    public let options: Options

    private struct OpenState {
        var dataKey: SecureBytes
        var header: VaultFormat.Header
        /// The first bytes of the file as last read or written (header and body nonce): if the file on disk
        /// still starts with them, it is the file we hold (the body nonce is fresh on every write).
        var fileIdentity: [UInt8]
        var contents: VaultContents
    }

    private let mutex = NSLock()
    private var state: OpenState?
    /// The zeroed region of the plaintext the last write replaced, for the next write to reuse.
    private var spare: SecureBytes?
    /// The wiped region of the last batch's values, for the next batch.
    private var spareArena: GuardedArena?

    /// A store for the vault file at `path`. Nothing is read until ``open(with:)-(SecureBytes)``.
    public init(path: String, options: Options = Options()) {
        self.path = path
        self.options = options
    }

    /// A store for `databaseFileName` in ``defaultDirectory``, like the tutorials' `SecureKeyValueStore(databaseFileName:)`.
    ///
    /// - Throws: ``VaultError/invalidKey(reason:)`` if the name contains `/` or is empty or `.`/`..`.
    public convenience init(databaseFileName: String, options: Options = Options()) throws {
        guard !databaseFileName.isEmpty, !databaseFileName.contains("/"), databaseFileName != ".",
            databaseFileName != ".."
        else { throw VaultError.invalidKey(reason: "database file name must be a plain file name") }
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
    public var isOpen: Bool { mutex.withLock { state != nil } }

    /// Whether a file exists at ``path`` (it may still be unreadable or not a vault).
    public var exists: Bool { VaultFile.exists(path) }

    /// The Argon2id parameters of the open vault.
    public var kdfParameters: Argon2id.Parameters? { mutex.withLock { state?.header.parameters } }

    /// The open vault's generation: 1 when created, one more on every write.
    public var generation: UInt64? { mutex.withLock { state?.header.generation } }

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
        try mutex.withLock { () throws in
            if let bytes = try VaultFile.read(path: path) {
                state = try unlock(bytes, passphrase: passphrase)
                return
            }
            guard createIfMissing else { throw VaultError.vaultNotFound(path: path) }
            do {
                state = try createLocked(passphrase: passphrase, parameters: options.kdfParametersForNewVaults)
            } catch VaultError.vaultAlreadyExists {
                // Another process created it between our read and our lock: open theirs.
                guard let bytes = try VaultFile.read(path: path) else { throw VaultError.vaultNotFound(path: path) }
                state = try unlock(bytes, passphrase: passphrase)
            }
        }
    }

    /// Creates a new, empty vault at ``path`` and leaves it open.
    ///
    /// - Parameter parameters: Argon2id cost; default ``Options/kdfParametersForNewVaults``.
    /// - Throws: ``VaultError/vaultAlreadyExists(path:)`` if a file is already there.
    public func create(with passphrase: SecureBytes, parameters: Argon2id.Parameters? = nil) throws {
        try mutex.withLock { () throws in
            state = try createLocked(
                passphrase: passphrase, parameters: parameters ?? options.kdfParametersForNewVaults)
        }
    }

    /// Closes the store: drops the data key and all decrypted values (their memory is zeroed).
    public func close() {
        mutex.withLock {
            state = nil
            spare = nil
            spareArena = nil
        }
    }

    private func createLocked(
        passphrase: SecureBytes, parameters: Argon2id.Parameters
    ) throws -> OpenState {
        guard options.kdfPolicy.accepts(parameters) else {
            throw VaultError.kdfParametersOutOfRange(
                path: path, opsLimit: parameters.opsLimit, memLimitBytes: parameters.memLimitBytes)
        }
        try Sodium.ensureInitialized()
        try VaultFile.createDirectory(for: path)
        let lock = try VaultLock(vaultPath: path, timeoutSeconds: options.lockTimeoutSeconds)
        defer { lock.release() }
        if VaultFile.exists(path) { throw VaultError.vaultAlreadyExists(path: path) }
        let dataKey = SecureBytes.random(count: VaultFormat.dataKeyByteCount)
        let header = try wrap(dataKey, passphrase: passphrase, parameters: parameters, generation: 1)
        let hash = Self.hash(header)
        let contents = VaultContents.empty(headerHash: hash)
        return try write(header: header, contents: contents, dataKey: dataKey)
    }

    /// Derives the key-encryption key with a fresh salt and wraps `dataKey` under it.
    private func wrap(
        _ dataKey: SecureBytes, passphrase: SecureBytes, parameters: Argon2id.Parameters, generation: UInt64
    ) throws -> VaultFormat.Header {
        let salt = Sodium.randomBytes(count: Argon2id.saltByteCount)
        let kek = try Argon2id.deriveKey(from: passphrase, salt: salt, parameters: parameters)
        let keyNonce = Sodium.randomBytes(count: VaultFormat.nonceByteCount)
        var wrapped = [UInt8](repeating: 0, count: VaultFormat.wrappedKeyByteCount)
        try wrapped.withUnsafeMutableBytes { (out) throws in
            try dataKey.withUnsafeBytes { (key) throws in
                try kek.withUnsafeBytes { (kekBytes) throws in
                    try keyNonce.withUnsafeBytes { (nonce) throws in
                        try Sodium.secretBoxSeal(key, nonce: nonce, key: kekBytes, into: out)
                    }
                }
            }
        }
        return VaultFormat.Header(
            parameters: parameters, salt: salt, generation: generation, keyNonce: keyNonce, wrappedKey: wrapped)
    }

    /// Parses, derives, unwraps and decrypts a vault file.
    private func unlock(_ file: [UInt8], passphrase: SecureBytes) throws -> OpenState {
        let header = try file.withUnsafeBytes { (bytes) throws in
            try VaultFormat.Header.parse(bytes, path: path, policy: options.kdfPolicy)
        }
        let kek = try Argon2id.deriveKey(from: passphrase, salt: header.salt, parameters: header.parameters)
        let dataKey = try SecureBytes(count: VaultFormat.dataKeyByteCount) { (out) throws in
            let ok = header.wrappedKey.withUnsafeBytes { wrapped in
                kek.withUnsafeBytes { kekBytes in
                    header.keyNonce.withUnsafeBytes { nonce in
                        Sodium.secretBoxOpen(wrapped, nonce: nonce, key: kekBytes, into: out)
                    }
                }
            }
            guard ok else { throw VaultError.wrongPassphrase(path: path) }
        }
        return try decryptBody(file, header: header, dataKey: dataKey)
    }

    /// Decrypts the body of `file` (whose header is `header`) with `dataKey` and checks the binding to the header.
    private func decryptBody(
        _ file: [UInt8], header: VaultFormat.Header, dataKey: SecureBytes, rollbackRetries: Int = 3
    ) throws -> OpenState {
        let bodyStart = VaultFormat.headerByteCount + VaultFormat.nonceByteCount
        let plaintext = try file.withUnsafeBytes { (bytes) throws in
            let nonce = UnsafeRawBufferPointer(rebasing: bytes[VaultFormat.headerByteCount..<bodyStart])
            let box = UnsafeRawBufferPointer(rebasing: bytes[bodyStart...])
            return try SecureBytes(count: box.count - VaultFormat.macByteCount) { (out) throws in
                let ok = dataKey.withUnsafeBytes { key in Sodium.secretBoxOpen(box, nonce: nonce, key: key, into: out) }
                guard ok else { throw VaultError.wrongPassphrase(path: path) }
            }
        }
        let hash = file.withUnsafeBytes { Sodium.blake2b256(UnsafeRawBufferPointer(rebasing: $0[0..<VaultFormat.headerByteCount])) }
        let contents = try VaultContents(plaintext: plaintext, headerHash: hash, path: path)
        if let protection = options.rollbackProtection {
            do {
                try RollbackGuard.checkAndRecord(
                    path: path, generation: header.generation, dataKey: dataKey, protection: protection,
                    accept: options.acceptRollback)
            } catch let error as VaultError where rollbackRetries > 0 {
                // A writer may have replaced the file and raised the record since we read it: if the file on
                // disk changed, decrypt the new one (same data key) and check again; if not, it is a rollback.
                guard case .rollbackDetected = error, let again = try VaultFile.read(path: path), again != file
                else { throw error }
                let newHeader = try again.withUnsafeBytes { (bytes) throws in
                    try VaultFormat.Header.parse(bytes, path: path, policy: options.kdfPolicy)
                }
                return try decryptBody(again, header: newHeader, dataKey: dataKey, rollbackRetries: rollbackRetries - 1)
            }
        }
        return OpenState(
            dataKey: dataKey, header: header, fileIdentity: Array(file[0..<bodyStart]), contents: contents)
    }

    /// Seals `contents` under `dataKey` behind `header` and replaces the file. The caller holds the lock.
    private func write(
        header: VaultFormat.Header, contents: VaultContents, dataKey: SecureBytes
    ) throws -> OpenState {
        // Header, fresh body nonce, then the box sealed in place: one allocation, no zero-fill, no copy.
        let encodedHeader = header.encoded()
        let bodyStart = VaultFormat.headerByteCount + VaultFormat.nonceByteCount
        let fileCount = bodyStart + contents.plaintext.count + VaultFormat.macByteCount
        let file = try [UInt8](unsafeUninitializedCapacity: fileCount) { (buffer, initialized) throws in
            let bytes = UnsafeMutableRawBufferPointer(buffer)
            encodedHeader.withUnsafeBytes { bytes.copyMemory(from: $0) }
            let nonce = UnsafeMutableRawBufferPointer(rebasing: bytes[VaultFormat.headerByteCount..<bodyStart])
            Sodium.fillRandom(nonce)
            let out = UnsafeMutableRawBufferPointer(rebasing: bytes[bodyStart...])
            try contents.plaintext.withUnsafeBytes { (plaintext) throws in
                try dataKey.withUnsafeBytes { (key) throws in
                    try Sodium.secretBoxSeal(plaintext, nonce: UnsafeRawBufferPointer(nonce), key: key, into: out)
                }
            }
            initialized = fileCount
        }
        try VaultFile.writeAtomically(file, to: path)
        if let protection = options.rollbackProtection {
            RollbackGuard.record(path: path, generation: header.generation, dataKey: dataKey, protection: protection)
        }
        return OpenState(
            dataKey: dataKey, header: header, fileIdentity: Array(file[0..<bodyStart]), contents: contents)
    }

    private static func hash(_ header: VaultFormat.Header) -> [UInt8] {
        header.encoded().withUnsafeBytes { Sodium.blake2b256($0) }
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
        let header = try file.withUnsafeBytes { (bytes) throws in
            try VaultFormat.Header.parse(bytes, path: path, policy: options.kdfPolicy)
        }
        return try decryptBody(file, header: header, dataKey: current.dataKey)
    }

    /// Runs `body` with the up-to-date open state under the vault's lock, and keeps what `body` returns.
    private func modify(_ body: (OpenState) throws -> OpenState) throws {
        try mutex.withLock { () throws in
            keepAsSpare(try modifyLocked(body))
        }
    }

    /// Returns the plaintext that the new state replaced, if any.
    private func modifyLocked(_ body: (OpenState) throws -> OpenState) throws -> SecureBytes? {
        guard let current = state else { throw VaultError.notOpen }
        let lock = try VaultLock(vaultPath: path, timeoutSeconds: options.lockTimeoutSeconds)
        defer { lock.release() }
        let fresh = try refreshed(current)
        let next = try body(fresh)
        state = next
        return fresh.contents.plaintext === next.contents.plaintext ? nil : fresh.contents.plaintext
    }

    /// Zeroes a replaced plaintext region and keeps it for the next write, when nothing else holds it.
    private func keepAsSpare(_ replaced: consuming SecureBytes?) {
        guard var region = replaced.take(), isKnownUniquelyReferenced(&region) else { return }
        region.wipe()
        spare = region
    }

    /// Writes `current` with `changes` applied as the next generation. The caller holds the lock.
    private func next(_ current: OpenState, applying changes: Changes) throws -> OpenState {
        var list = changes.list
        if changes.removesAll {
            list = current.contents.order.map { ($0, VaultContents.Change.remove) } + list
        }
        var header = current.header
        header.generation += 1
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        let contents = try changes.values.withUnsafeBytes { values in
            try current.contents.applying(
                list, values: values, headerHash: Self.hash(header), now: now, path: path, reusing: &spare)
        }
        return try write(header: header, contents: contents, dataKey: current.dataKey)
    }

    private func apply(_ changes: Changes) throws {
        try modify { try next($0, applying: changes) }
    }

    /// Re-reads the vault file so that reads see what other processes wrote since this store opened it or
    /// last wrote (writes always start from the file on disk). No KDF runs.
    public func reload() throws {
        try mutex.withLock { () throws in
            guard let current = state else { throw VaultError.notOpen }
            state = try refreshed(current)
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
        var changes = Changes(values: mutex.withLock { spareArena.take() } ?? GuardedArena())
        defer { keepArena(of: &changes) }
        try body(&changes)
        try apply(changes)
    }

    /// Wipes the values of a written (or failed) batch and keeps their region for the next batch, unless a
    /// copy of the batch still holds it.
    private func keepArena(of changes: inout Changes) {
        var arena = GuardedArena()
        swap(&arena, &changes.values)
        guard isKnownUniquelyReferenced(&arena) else { return }
        arena.wipe()
        mutex.withLock { spareArena = arena }
    }

    /// Stores secret bytes under `key`, replacing any previous value. One durable write.
    public func put(_ value: SecureBytes, forKey key: String) throws {
        try update { try $0.put(value, forKey: key) }
    }

    /// Stores the UTF-8 bytes of `value` under `key`.
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

    /// Stores `value` under `key` as JSON (read it back with ``get(_:as:)``).
    ///
    /// The encoder's output passes through an ordinary `Data` before it reaches guarded memory.
    public func put<T: Encodable>(_ value: T, forKey key: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try put(SecureBytes(try encoder.encode(value)), forKey: key)
    }

    /// Removes the entry under `key`. Returns whether there was one (in the file as it is under the lock,
    /// whatever this store read before); removing a missing key writes nothing.
    @discardableResult
    public func remove(_ key: String) throws -> Bool {
        var existed = false
        try modify { current in
            guard current.contents.entries[key] != nil else { return current }
            existed = true
            var changes = Changes()
            changes.remove(key)
            return try next(current, applying: changes)
        }
        return existed
    }

    /// Removes every entry, including those other processes added since this store read the file (the vault
    /// and its passphrase stay).
    public func removeAll() throws {
        var changes = Changes()
        changes.removeAll()
        try apply(changes)
    }

    /// Re-wraps the data key under a key derived from `newPassphrase` with a new salt, in one atomic write.
    ///
    /// Entries are not re-encrypted under a new key (the data key stays); the body is sealed again with a
    /// fresh nonce because it is bound to the header. The old passphrase stops working at once.
    ///
    /// - Parameter parameters: new Argon2id parameters, or `nil` to keep the vault's.
    public func changeEncryptionKey(
        with newPassphrase: SecureBytes, parameters: Argon2id.Parameters? = nil
    ) throws {
        if let parameters, !options.kdfPolicy.accepts(parameters) {
            throw VaultError.kdfParametersOutOfRange(
                path: path, opsLimit: parameters.opsLimit, memLimitBytes: parameters.memLimitBytes)
        }
        try modify { (current) throws in
            let header = try wrap(
                current.dataKey, passphrase: newPassphrase,
                parameters: parameters ?? current.header.parameters, generation: current.header.generation + 1)
            let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
            let contents = try current.contents.applying(
                [], values: UnsafeRawBufferPointer(start: nil, count: 0), headerHash: Self.hash(header), now: now,
                path: path, reusing: &spare)
            return try write(header: header, contents: contents, dataKey: current.dataKey)
        }
    }

    /// ``changeEncryptionKey(with:parameters:)-(SecureBytes,_)`` with a `String` (the tutorials' signature).
    public func changeEncryptionKey(with newPassphrase: String) throws {
        try changeEncryptionKey(with: SecureBytes(string: newPassphrase))
    }

    // MARK: Reading entries

    private func read<R>(_ body: (VaultContents) throws -> R) throws -> R {
        try mutex.withLock { () throws in
            guard let state else { throw VaultError.notOpen }
            return try body(state.contents)
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
    public func get<T: Decodable>(_ key: String, as type: T.Type) throws -> T? {
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
        guard byteCount > 0 else { throw VaultError.invalidKey(reason: "the name is empty") }
        guard byteCount <= VaultFormat.maximumNameByteCount else {
            throw VaultError.invalidKey(reason: "the name is longer than \(VaultFormat.maximumNameByteCount) bytes")
        }
        guard !key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw VaultError.invalidKey(reason: "the name contains a control character")
        }
    }
}

extension SecureKeyValueStore {
    /// What a vault's header says, read without the passphrase (nothing of it is authenticated yet).
    public struct HeaderInfo: Sendable, Equatable {
        public var formatVersion: Int
        public var kdfParameters: Argon2id.Parameters
        public var generation: UInt64
        public var fileByteCount: Int
    }

    /// Reads the header of the vault at ``path`` with the same checks as ``open(with:)-(SecureBytes)``
    /// before its KDF (permissions, magic, version, KDF range), without a passphrase.
    public func inspect() throws -> HeaderInfo {
        guard let file = try VaultFile.read(path: path) else { throw VaultError.vaultNotFound(path: path) }
        let header = try file.withUnsafeBytes { try VaultFormat.Header.parse($0, path: path, policy: options.kdfPolicy) }
        return HeaderInfo(
            formatVersion: Int(VaultFormat.version), kdfParameters: header.parameters,
            generation: header.generation, fileByteCount: file.count)
    }
}

import FoundationEssentials
import Synchronization
import VaultSodium
#if canImport(Glibc)
import Glibc
#endif

/// A vault file of format version 1, unlocked with a passphrase: what ``SecureKeyValueStore`` (the front door) and
/// ``VaultOpener`` open a version-1 file with, and what `vault init --format 1` makes.
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
/// `docs/FORMAT.md` specifies the file ("Version 1"). All methods are thread-safe, and all of them block (see
/// ``SecureKeyValueStore``). Writes keep the file at version 1 (``VaultUpgrade`` converts it).
package final class FormatOneStore: Sendable {
    /// The vault file's path.
    public let path: String
    public let options: VaultStoreOptions

    /// Everything that changes, behind one lock (held across file I/O: readers in this process wait for a
    /// write's `fsync`, which keeps every reader's view a file that was on disk).
    let state = Mutex(State())

    struct State: ~Copyable, Sendable {
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
        /// The names sorted, once asked for (``keys()``); a new state (a write, a file another process
        /// wrote) starts without.
        var sortedNames: [String]? = nil
    }

    /// A store for the vault file at `path`. Nothing is read until ``open(with:)-(SecureBytes)``.
    public init(path: String, options: VaultStoreOptions = VaultStoreOptions()) {
        self.path = path
        self.options = options
    }

    /// Whether the store is open (unlocked).
    public var isOpen: Bool { state.withLock { $0.open != nil } }

    /// Whether a file exists at ``path`` (it may still be unreadable or not a vault).
    public var exists: Bool { VaultFile.exists(path) }

    /// Checks, without a passphrase, what ``open(with:createIfMissing:)`` checks of the file system: the directory
    /// (real, ours or root's, writable by no one else) and the vault file (a regular file of ours, no access for
    /// group or others). For callers that ask for a passphrase: a file that would be refused is refused before
    /// anyone types one or waits for the KDF.
    ///
    /// - Throws: ``VaultError/unsafePermissions(path:reason:hint:)``, ``VaultError/vaultNotFound(path:)``, or
    ///   ``VaultError/io(operation:path:errno:)``.
    public func checkAccess() throws {
        let directory = try VaultFile.openDirectory(of: path)
        Glibc.close(directory)
        let fd = Posix.retryingEINTR { Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { throw VaultError.vaultNotFound(path: path) }
            if code == ELOOP { throw VaultFile.symlinkError(path, what: "vault") }
            throw VaultError.io(operation: "cannot open", path: path, errno: code)
        }
        defer { Glibc.close(fd) }
        try VaultFile.checkOwnFile(fd, path: path, what: "vault")
    }

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
        } catch let error as VaultError {
            // A passphrase change that replaced the file after we read it retires our key: not an attack, but
            // the file we read is gone and the one there now needs the new passphrase.
            switch error {
            case .retiredKey, .otherVault:
                if let again = try VaultFile.read(path: path), again != file,
                    Array(again.prefix(VaultFormat.headerByteCount)) != Array(file.prefix(VaultFormat.headerByteCount))
                {
                    throw VaultError.keyChanged(path: path)
                }
            default: break
            }
            throw error
        }
    }

    /// Seals `contents` under `dataKey` behind `header` and replaces the file. The caller holds the lock.
    /// `retiring` is the data key a passphrase change replaces (the rollback record remembers it).
    private func write(
        header: VaultFormat.Header, contents: VaultContents, dataKey: SecureBytes, retiring: SecureBytes? = nil
    ) throws -> OpenState {
        guard contents.plaintext.count <= VaultFormat.maximumPlaintextByteCount else {
            throw VaultError.vaultTooLarge(
                path: path, byteCount: VaultEnvelope.bodyStart + contents.plaintext.count + VaultFormat.macByteCount)
        }
        let file = try VaultEnvelope.seal(header: header, plaintext: contents.plaintext, dataKey: dataKey)
        try VaultFile.writeAtomically(file, to: path)
        if let protection = options.rollbackProtection {
            RollbackGuard.record(
                path: path, generation: header.generation, dataKey: dataKey, retiring: retiring, protection: protection)
        }
        return OpenState(
            dataKey: dataKey, header: header, fileIdentity: Array(file[0..<VaultEnvelope.bodyStart]),
            contents: contents)
    }

    /// The open state brought up to date with the file on disk: another process may have written since we
    /// read it. Costs one read of the file; decrypts only if the file changed (no KDF: ordinary writes keep
    /// the data key, so the body of a file another process wrote opens with the key we hold). A passphrase
    /// change elsewhere replaced the data key: ``VaultError/keyChanged(path:)``.
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
        do {
            return try decrypt(file, header: header, dataKey: current.dataKey)
        } catch VaultError.wrongPassphrase where header.salt != current.header.salt {
            throw VaultError.keyChanged(path: path)
        }
    }

    /// Runs `body` with the up-to-date open state under the vault's lock (the file's and this object's), and
    /// keeps what `body` returns; the plaintext it replaced is zeroed and kept for the next write.
    func modify(_ body: (OpenState, inout RegionPool) throws -> OpenState) throws {
        try state.withLock { (state) throws in
            var replaced = try modifyLocked(&state, body)
            state.regions.keep(replaced.take())
        }
    }

    /// Returns the plaintext that the new state replaced, if any (once nothing else holds it, it can be reused).
    func modifyLocked(
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
    func next(_ current: OpenState, applying changes: VaultChanges, regions: inout RegionPool) throws -> OpenState {
        for (name, exists) in changes.requirements where (current.contents.entries[name] != nil) != exists {
            throw exists ? VaultError.noSuchEntry(key: name, path: path) : VaultError.entryExists(key: name, path: path)
        }
        var list = changes.list
        if changes.removesAll {
            list = current.contents.order.map { ($0, VaultContents.Change.remove) } + list
        }
        var header = current.header
        header.generation = try header.nextGeneration(path: path)
        return try rewrite(current, as: header, applying: list, values: changes.values, regions: &regions)
    }

    /// `current` under `header` with `list` applied (values in `values`), written. The caller holds the lock.
    /// `newDataKey` replaces the data key (a passphrase change); `header` must wrap it.
    func rewrite(
        _ current: OpenState, as header: VaultFormat.Header, applying list: [(name: String, change: VaultContents.Change)],
        values: GuardedArena?, regions: inout RegionPool, newDataKey: SecureBytes? = nil
    ) throws -> OpenState {
        let contents = try (values ?? GuardedArena()).withUnsafeBytes { values in
            try current.contents.applying(
                list, values: values, headerHash: VaultEnvelope.hash(header), now: Self.nowMilliseconds(),
                path: path, reusing: &regions.spare)
        }
        guard let newDataKey else { return try write(header: header, contents: contents, dataKey: current.dataKey) }
        return try write(header: header, contents: contents, dataKey: newDataKey, retiring: current.dataKey)
    }

    static func nowMilliseconds() -> Int64 {
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
}

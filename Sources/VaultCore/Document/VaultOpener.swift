import VaultSodium
#if canImport(Glibc)
import Glibc
#endif

/// Opens a vault file of either format version behind ``KeyValueVault``: version 1 with ``FormatOneStore``,
/// version 2 with ``DocumentVault``. The CLI and the agent open vaults through it, so every verb works on both.
public enum VaultOpener {
    /// Whether the file at `path` starts as a version-2 vault (magic and version: its first 10 bytes, read
    /// without the rest; nothing authenticated). A missing file or a symbolic link is not: the version-1 store's
    /// open then reports why, with its own checks. Any other failure to open or read it is an I/O error: taken for
    /// "not version 2", a file of version 3 would then be refused as "unsupported format version 3" (exit 6, as if
    /// corrupt) for a momentary EACCES or EIO.
    ///
    /// - Throws: ``VaultError/io(operation:path:errno:)``.
    static func startsAsVersion2(_ path: String) throws -> Bool {
        let fd = Posix.retryingEINTR { Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ELOOP { return false }
            throw VaultError.io(operation: "cannot open vault", path: path, errno: code)
        }
        defer { Glibc.close(fd) }
        var start = [UInt8](repeating: 0, count: VaultFormat.magic.count + 2)
        switch start.withUnsafeMutableBytes({ buffer in Posix.valueOrErrno { pread(fd, buffer.baseAddress, buffer.count, 0) } }) {
        case .failure(let error): throw VaultError.io(operation: "cannot read vault", path: path, errno: error.code)
        case .success(let n): return n == start.count && DocumentHeader.isVersion2(start)
        }
    }

    /// The vault at `path`, opened with `passphrase` under `options` (KDF policy, lock timeout, rollback
    /// protection). A version-2 vault writes as this user's replica of it (``ReplicaRegistry``).
    ///
    /// - Throws: ``VaultError/vaultNotFound(path:)`` and what each format's open throws.
    public static func open(path: String, passphrase: SecureBytes, options: VaultStoreOptions) throws -> any KeyValueVault {
        // Version 1, the common case, is read once, by its store; version 2's header is read here for its vault id.
        guard try startsAsVersion2(path), let bytes = try VaultFile.read(path: path), DocumentHeader.isVersion2(bytes) else {
            let store = FormatOneStore(path: path, options: options)
            try store.open(with: passphrase, createIfMissing: false)
            return store
        }
        let header = try DocumentHeader.parse(bytes, label: path, policy: options.kdfPolicy)
        return try openVersion2(path: path, vaultID: header.vaultID, passphrase: passphrase, options: options)
    }

    /// The version-2 vault at `path`, opened with the key `key` makes from its header (checked for structure and
    /// KDF bounds first): how a vault is opened with an age identity, whose unwrapping lives above this library
    /// (`VaultAge`), or with a data key.
    ///
    /// - Throws: ``VaultError/vaultNotFound(path:)``; ``VaultError/needsVersion2(path:)`` for a version-1 vault
    ///   (it has no recipients); what parsing the header, `key` and the open throw.
    public static func open(
        path: String, options: VaultStoreOptions, key: (DocumentHeader) throws -> DocumentKey
    ) throws -> DocumentVault {
        guard let bytes = try VaultFile.read(path: path) else { throw VaultError.vaultNotFound(path: path) }
        guard DocumentHeader.isVersion2(bytes) else { throw VaultError.needsVersion2(path: path) }
        let header = try DocumentHeader.parse(bytes, label: path, policy: options.kdfPolicy)
        return try openVersion2(path: path, vaultID: header.vaultID, key: try key(header), options: options)
    }

    /// The header of the version-2 vault at `path` (structure and KDF bounds checked; nothing authenticated).
    ///
    /// - Throws: ``VaultError/vaultNotFound(path:)``; ``VaultError/needsVersion2(path:)``; what parsing throws.
    public static func header(path: String, options: VaultStoreOptions) throws -> DocumentHeader {
        guard let bytes = try VaultFile.read(path: path) else { throw VaultError.vaultNotFound(path: path) }
        guard DocumentHeader.isVersion2(bytes) else { throw VaultError.needsVersion2(path: path) }
        return try DocumentHeader.parse(bytes, label: path, policy: options.kdfPolicy)
    }

    static func openVersion2(path: String, vaultID: DocumentID, passphrase: SecureBytes, options: VaultStoreOptions) throws -> DocumentVault {
        try openVersion2(path: path, vaultID: vaultID, key: .passphrase(passphrase), options: options)
    }

    static func openVersion2(path: String, vaultID: DocumentID, key: DocumentKey, options: VaultStoreOptions) throws -> DocumentVault {
        let replica = try ReplicaRegistry.replica(for: vaultID, stateDirectory: options.rollbackProtection?.stateDirectory)
        return try DocumentVault(
            path: path, key: key, replica: replica, policy: options.kdfPolicy,
            lockTimeoutSeconds: options.lockTimeoutSeconds, rollbackProtection: options.rollbackProtection,
            acceptRollback: options.acceptRollback)
    }

    /// What ``create(path:passphrase:parameters:options:)`` made.
    public struct Created: Sendable {
        public let vaultID: DocumentID
        public let parameters: Argon2id.Parameters
    }

    /// Creates a new, empty version-2 vault at `path` (its directory made 0700 when missing, the file 0600), its
    /// data key wrapped for `passphrase` with `parameters` (default: the options' parameters for new vaults), and
    /// records it in the rollback record.
    ///
    /// - Throws: ``VaultError/vaultAlreadyExists(path:)``, ``VaultError/kdfParametersOutOfRange(path:opsLimit:memLimitBytes:)``.
    public static func create(
        path: String, passphrase: SecureBytes, parameters: Argon2id.Parameters? = nil, options: VaultStoreOptions,
        formatVersion: UInt16 = DocumentFormat.currentVersion
    ) throws -> Created {
        let parameters = parameters ?? options.kdfParametersForNewVaults
        guard options.kdfPolicy.accepts(parameters) else {
            throw VaultError.kdfParametersOutOfRange(path: path, opsLimit: parameters.opsLimit, memLimitBytes: parameters.memLimitBytes)
        }
        if VaultFile.exists(path) { throw VaultError.vaultAlreadyExists(path: path) }
        let (document, dataKey) = try VaultDocument.create(
            passphrase: passphrase, parameters: parameters, label: path, formatVersion: formatVersion)
        // Named from the start: the replica that will write it, by the name its user goes by.
        let directory = options.rollbackProtection?.stateDirectory
        let replica = try ReplicaRegistry.replica(for: document.vaultID, stateDirectory: directory)
        document.setName(ReplicaRegistry.name(for: document.vaultID, stateDirectory: directory), of: replica, now: SystemWallClock().milliseconds())
        let bytes = try document.seal(dataKey: dataKey)
        let storage = LocalFileStorage(path: path, lockTimeoutSeconds: options.lockTimeoutSeconds)
        do {
            _ = try storage.replace(bytes, expecting: nil)
        } catch VaultError.storageConflict {
            throw VaultError.vaultAlreadyExists(path: path)
        }
        if let protection = options.rollbackProtection {
            RollbackGuard.record(path: path, generation: document.generation, dataKey: dataKey, retiring: nil, protection: protection)
            RollbackGuard.recordVault(
                document.vaultID, dataKeyID: document.dataKeyID, dataKey: dataKey, generation: document.generation, protection: protection)
        }
        return Created(vaultID: document.vaultID, parameters: parameters)
    }
}

/// This user's replica id for each version-2 vault: 8 random bytes made the first time, kept in the state
/// directory beside the rollback records (`<vault id>.replica`, mode 0600, directory 0700), so that every
/// machine and user writes as a replica of its own and never reissues another's timestamps.
///
/// The file also names the machine it was made on (``machine``: a hash of `/etc/machine-id` and the host name). A
/// state directory copied to another machine (a home directory restored or cloned, a container image) would make
/// two machines one replica: two different changes with one timestamp, which a merge takes for one (a version's
/// clock names its content), and a clock that no longer says what its replica has seen (docs/FORMAT.md,
/// "The tombstone horizon"). On another machine the file is replaced by a new replica id; a file of an older `vault`
/// (the id alone) is kept and given this machine's name.
public enum ReplicaRegistry {
    /// The replica id for `vaultID`; without a state directory (`nil`: no rollback protection, a test), a fresh
    /// random one. `machine`: what names this machine (``machine``; a test gives another). `renew`: a new one in
    /// place of the one stored (this replica's history forked: ``DocumentVault``'s rollback check).
    public static func replica(
        for vaultID: DocumentID, stateDirectory: String?, machine: String = machine, renew: Bool = false
    ) throws -> ReplicaID {
        guard let directory = stateDirectory else { return .random() }
        try VaultFile.createDirectory(for: directory + "/x")
        let path = directory + "/" + vaultID.description + ".replica"
        /// The stored id and the machine it names (`nil`: a file of an older `vault`, the id alone).
        func stored() -> (ReplicaID, String?)? {
            guard let bytes = try? VaultFile.read(path: path), bytes.count == 16 || bytes.count == 33,
                  let text = String(validating: bytes, as: UTF8.self), let value = UInt64(text.prefix(16), radix: 16) else { return nil }
            guard bytes.count == 33 else { return (ReplicaID(rawValue: value), nil) }
            guard text.utf8.dropFirst(16).first == UInt8(ascii: "\n") else { return nil }
            return (ReplicaID(rawValue: value), String(text.suffix(16)))
        }
        /// Writes `replica` with this machine's name to a temporary file; links it into place when `exclusive` (fails
        /// if another process got there first: theirs is used), else renames it over what is there.
        func write(_ replica: ReplicaID, exclusive: Bool) throws -> ReplicaID {
            let temporary = directory + "/." + vaultID.description + "." + ReplicaID.random().description + ".tmp"
            let fd = Posix.retryingEINTR { Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            guard fd >= 0 else { throw VaultError.io(operation: "cannot create", path: temporary, errno: errno) }
            defer { unlink(temporary) }
            let code = Array((replica.description + "\n" + machine).utf8).withUnsafeBytes { Posix.writeAll(fd, $0) }
            let synced = code == 0 && fsync(fd) == 0
            let failure = code != 0 ? code : errno
            Glibc.close(fd)
            guard synced else { throw VaultError.io(operation: "cannot write", path: temporary, errno: failure) }
            if exclusive {
                if link(temporary, path) == 0 { return replica }
                guard errno == EEXIST else { throw VaultError.io(operation: "cannot create", path: path, errno: errno) }
                if let (theirs, named) = stored(), named == machine { return theirs }
            }
            guard rename(temporary, path) == 0 else { throw VaultError.io(operation: "cannot replace", path: path, errno: errno) }
            return replica
        }
        if renew { return try write(.random(), exclusive: false) }
        switch stored() {
        case let (replica, named)? where named == machine: return replica
        case let (replica, nil)?: return try write(replica, exclusive: false)  // an older vault's file: named now
        case _?: return try write(.random(), exclusive: false)  // made on another machine: a replica of our own
        case nil: return try write(.random(), exclusive: true)  // none yet, or left empty or damaged by a crash
        }
    }

    /// What names this machine in replica files: the first 8 bytes of BLAKE2b-256 of `/etc/machine-id` and the host
    /// name, in hex (either may be missing: a container without a machine id has its own host name).
    public static let machine: String = {
        let id = (try? VaultFile.read(path: "/etc/machine-id")) ?? []
        var host = [CChar](repeating: 0, count: 256)
        let name = gethostname(&host, host.count - 1) == 0 ? Array(host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }) : []
        let digest = (id + [0] + name).withUnsafeBytes { Sodium.blake2b256($0) }
        return Posix.hex(Array(digest.prefix(8)))
    }()

    /// The time (`milliseconds << 16 | counter`) of the latest write `replica` made to vault `vaultID`, as recorded
    /// in the state directory (`<vault id>.<replica>.written`), or `nil`.
    static func latestWrite(of replica: ReplicaID, to vaultID: DocumentID, stateDirectory: String) -> UInt64? {
        guard let bytes = try? VaultFile.read(path: stateDirectory + "/" + vaultID.description + "." + replica.description + ".written"), bytes.count == 16,
              let text = String(validating: bytes, as: UTF8.self) else { return nil }
        return UInt64(text, radix: 16)
    }

    /// Records `time` as the latest write of `replica` to `vaultID` (written whole, then renamed).
    ///
    /// Not `fsync`ed (every write of the vault records it, and an `fsync` costs milliseconds on a disk: one more per
    /// put than version 1 pays, Benchmarks/README.md): the record is a lower bound of what the file must hold, read
    /// by the missing-own-writes check, so a crash that loses the newest record (an older one, or none, or an empty
    /// file read as none) only makes that check more lenient, never refuses a file that holds every write.
    static func recordLatestWrite(_ time: UInt64, of replica: ReplicaID, to vaultID: DocumentID, stateDirectory: String) throws {
        let path = stateDirectory + "/" + vaultID.description + "." + replica.description + ".written"
        let temporary = stateDirectory + "/." + vaultID.description + "." + ReplicaID.random().description + ".tmp"
        let fd = Posix.retryingEINTR { Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot create", path: temporary, errno: errno) }
        let text = Array(Posix.hex(withUnsafeBytes(of: time.bigEndian, Array.init)).utf8)
        let code = text.withUnsafeBytes { Posix.writeAll(fd, $0) }
        let synced = code == 0
        Glibc.close(fd)
        guard synced, rename(temporary, path) == 0 else {
            let failure = errno
            unlink(temporary)
            throw VaultError.io(operation: "cannot write", path: path, errno: code != 0 ? code : failure)
        }
    }
}

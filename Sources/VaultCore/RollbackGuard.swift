import FoundationEssentials
import VaultSodium

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a store remembers the highest generation it has seen of each vault, to refuse an older copy put back
/// in its place (a rollback). See SECURITY.md ("Rollback") for what this does and does not catch.
///
/// One small file per vault in ``stateDirectory`` (mode 0600, directory 0700), named by a hash of the vault's
/// absolute path, holding the path, a vault id (a keyed BLAKE2b of the data key: different for every vault and
/// every passphrase change, reveals nothing of the key), the highest generation seen, and the ids the vault
/// retired at its passphrase changes (a copy sealed with one of those is older than the change).
public struct RollbackProtection: Sendable, Equatable {
    /// The directory of the records.
    public var stateDirectory: String

    public init(stateDirectory: String) {
        self.stateDirectory = stateDirectory
    }

    /// `$XDG_STATE_HOME/vault`, or `~/.local/state/vault` when `XDG_STATE_HOME` is unset or not absolute.
    public static var defaultStateDirectory: String { defaultStateDirectory(environment: Posix.environment) }

    /// ``defaultStateDirectory`` in `environment` (a lookup of one variable: the process's, or a test's).
    package static func defaultStateDirectory(environment: (String) -> String?) -> String {
        if let state = environment("XDG_STATE_HOME"), state.hasPrefix("/") { return state + "/vault" }
        return Posix.homeDirectory(environment: environment) + "/.local/state/vault"
    }

    /// Records in ``defaultStateDirectory`` (what the `vault` CLI uses).
    public static var standard: RollbackProtection { RollbackProtection(stateDirectory: defaultStateDirectory) }
}

/// The record of one vault: checked after every successful decryption, updated after it and after every write.
package enum RollbackGuard {
    struct Record: Equatable {
        var path: String
        var vaultID: String
        var generation: UInt64
        /// Ids of data keys this vault had before its passphrase changes, most recent last (at most
        /// ``maximumRetiredCount``).
        var retired: [String] = []
        /// Version 2, the record of a vault id: a key change made here that no other copy has yet (``setPending``):
        /// `<new key id> <retired key id> <the retired key, sealed under the new one (hex)>`.
        var pending: String?
        /// Version 2, the record of a vault id: the public Ed25519 signing key of the current data key (hex; public,
        /// derived from the key: ``KeySigning``), against which a file under another key is checked at open
        /// (``checkVault``). Absent from records written before it was kept: written at the next open.
        var signingKey: String?
        /// Version 2, the record of a vault id: those of ``retired`` that a recipient's removal retired (their key links
        /// say so), for the message that refuses a copy under one (``VaultError/retiredKey(path:reason:)``).
        var removals: [String] = []
    }

    /// How many retired ids a record keeps: each passphrase change adds one.
    static let maximumRetiredCount = 64

    /// The vault's id: BLAKE2b-128 keyed with the data key over a fixed label.
    static func vaultID(dataKey: SecureBytes) -> String {
        let label = Array("vault rollback id v1".utf8)
        let id = label.withUnsafeBytes { input in
            dataKey.withUnsafeBytes { key in Sodium.blake2b(input, key: key, outputByteCount: 16) }
        }
        return Posix.hex(id)
    }

    /// The vault path made absolute with its directory resolved (the record is per file, wherever it is named from:
    /// `./v.vault`, `../x/v.vault`, `//`, a symbolic link on the way). The agent keys its vaults by it too.
    package static func canonicalPath(_ path: String) -> String {
        let (directory, name) = VaultFile.split(path)
        guard let resolved = realpath(directory, nil) else { return path }
        defer { free(resolved) }
        let real = String(cString: resolved)
        return (real == "/" ? "" : real) + "/" + name
    }

    static func recordName(for canonicalPath: String) -> String {
        let digest = Array(canonicalPath.utf8).withUnsafeBytes { Sodium.blake2b256($0) }
        return Posix.hex(digest.prefix(16)) + ".generation"
    }

    /// Checks a file just opened against the record of its path, then records it. Refuses (unless `accept`,
    /// which makes the file the reference): a lower generation of the same vault (``VaultError/rollbackDetected``),
    /// a data key the vault retired at a passphrase change (``VaultError/retiredKey(path:)``), and another vault
    /// than the one recorded (``VaultError/otherVault(path:)``). Without a record, the file becomes the reference.
    /// `record` false: only the checks (a file refused for another reason after them raises nothing). `followed`:
    /// the file's key is a key change the record of the vault's id verified (``checkVault``): taken, and the key
    /// recorded here retired.
    static func checkAndRecord(
        path: String, generation: UInt64, dataKey: SecureBytes, protection: RollbackProtection, accept: Bool, record: Bool = true,
        followed: Bool = false
    ) throws {
        let canonical = canonicalPath(path)
        let id = vaultID(dataKey: dataKey)
        try update(protection: protection, canonicalPath: canonical) { old in
            guard record else {
                guard let old, old.path == canonical, !accept else { return nil }
                if old.vaultID == id, generation < old.generation {
                    throw VaultError.rollbackDetected(path: path, seenGeneration: old.generation, fileGeneration: generation)
                }
                if old.vaultID != id, !followed {
                    throw old.retired.contains(id) ? VaultError.retiredKey(path: path) : VaultError.otherVault(path: path)
                }
                return nil
            }
            guard let old, old.path == canonical else { return Record(path: canonical, vaultID: id, generation: generation) }
            if old.vaultID == id {
                guard generation < old.generation else {
                    return generation == old.generation ? nil : Record(path: canonical, vaultID: id, generation: generation, retired: old.retired)
                }
                guard accept else {
                    throw VaultError.rollbackDetected(path: path, seenGeneration: old.generation, fileGeneration: generation)
                }
            } else if followed {
                // A key change made elsewhere, verified: the key it replaced is retired here as at a change made here.
                let retired = (old.retired.contains(old.vaultID) ? old.retired : old.retired + [old.vaultID]).filter { $0 != id }
                return Record(path: canonical, vaultID: id, generation: generation, retired: Array(retired.suffix(maximumRetiredCount)))
            } else if !accept {
                throw old.retired.contains(id) ? VaultError.retiredKey(path: path) : VaultError.otherVault(path: path)
            }
            return Record(path: canonical, vaultID: id, generation: generation, retired: old.retired.filter { $0 != id })
        }
    }

    /// Records a generation this process wrote (never lowers the record of the same vault). `retiring` is the
    /// data key a passphrase change replaced: its id joins the record's retired ids.
    static func record(
        path: String, generation: UInt64, dataKey: SecureBytes, retiring: SecureBytes? = nil, protection: RollbackProtection
    ) {
        let canonical = canonicalPath(path)
        let id = vaultID(dataKey: dataKey)
        let retiredID = retiring.map { vaultID(dataKey: $0) }
        try? update(protection: protection, canonicalPath: canonical) { old in
            var retired = old?.path == canonical ? old?.retired ?? [] : []
            if let retiredID, retiredID != id, !retired.contains(retiredID) { retired.append(retiredID) }
            retired = Array(retired.filter { $0 != id }.suffix(maximumRetiredCount))
            if let old, old.vaultID == id, old.path == canonical, old.generation >= generation, old.retired == retired {
                return nil
            }
            return Record(path: canonical, vaultID: id, generation: generation, retired: retired)
        }
    }

    // MARK: Version 2: the record of a vault by its id

    /// The record of version-2 vault `vaultID`, wherever its file is (`<vault id>.vault`): its current data key's
    /// id (from the header), the generation at which it was first seen, and the ids of the data keys it retired. It follows the
    /// vault's keys, not its copies: copies of one vault may lawfully differ (a USB stick, a backup, another
    /// machine's file to merge), so a lower generation under the current key is no rollback here (the record of
    /// the path, and this replica's own writes, are the checks of a copy put back). Refuses (unless `accept`) a
    /// data key the vault retired (``VaultError/retiredKey(path:)``): after a passphrase change, a copy under the
    /// old key, wherever it is, is older than the change. A new data key (a passphrase change made elsewhere)
    /// becomes the current one and retires the one it replaces (``recordVault``, once every check of the file
    /// passed: a refused file is recorded nowhere).
    ///
    /// With `stanzas` (the key stanzas of a file put in the vault's place: a `git pull` fast-forward, a file synced or
    /// copied, which no merge checked), a key neither current nor retired is taken only when the record knows the
    /// current key's signing key and the file's key links lead from that key to the file's (``KeyLinks``, docs/FORMAT.md
    /// "Key changes"): a key change made elsewhere, which returns `true` (the caller records it, retiring the old key).
    /// Else ``VaultError/unauthorizedKey(path:)``, which `accept` does not override: a stranger's key, or a removed
    /// recipient's, never becomes the vault's by being put in its place. A record from before signing keys were kept
    /// checks retired keys only (the record of the path then judges: ``VaultError/otherVault(path:)``).
    @discardableResult
    static func checkVault(
        _ vaultID: DocumentID, dataKeyID: DocumentID, stanzas: [KeyStanza]? = nil, path: String, protection: RollbackProtection,
        accept: Bool
    ) throws -> Bool {
        let (id, key) = (vaultID.description, dataKeyID.description)
        var followed = false
        try update(protection: protection, name: id + ".vault") { old in
            guard let old, old.path == id, old.vaultID != key else { return nil }
            if old.retired.contains(key) {
                if !accept { throw VaultError.retiredKey(path: path, reason: old.removals.contains(key) ? .recipientRemoval : nil) }
            } else if let stanzas, let signing = old.signingKey.flatMap(Posix.unhex), let current = DocumentID(hex: old.vaultID) {
                guard KeyLinks.authorizes(stanzas, dataKeyID: dataKeyID, from: current, signingKey: signing, vaultID: vaultID) else {
                    throw VaultError.unauthorizedKey(path: path)
                }
                followed = true
            }
            return nil  // recorded by ``recordVault`` once every check passed
        }
        return followed
    }

    /// Whether the key of the file whose header is `header` replaced, at a recipient's removal, the key the record of
    /// its vault holds as current: its key links lead there from that key (verified with the signing key recorded)
    /// and record only removals (``KeyLinks/reason(_:from:)``). An identity with no stanza in such a file was removed
    /// (``VaultError/removedRecipient(path:)``). Nothing is written.
    package static func removedRecipient(in header: DocumentHeader, protection: RollbackProtection) -> Bool {
        let id = header.vaultID.description
        var removal = false
        try? update(protection: protection, name: id + ".vault") { old in
            guard let old, old.path == id, old.vaultID != header.dataKeyID.description,
                  let signing = old.signingKey.flatMap(Posix.unhex), let current = DocumentID(hex: old.vaultID),
                  KeyLinks.authorizes(header.stanzas, dataKeyID: header.dataKeyID, from: current, signingKey: signing, vaultID: header.vaultID)
            else { return nil }
            removal = KeyLinks.reason(header.stanzas, from: current) == .recipientRemoval
            return nil
        }
        return removal
    }

    /// Records the data key of version-2 vault `vaultID` this process wrote with or opened (written only when the key
    /// is new, or its signing key not yet kept); `retiring`: the data key id a passphrase change replaced; `dataKey`: the
    /// key itself, whose public signing key is kept beside its id (``checkVault``); `stanzas`: the file's, whose key
    /// links say why each key it retires was retired (a recipient's removal is kept as such: ``Record/removals``). A
    /// pending change (``setPending``) belongs to the key it was made to: another key recorded ends it (the sealed
    /// retired key is dropped).
    static func recordVault(
        _ vaultID: DocumentID, dataKeyID: DocumentID, dataKey: SecureBytes? = nil, generation: UInt64, retiring: DocumentID? = nil,
        stanzas: [KeyStanza] = [], protection: RollbackProtection
    ) {
        let (id, key) = (vaultID.description, dataKeyID.description)
        try? update(protection: protection, name: id + ".vault") { old in
            let same = old.map { $0.path == id && $0.vaultID == key } ?? false
            var retired = old?.path == id ? old?.retired ?? [] : []
            var removals = old?.path == id ? old?.removals ?? [] : []
            func retire(_ retiredID: String) {
                guard retiredID != key, !retired.contains(retiredID) else { return }
                retired.append(retiredID)
                if let keyID = DocumentID(hex: retiredID), KeyLinks.reason(stanzas, from: keyID) == .recipientRemoval { removals.append(retiredID) }
            }
            if let old, old.path == id, old.vaultID != key { retire(old.vaultID) }
            if let retiring = retiring?.description { retire(retiring) }
            retired = Array(retired.filter { $0 != key }.suffix(maximumRetiredCount))
            removals = removals.filter { retired.contains($0) }
            let kept = same ? old?.signingKey : nil
            if same, old?.retired == retired, old?.removals == removals, kept != nil || dataKey == nil { return nil }
            let signing = kept ?? dataKey.map { Posix.hex(KeySigning.publicKey(of: $0)) }
            return Record(path: id, vaultID: key, generation: generation, retired: retired, pending: same ? old?.pending : nil,
                          signingKey: signing, removals: removals)
        }
    }

    /// A key change made here, from `retiredKeyID` to `keyID`, that no other copy has seen yet: until it is published
    /// (``clearPending``), a copy under the retired key is merged into the new key as content (docs/SYNC.md). The
    /// retired key is kept sealed (secretbox) under a key derived from the new one: only a holder of the new key opens it.
    static func setPending(_ vaultID: DocumentID, keyID: DocumentID, retiredKeyID: DocumentID, sealedKey: [UInt8], protection: RollbackProtection) {
        try? update(protection: protection, name: vaultID.description + ".vault") { old in
            guard var record = old, record.path == vaultID.description, record.vaultID == keyID.description else { return nil }
            record.pending = "\(keyID) \(retiredKeyID) \(Posix.hex(sealedKey))"
            return record
        }
    }

    /// The pending key change to `keyID` (``setPending``): the retired key's id and the sealed key; `nil` when the
    /// change to `keyID` was published, or not made here.
    static func pending(_ vaultID: DocumentID, keyID: DocumentID, protection: RollbackProtection) -> (retiredKeyID: DocumentID, sealedKey: [UInt8])? {
        var found: (DocumentID, [UInt8])?
        try? update(protection: protection, name: vaultID.description + ".vault") { old in
            guard let old, old.path == vaultID.description, old.vaultID == keyID.description,
                  let parts = old.pending?.split(separator: " ").map(String.init), parts.count == 3, parts[0] == keyID.description,
                  let retired = DocumentID(hex: parts[1]), let sealed = Posix.unhex(parts[2])
            else { return nil }
            found = (retired, sealed)
            return nil
        }
        return found
    }

    /// The key change to `keyID` reached another copy (a sync wrote it to the remote, or a copy under it was merged):
    /// no longer pending.
    package static func clearPending(_ vaultID: DocumentID, keyID: DocumentID, protection: RollbackProtection) {
        try? update(protection: protection, name: vaultID.description + ".vault") { old in
            guard var record = old, record.path == vaultID.description, let pending = record.pending,
                  pending.hasPrefix(keyID.description + " ")
            else { return nil }
            record.pending = nil
            return record
        }
    }

    /// Reads the record under an exclusive `flock` of the state directory, and writes what `decide` returns
    /// (nil: nothing to write) with a temporary file and `rename`. State that cannot be read counts as none;
    /// state that cannot be written is skipped (the check is best effort, never a reason a vault cannot open).
    private static func update(
        protection: RollbackProtection, canonicalPath: String, _ decide: (Record?) throws -> Record?
    ) throws {
        try update(protection: protection, name: recordName(for: canonicalPath), decide)
    }

    private static func update(protection: RollbackProtection, name: String, _ decide: (Record?) throws -> Record?) throws {
        let directory = protection.stateDirectory
        guard let dirfd = openStateDirectory(directory) else {
            _ = try decide(nil)
            return
        }
        defer { close(dirfd) }
        // Bounded like the vault's own lock: a stuck holder makes the check best effort, never a hang.
        guard lockWithTimeout(dirfd, seconds: 5) else {
            _ = try decide(nil)
            return
        }
        let old = readRecord(dirfd: dirfd, name: name)
        guard let new = try decide(old) else { return }
        let text = "vault-rollback 1\npath \(new.path)\nid \(new.vaultID)\ngeneration \(new.generation)\n"
            + (new.signingKey.map { "signing \($0)\n" } ?? "")
            + new.retired.map { "retired \($0)\n" }.joined() + new.removals.map { "removal \($0)\n" }.joined()
            + (new.pending.map { "pending \($0)\n" } ?? "")
        let tempName = ".\(name).\(Posix.hex(Sodium.randomBytes(count: 8))).tmp"
        let fd = openat(dirfd, tempName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Posix.writeAll(fd, $0) }
        let ok = written == 0 && fchmod(fd, 0o600) == 0 && Posix.retryingEINTR({ fsync(fd) }) == 0
        close(fd)
        if !ok || renameat(dirfd, tempName, dirfd, name) != 0 { unlinkat(dirfd, tempName, 0) }
    }

    /// Takes an exclusive `flock` on `fd`, polling until `seconds` have passed; `false` if it could not.
    private static func lockWithTimeout(_ fd: Int32, seconds: Double) -> Bool {
        let deadline = Posix.monotonicSeconds() + seconds
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EINTR || errno == EWOULDBLOCK, Posix.monotonicSeconds() < deadline else { return false }
            usleep(5_000)
        }
        return true
    }

    /// Creates the state directory (0700) if missing; refuses a symlink or one others can write.
    private static func openStateDirectory(_ directory: String) -> Int32? {
        var info = stat()
        if lstat(directory, &info) != 0 {
            var partial = ""
            for component in directory.split(separator: "/") {
                partial += "/" + component
                if lstat(partial, &info) != 0 {
                    guard mkdir(partial, 0o700) == 0 || errno == EEXIST else { return nil }
                    _ = chmod(partial, 0o700)
                }
            }
        }
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard fstat(fd, &info) == 0, Posix.distrust(ofDirectory: info, allowRoot: false) == nil else {
            close(fd)
            return nil
        }
        return fd
    }

    private static func readRecord(dirfd: Int32, name: String) -> Record? {
        let fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        // The files' trust rule, but for the mode: a record holds no secret (the state directory is private).
        guard fstat(fd, &info) == 0 else { return nil }
        switch Posix.distrust(ofFile: info, accepting: .regular) {
        case nil, .accessibleByOthers: break
        default: return nil
        }
        // The whole record (a few KiB at most: 64 retired ids), read until end of file, EINTR retried.
        var buffer = [UInt8](repeating: 0, count: 8192)
        var n = 0
        while n < buffer.count {
            let got = buffer.withUnsafeMutableBytes { bytes in
                Posix.retryingEINTR { Glibc.read(fd, bytes.baseAddress! + n, bytes.count - n) }
            }
            guard got > 0 else { break }
            n += got
        }
        guard n > 0 else { return nil }
        var fields = [String: String]()
        var retired = [String](), removals = [String]()
        var pending: String?
        for line in String(decoding: buffer[0..<n], as: UTF8.self).split(separator: "\n") {
            guard let space = line.firstIndex(of: " ") else { continue }
            let (key, value) = (String(line[..<space]), String(line[line.index(after: space)...]))
            switch key {
            case "retired": retired.append(value)
            case "removal": removals.append(value)
            case "pending": pending = value
            default: fields[key] = value
            }
        }
        guard fields["vault-rollback"] == "1", let path = fields["path"], let id = fields["id"],
            let generation = fields["generation"].flatMap({ UInt64($0) })
        else { return nil }
        return Record(
            path: path, vaultID: id, generation: generation, retired: retired, pending: pending, signingKey: fields["signing"], removals: removals)
    }
}

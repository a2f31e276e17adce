#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VaultSodium

/// File-system operations on a vault path: safe reads, atomic durable writes, the lock, permission checks.
///
/// Thin wrappers over POSIX calls in the style of swift-system: `EINTR` is retried in one helper, every
/// failure becomes a ``VaultError`` naming the operation and the path (``Posix``).
enum VaultFile {
    /// Splits `path` into its directory and last component.
    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        // Without the slashes before the name (`/a//v.vault`): a directory named with a trailing slash is resolved
        // through a symbolic link even by lstat and O_NOFOLLOW, and the check of the directory would see through it.
        var directory = path[..<slash]
        while directory.last == "/" { directory.removeLast() }
        return (directory.isEmpty ? "/" : String(directory), String(path[path.index(after: slash)...]))
    }

    // MARK: Permission checks

    /// Checks the directory that holds the vault: a real directory (not a symlink), owned by us or root,
    /// writable by no one else. Returns an open descriptor on it (the caller closes it).
    static func openDirectory(of path: String) throws -> Int32 {
        let directory = split(path).directory
        var info = stat()
        guard lstat(directory, &info) == 0 else {
            throw VaultError.io(operation: "cannot access directory", path: directory, errno: errno)
        }
        switch Posix.distrust(ofDirectory: info, allowRoot: true) {
        case nil: break
        case .symbolicLink:
            throw VaultError.unsafePermissions(
                path: directory, reason: "the vault's directory is a symbolic link",
                hint: "use the vault by its real path (see: realpath '\(directory)')")
        case .notADirectory:
            throw VaultError.io(operation: "cannot use directory", path: directory, errno: ENOTDIR)
        case .ownedBy(let uid):
            throw VaultError.unsafePermissions(
                path: directory, reason: "the vault's directory is owned by another user (uid \(uid))",
                hint: "keep the vault in a directory of your own")
        case .writableByOthers(let mode):
            throw VaultError.unsafePermissions(
                path: directory,
                reason: "the vault's directory is writable by group or others (mode \(Posix.octal(mode)))",
                hint: "run: chmod go-w '\(directory)'  (or keep the vault in a private directory)")
        }
        let fd = Posix.retryingEINTR { open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot open directory", path: directory, errno: errno) }
        return fd
    }

    /// Checks an open vault or lock file by the files' trust rule (``Posix/distrust(ofFile:accepting:allowRoot:)``):
    /// a regular file, ours (not root's), with no permission for group or others.
    static func checkOwnFile(_ fd: Int32, path: String, what: String) throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw VaultError.io(operation: "cannot stat", path: path, errno: errno) }
        switch Posix.distrust(ofFile: info, accepting: .regular) {
        case nil: break
        case .symbolicLink: throw symlinkError(path, what: what)
        case .notAccepted:
            throw VaultError.unsafePermissions(
                path: path, reason: "the \(what) is not a regular file", hint: "move it away and try again")
        case .ownedBy(let uid):
            throw VaultError.unsafePermissions(
                path: path, reason: "the \(what) is owned by another user (uid \(uid))",
                hint: "only the vault's owner may use it")
        case .accessibleByOthers(let mode), .writableByOthers(let mode):
            throw VaultError.unsafePermissions(
                path: path, reason: "the \(what) is accessible by group or others (mode \(Posix.octal(mode)))",
                hint: "run: chmod 600 '\(path)'")
        }
    }

    /// The refusal of a vault reached through a symbolic link (an `O_NOFOLLOW` open that failed with `ELOOP`).
    static func symlinkError(_ path: String, what: String) -> VaultError {
        .unsafePermissions(
            path: path, reason: "the \(what) is a symbolic link (or not a regular file)",
            hint: "pass the real path instead of a link")
    }

    // MARK: Reading

    /// Reads the whole vault file, or returns `nil` when there is none. Symlinks are never followed.
    /// The largest file read: the larger of the two formats' bounds (each parser then checks its own).
    static let maximumFileByteCount = max(VaultFormat.maximumFileByteCount, DocumentFormat.maximumFileByteCount)

    static func read(path: String) throws -> [UInt8]? {
        switch try read(path: path, unlessItStartsWith: []) {
        case .missing: return nil
        case .unchanged: return []  // not reached: every file starts with the empty prefix, and is read
        case .contents(let bytes): return bytes
        }
    }

    enum ReadResult {
        case missing
        /// The file starts with the given prefix: it was not read further.
        case unchanged
        case contents([UInt8])
    }

    /// Reads the vault file unless it starts with `prefix` (a non-empty prefix: the header and body nonce
    /// of the file last read or written, which identify it) and, when `size` is given, has that many bytes. With an
    /// empty prefix, always reads the file.
    static func read(path: String, unlessItStartsWith prefix: [UInt8], size: Int? = nil) throws -> ReadResult {
        // No directory, no vault: `open(with:)` then creates both, `open(with:createIfMissing: false)` reports
        // vaultNotFound. (Without this, a missing directory was an `io` error and the tutorials' behaviour failed.)
        var directoryInfo = stat()
        if lstat(split(path).directory, &directoryInfo) != 0 && errno == ENOENT { return .missing }
        let dirfd = try openDirectory(of: path)
        defer { close(dirfd) }
        let name = split(path).name
        // O_NONBLOCK: a FIFO planted at the path must not make us hang; it fails the regular-file check.
        let fd = Posix.retryingEINTR { openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        if fd < 0 {
            let code = errno
            if code == ENOENT { return .missing }
            if code == ELOOP { throw symlinkError(path, what: "vault") }
            throw VaultError.io(operation: "cannot open vault", path: path, errno: code)
        }
        defer { close(fd) }
        try checkOwnFile(fd, path: path, what: "vault")
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw VaultError.io(operation: "cannot stat", path: path, errno: errno) }
        let prefix = size == nil || size == Int(info.st_size) ? prefix : []
        // A file larger than a vault can be is refused before its body is read (a 1 TiB sparse file must not
        // be allocated): the magic first, as a reader checks it first, then the size.
        // Each format version has its own bound (version 2's header may be longer): the version's bytes decide.
        if info.st_size > off_t(VaultFormat.maximumFileByteCount) {
            var start = [UInt8](repeating: 0, count: VaultFormat.magic.count + 2)
            let n = start.withUnsafeMutableBytes { buffer in
                Posix.retryingEINTR { pread(fd, buffer.baseAddress, buffer.count, 0) }
            }
            if n < 0 { throw VaultError.io(operation: "cannot read vault", path: path, errno: errno) }
            guard n >= VaultFormat.magic.count, start.prefix(VaultFormat.magic.count).elementsEqual(VaultFormat.magic) else {
                throw VaultError.corrupt(path: path, reason: .badMagic)
            }
            let version2 = n == start.count && DocumentHeader.isVersion2(start)
            if !version2 || info.st_size > off_t(DocumentFormat.maximumFileByteCount) {
                throw VaultError.corrupt(path: path, reason: .tooLarge(byteCount: Int(info.st_size)))
            }
        }
        // Read to end of file, straight into the array's storage (the size is a hint: the file is never
        // modified in place, only replaced, so one read(2) past the size normally sees the end of the file).
        // With a prefix, the first read(2) asks for the prefix only: an unchanged file is not read further.
        let capacity = max(Int(info.st_size), 0) + 1
        var failure: Int32 = 0
        var unchanged = false
        var filled = false
        var bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            var wanted = prefix.isEmpty ? capacity : min(prefix.count, capacity)
            while initialized < capacity {
                let n = Posix.retryingEINTR { Glibc.read(fd, buffer.baseAddress! + initialized, wanted - initialized) }
                if n < 0 { failure = errno; return }
                if n == 0 { return }
                initialized += n
                if initialized == wanted && wanted < capacity {
                    if UnsafeBufferPointer(rebasing: buffer[0..<initialized]).elementsEqual(prefix) {
                        unchanged = true
                        return
                    }
                    wanted = capacity
                }
            }
            filled = true
        }
        if failure != 0 { throw VaultError.io(operation: "cannot read vault", path: path, errno: failure) }
        if unchanged { return .unchanged }
        if filled {
            // The file grew past its size: read the rest in chunks.
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let n = chunk.withUnsafeMutableBytes { buffer in
                    Posix.retryingEINTR { Glibc.read(fd, buffer.baseAddress, buffer.count) }
                }
                if n < 0 { throw VaultError.io(operation: "cannot read vault", path: path, errno: errno) }
                if n == 0 { break }
                bytes += chunk[0..<n]
                if bytes.count > VaultFile.maximumFileByteCount {
                    throw VaultError.corrupt(path: path, reason: .tooLarge(byteCount: bytes.count))
                }
            }
        }
        return .contents(bytes)
    }

    /// Whether something (a file, a link, anything) exists at `path`, without following a final symlink.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    // MARK: Writing

    /// Creates the vault's directory (and missing parents) with mode 0700, whatever the umask.
    static func createDirectory(for path: String) throws {
        let directory = split(path).directory
        var info = stat()
        if lstat(directory, &info) == 0 { return }
        try createDirectory(for: directory)
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw VaultError.io(operation: "cannot create directory", path: directory, errno: errno)
        }
        // mkdir's mode is masked by the umask, which can only remove bits; set exactly 0700.
        if chmod(directory, 0o700) != 0 {
            throw VaultError.io(operation: "cannot set permissions of", path: directory, errno: errno)
        }
    }

    /// Replaces the vault file with `bytes` atomically and durably.
    ///
    /// Temp file in the same directory (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600), write, `fsync`, `rename`
    /// over the vault, `fsync` of the directory. A crash at any point leaves the old or the new file.
    /// The caller holds the vault's lock.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        let dirfd = try openDirectory(of: path)
        defer { close(dirfd) }
        let name = split(path).name
        removeStrayTemporaryFiles(in: dirfd, for: name)
        let tempName = ".\(name).\(Posix.hex(Sodium.randomBytes(count: 8))).tmp"
        let tempPath = split(path).directory + "/" + tempName
        let fd = Posix.retryingEINTR {
            openat(dirfd, tempName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot create temporary file", path: tempPath, errno: errno) }
        var renamed = false
        defer { if !renamed { _ = unlinkat(dirfd, tempName, 0) } }
        do {
            defer { close(fd) }
            guard fchmod(fd, 0o600) == 0 else {
                throw VaultError.io(operation: "cannot set permissions of", path: tempPath, errno: errno)
            }
            let code = bytes.withUnsafeBytes { Posix.writeAll(fd, $0) }
            guard code == 0 else { throw VaultError.io(operation: "cannot write", path: tempPath, errno: code) }
            guard Posix.retryingEINTR({ fsync(fd) }) == 0 else {
                throw VaultError.io(operation: "cannot fsync", path: tempPath, errno: errno)
            }
        }
        guard renameat(dirfd, tempName, dirfd, name) == 0 else {
            throw VaultError.io(operation: "cannot rename temporary file over", path: path, errno: errno)
        }
        renamed = true
        guard Posix.retryingEINTR({ fsync(dirfd) }) == 0 else {
            throw VaultError.io(operation: "cannot fsync directory of", path: path, errno: errno)
        }
    }

    /// Whether `entryName` is exactly the pattern of docs/FORMAT.md, `.NAME.HHHHHHHHHHHHHHHH.tmp` with 16
    /// lowercase hexadecimal digits: nothing else in the directory is ever removed.
    static func isTemporaryName(_ entryName: [UInt8], for name: String) -> Bool {
        let prefix = Array(".\(name).".utf8), suffix = Array(".tmp".utf8)
        guard entryName.count == prefix.count + 16 + suffix.count, entryName.starts(with: prefix),
            entryName.suffix(suffix.count).elementsEqual(suffix)
        else { return false }
        return entryName[prefix.count..<prefix.count + 16].allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
        }
    }

    /// Removes temporary files left by writers that died before their rename. Only lock holders create
    /// them, so under the lock every one that exists is stray.
    static func removeStrayTemporaryFiles(in dirfd: Int32, for name: String) {
        let dupfd = dup(dirfd)
        guard dupfd >= 0, let dir = fdopendir(dupfd) else {
            if dupfd >= 0 { close(dupfd) }
            return
        }
        defer { closedir(dir) }
        var stray = [[UInt8]]()
        while let entry = readdir(dir) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix(while: { $0 != 0 })) }
            if isTemporaryName(entryName, for: name) { stray.append(entryName) }
        }
        for entryName in stray {  // unlink never follows a link
            _ = (entryName + [0]).withUnsafeBytes { unlinkat(dirfd, $0.baseAddress!.assumingMemoryBound(to: CChar.self), 0) }
        }
    }

    /// Removes the vault file (for tests and `removeVault`); the caller holds the lock.
    static func remove(path: String) throws {
        if unlink(path) != 0 && errno != ENOENT {
            throw VaultError.io(operation: "cannot remove", path: path, errno: errno)
        }
    }
}

/// What every vault file is, for a reader that takes one from elsewhere (a remote store, git, a merge driver's
/// temporary file) before it parses it: how large it can be and how it starts (docs/FORMAT.md).
public enum VaultFileShape {
    /// The largest vault file of any version: 1 GiB of plaintext behind the largest header (1 GiB + 65,608 bytes).
    public static let largestFile = VaultFile.maximumFileByteCount
    /// How many leading bytes ``startsAsVault(_:)`` needs to decide.
    public static let magicByteCount = VaultFormat.magic.count

    /// Whether `bytes` start as every vault file does (its magic, `\x89VAULT\r\n`); a `bytes` shorter than the magic
    /// that is a prefix of it, too (the parser then says what is missing).
    public static func startsAsVault(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.prefix(magicByteCount).elementsEqual(VaultFormat.magic.prefix(min(bytes.count, magicByteCount)))
    }
}

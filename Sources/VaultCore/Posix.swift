#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The POSIX helpers every syscall site of the package uses (swift-system's `valueOrErrno` idea): `EINTR`
/// is retried in one place and `errno` is captured at the moment of failure.
package enum Posix {
    /// The environment variable `name`, if set: one `getenv`, where `ProcessInfo`'s `environment` builds a
    /// dictionary of the whole environment on every use (a few percent of a `vault get`'s start).
    package static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// `$HOME` when set and not empty, else the home directory of the user's passwd entry (`getpwuid_r`),
    /// else `/`. The XDG defaults of the store, the state directory and the agent's socket start here.
    package static var homeDirectory: String { homeDirectory(environment: environment) }

    /// ``homeDirectory`` with `environment` (a lookup of one variable) in place of the process's.
    package static func homeDirectory(environment: (String) -> String?) -> String {
        if let home = environment("HOME"), !home.isEmpty { return home }
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(getuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil, let dir = entry.pw_dir
        else { return "/" }
        return String(cString: dir)
    }

    /// A C error number, as a Swift error.
    package struct Errno: Error, Equatable, Sendable {
        package let code: Int32
    }

    /// Calls `body` until it does not fail with `EINTR`; on failure (`-1`) returns the `errno` it set.
    package static func valueOrErrno<T: BinaryInteger>(_ body: () -> T) -> Result<T, Errno> {
        let result = retryingEINTR(body)  // the one EINTR loop
        return result == -1 ? .failure(Errno(code: errno)) : .success(result)
    }

    /// Calls `body` until it does not fail with `EINTR` and returns its result (`errno` is left as it set it).
    package static func retryingEINTR<T: BinaryInteger>(_ body: () -> T) -> T {
        while true {
            let result = body()
            if result == -1 && errno == EINTR { continue }
            return result
        }
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and `EINTR`. Returns `0` or the `errno` of the
    /// failure (`EIO` for a write that wrote nothing).
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        var offset = 0
        while offset < bytes.count {
            switch valueOrErrno({ write(fd, bytes.baseAddress! + offset, bytes.count - offset) }) {
            case .success(0): return EIO
            case .success(let n): offset += n
            case .failure(let error): return error.code
            }
        }
        return 0
    }

    /// Reads `fd` to its end, at most `limit` bytes (read one more than you accept to tell a larger source),
    /// retrying `EINTR`; a failure is an `io` error naming `path`.
    package static func readAll(_ fd: Int32, limit: Int, path: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < limit {
            let wanted = min(chunk.count, limit - bytes.count)
            switch valueOrErrno({ chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, wanted) } }) {
            case .success(0): return bytes
            case .success(let n): bytes += chunk[0..<n]
            case .failure(let error): throw VaultError.io(operation: "cannot read", path: path, errno: error.code)
            }
        }
        return bytes
    }

    /// The bytes of the file at `path`, at most `limit`, read to its end: a regular file or what a shell's `<(…)`
    /// gives (a FIFO at `/dev/fd/N`), which Foundation's `contents(atPath:)` reads as nothing. Larger than `limit`:
    /// an `io` error with `EFBIG`; a directory: `EISDIR`.
    package static func readFile(_ path: String, limit: Int) throws -> [UInt8] {
        let fd = retryingEINTR { open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot read", path: path, errno: errno) }
        defer { close(fd) }
        let bytes = try readAll(fd, limit: limit + 1, path: path)
        if bytes.count > limit { throw VaultError.io(operation: "cannot read", path: path, errno: EFBIG) }
        return bytes
    }

    /// Why a directory may not hold our secrets (the vault's, the agent socket's, the state directory): the one trust
    /// rule they share, each caller saying it in its own words.
    package enum DirectoryDistrust: Equatable {
        case symbolicLink
        case notADirectory
        case ownedBy(uid_t)
        case writableByOthers(mode: mode_t)
    }

    /// The trust rule for a directory that holds our secrets, on its `lstat`: a real directory (not a symbolic
    /// link), ours (or root's when `allowRoot`: a vault may sit in a root-owned directory that only root can write,
    /// never the agent's socket or the state records), writable by nobody else. `nil` when it may be trusted.
    package static func distrust(ofDirectory info: stat, allowRoot: Bool) -> DirectoryDistrust? {
        if info.st_mode & S_IFMT == S_IFLNK { return .symbolicLink }
        guard info.st_mode & S_IFMT == S_IFDIR else { return .notADirectory }
        guard info.st_uid == geteuid() || (allowRoot && info.st_uid == 0) else { return .ownedBy(info.st_uid) }
        guard info.st_mode & 0o022 == 0 else { return .writableByOthers(mode: info.st_mode & 0o7777) }
        return nil
    }

    /// The kinds of file a check accepts (``distrust(ofFile:accepting:allowRoot:)``).
    package struct FileKinds: OptionSet, Sendable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// A regular file: no permission at all for group or others.
        package static let regular = FileKinds(rawValue: 1)
        /// A FIFO (a named pipe, bash's `<(...)`): group and others may not write it (they could feed it).
        package static let pipe = FileKinds(rawValue: 2)
        /// A Unix socket: its mode is not checked (its directory guards it).
        package static let socket = FileKinds(rawValue: 4)
    }

    /// Why a file that holds or feeds our secrets may not be trusted (a vault, its lock, a passphrase or identity
    /// file, the agent's socket): the one trust rule they share, each caller saying it in its own words.
    package enum FileDistrust: Equatable, Sendable {
        /// A symbolic link (where the caller does not follow links: an `lstat`, or an `open` with `O_NOFOLLOW`
        /// that failed with `ELOOP`, ``FileDistrust/symbolicLink``).
        case symbolicLink
        /// Not of a kind the caller accepts; `mode`'s file type says what it is (``kind(of:)``).
        case notAccepted(mode: mode_t)
        case ownedBy(uid_t)
        /// A regular file with permissions for group or others.
        case accessibleByOthers(mode: mode_t)
        /// A pipe that group or others may write.
        case writableByOthers(mode: mode_t)
    }

    /// The trust rule for a file that holds or feeds our secrets, on its `fstat` (or `lstat`): of a kind in `kinds`
    /// (not a symbolic link), ours (or root's when `allowRoot`: a passphrase or identity file root keeps for us,
    /// never the vault, its lock or the agent's socket), and closed to group and others as its kind needs (a regular
    /// file: no permission at all; a pipe: not writable; a socket: not checked). `nil` when it may be trusted.
    package static func distrust(ofFile info: stat, accepting kinds: FileKinds, allowRoot: Bool = false) -> FileDistrust? {
        let type = info.st_mode & S_IFMT
        if type == S_IFLNK { return .symbolicLink }
        let kind: FileKinds? = switch type {
        case S_IFREG: .regular
        case S_IFIFO: .pipe
        case S_IFSOCK: .socket
        default: nil
        }
        guard let kind, kinds.contains(kind) else { return .notAccepted(mode: info.st_mode) }
        guard info.st_uid == geteuid() || (allowRoot && info.st_uid == 0) else { return .ownedBy(info.st_uid) }
        let mode = info.st_mode & 0o7777
        if kind == .regular && mode & 0o077 != 0 { return .accessibleByOthers(mode: mode) }
        if kind == .pipe && mode & 0o022 != 0 { return .writableByOthers(mode: mode) }
        return nil
    }

    /// What the file type of `mode` is, in a message: "a regular file", "a directory", "a symbolic link", ….
    package static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: return "a regular file"
        case S_IFDIR: return "a directory"
        case S_IFLNK: return "a symbolic link"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "a file of an unknown type"
        }
    }

    /// Seconds on `CLOCK_MONOTONIC` (for timeouts: never goes back, stops during suspend).
    package static func monotonicSeconds() -> Double {
        seconds(of: CLOCK_MONOTONIC)
    }

    /// Seconds on `CLOCK_BOOTTIME` (like the monotonic clock, but it keeps counting through suspend).
    package static func bootTimeSeconds() -> Double {
        seconds(of: CLOCK_BOOTTIME)
    }

    private static func seconds(of clock: clockid_t) -> Double {
        var now = timespec()
        clock_gettime(clock, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// A file mode as `0600`.
    package static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }

    /// Lowercase hexadecimal of `bytes`.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of hexadecimal `text` (two digits a byte), `nil` for an odd length or another character.
    package static func unhex(_ text: some StringProtocol) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, digits.allSatisfy({ UInt8(ascii: "0")...UInt8(ascii: "9") ~= $0 || UInt8(ascii: "a")...UInt8(ascii: "f") ~= $0 })
        else { return nil }
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    /// `strerror(code)`.
    package static func describe(errno code: Int32) -> String {
        String(cString: strerror(code))
    }
}

import FoundationEssentials
import VaultCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A secret input that could not be read as one.
public enum SecretInputError: Error, Equatable, Sendable {
    /// The input from `source` (a descriptor, a file, the terminal) is longer than `limit` bytes.
    case tooLong(source: String, limit: Int)
    /// Descriptor `fd` (`--passphrase-fd`, `--name-fd`, ...) was not passed to the program: it is closed, or it is
    /// one the program opened itself (the runtime's), which an inherited descriptor cannot be.
    case descriptorNotOpen(fd: Int32)
    /// More than one line arrived at a one-line prompt at once (a paste of several lines); the rest was discarded
    /// from the terminal's input, so that the shell never runs it.
    case severalLines(source: String)
}

extension SecretInputError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .tooLong(let source, let limit): return "the input from \(source) is longer than \(limit) bytes"
        case .descriptorNotOpen(let fd): return "file descriptor \(fd) is not open (it was not passed to the program)"
        case .severalLines(let source): return "several lines were pasted at one prompt on \(source); nothing was kept"
        }
    }
}

/// Reading secrets (passphrases, passwords, values) from descriptors and files straight into guarded memory,
/// so that they never pass through a `String` or an ordinary array.
public enum SecretInput {
    /// Reads from `fd` into guarded memory: up to end of file, or up to (not including) the first newline
    /// when `untilNewline` (a trailing `\r` is dropped too). Nothing after that newline is consumed.
    ///
    /// - Parameter name: names the input in errors (`stdin`, a path).
    /// - Throws: ``VaultCore/VaultError/io(operation:path:errno:)`` on a read error;
    ///   ``SecretInputError/tooLong(source:limit:)`` beyond `limit` bytes.
    public static func read(
        fd: Int32, limit: Int = 64 << 20, untilNewline: Bool, name: String = "input"
    ) throws -> SecureBytes {
        let buffer = SecretBuffer()
        while true {
            // At the limit, one more byte tells an input of exactly `limit` bytes (end of file, or the newline
            // next) from a longer one.
            let atLimit = buffer.count >= limit
            // One byte at a time when stopping at a newline, so nothing beyond it is consumed.
            let want = untilNewline || atLimit ? 1 : min(64 << 10, limit - buffer.count)
            let result = buffer.append(upTo: want) { space in
                Posix.valueOrErrno { Glibc.read(fd, space.baseAddress, space.count) }
            }
            switch result {
            case .failure(let error): throw VaultError.io(operation: "cannot read", path: name, errno: error.code)
            case .success(0): return buffer.secureBytes()
            case .success:
                if untilNewline, buffer.last == UInt8(ascii: "\n") {
                    buffer.removeLast()
                    if buffer.last == UInt8(ascii: "\r") { buffer.removeLast() }
                    return buffer.secureBytes()
                }
                if atLimit { throw SecretInputError.tooLong(source: name, limit: limit) }
            }
        }
    }

    /// The first line of descriptor `fd` or of the file at `file` (at most 64 KiB); `nil` when neither is given.
    public static func read(fd: Int32?, file: String?) throws -> SecureBytes? {
        if let fd {
            try checkPassed(fd: fd)
            return try read(fd: fd, limit: 64 << 10, untilNewline: true, name: "file descriptor \(fd)")
        }
        if let file { return try readFirstLine(ofFile: file) }
        return nil
    }

    /// Checks that descriptor `fd`, named on the command line, was passed by the parent.
    ///
    /// A closed number is soon taken by one of the runtime's own descriptors (an eventfd or an epoll instance,
    /// opened before `main`), and reading that would fail with a puzzling "Invalid argument" or, worse, read
    /// something that is not the input. The runtime opens its descriptors close-on-exec, and a descriptor
    /// inherited through `exec` never is (exec closed those), so `FD_CLOEXEC` tells them apart.
    ///
    /// - Throws: ``SecretInputError/descriptorNotOpen(fd:)``.
    public static func checkPassed(fd: Int32) throws {
        let flags = fcntl(fd, F_GETFD)
        guard flags >= 0, flags & FD_CLOEXEC == 0 else { throw SecretInputError.descriptorNotOpen(fd: fd) }
    }

    /// Reads the first line of the file at `path` (a passphrase file).
    ///
    /// Accepts a regular file or a FIFO (a named pipe, or bash's `<(...)`, a pipe in `/dev/fd`) owned by the
    /// user or root: the files' trust rule (`Posix.distrust(ofFile:accepting:allowRoot:)`) on what `path` leads to.
    /// A symbolic link is followed (bash's `/dev/fd/63` is one) and what it leads to is checked. Refuses, with
    /// ``VaultCore/VaultError/unsafePermissions(path:reason:hint:)``, anything else (a directory, a device, a
    /// socket), one owned by another user, a FIFO that group or others may write (they could feed it their
    /// passphrase), and a regular file with any permission for group or others.
    public static func readFirstLine(ofFile path: String) throws -> SecureBytes {
        try read(ofFile: path, what: "passphrase", untilNewline: true)
    }

    /// Reads the whole file at `path` (an age identity file, at most 64 KiB), with the checks of
    /// ``readFirstLine(ofFile:)``: the user's or root's, mode 0600 or stricter (a pipe not writable by others).
    public static func readIdentityFile(_ path: String) throws -> SecureBytes {
        try read(ofFile: path, what: "identity", untilNewline: false)
    }

    static func read(ofFile path: String, what secret: String, untilNewline: Bool) throws -> SecureBytes {
        var fd = Posix.retryingEINTR { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot open", path: path, errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw VaultError.io(operation: "cannot stat", path: path, errno: errno) }
        let isFIFO = (info.st_mode & S_IFMT) == S_IFIFO
        let what = secret + (isFIFO ? " pipe" : " file")
        switch Posix.distrust(ofFile: info, accepting: [.regular, .pipe], allowRoot: true) {
        case nil: break
        case .symbolicLink, .notAccepted:  // fstat never reports a link: what the path leads to is not a file
            throw VaultError.unsafePermissions(
                path: path, reason: "the \(secret) file is \(Posix.kind(of: info.st_mode)), not a regular file or a pipe",
                hint: "give the path of a regular file of yours (chmod 600 it) or of a pipe")
        case .ownedBy(let uid):
            throw VaultError.unsafePermissions(
                path: path, reason: "the \(what) is owned by another user (uid \(uid))",
                hint: "use \(secret == "identity" ? "an identity" : "a passphrase") file of your own")
        case .writableByOthers(let mode):
            throw VaultError.unsafePermissions(
                path: path, reason: "the \(what) is writable by group or others (mode \(Posix.octal(mode)))",
                hint: "run: chmod go-w '\(path)'")
        case .accessibleByOthers(let mode):
            throw VaultError.unsafePermissions(
                path: path, reason: "the \(what) is accessible by group or others (mode \(Posix.octal(mode)))",
                hint: "run: chmod 600 '\(path)'")
        }
        if isFIFO {
            // A named pipe (e.g. bash's <(...)): open it again, blocking, so we wait for its writer
            // (a non-blocking open of a FIFO with no writer yet would read an empty passphrase).
            let blocking = Posix.retryingEINTR { open(path, O_RDONLY | O_CLOEXEC) }
            guard blocking >= 0 else { throw VaultError.io(operation: "cannot open", path: path, errno: errno) }
            // The same pipe as the one checked (the path could have been replaced in between).
            var again = stat()
            guard fstat(blocking, &again) == 0, again.st_dev == info.st_dev, again.st_ino == info.st_ino else {
                close(blocking)
                throw VaultError.unsafePermissions(
                    path: path, reason: "the \(what) was replaced while it was opened", hint: "try again")
            }
            close(fd)
            fd = blocking
        }
        return try read(fd: fd, limit: 64 << 10, untilNewline: untilNewline, name: path)
    }
}


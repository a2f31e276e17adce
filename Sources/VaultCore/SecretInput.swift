import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading secrets (passphrases, passwords, values) from descriptors and the terminal straight into
/// guarded memory, so that they never pass through a `String` or an ordinary array.
public enum SecretInput {
    /// Reads from `fd` into guarded memory: up to end of file, or up to (not including) the first newline
    /// when `untilNewline` (a trailing `\r` is dropped too). Nothing after that newline is consumed.
    ///
    /// - Throws: ``VaultError/io(operation:path:errno:)`` on a read error; ``VaultError/valueTooLarge(key:byteCount:)``
    ///   beyond `limit` bytes.
    public static func read(
        fd: Int32, limit: Int = 64 << 20, untilNewline: Bool, name: String = "input"
    ) throws -> SecureBytes {
        var capacity = untilNewline ? 256 : 64 << 10
        var buffer = SecureBytes(count: capacity) { _ in }
        var count = 0
        var sawNewline = false
        while !sawNewline {
            if count == capacity {
                guard capacity < limit else { throw VaultError.valueTooLarge(key: name, byteCount: count) }
                let old = buffer
                capacity = min(capacity * 2, limit)
                buffer = old.withUnsafeBytes { bytes in
                    SecureBytes(count: capacity) { $0.copyMemory(from: bytes) }
                }
            }
            let n: Int = buffer.withUnsafeBytes { bytes in
                let base = UnsafeMutableRawPointer(mutating: bytes.baseAddress!) + count
                // One byte at a time when stopping at a newline, so nothing beyond it is consumed.
                let want = untilNewline ? 1 : capacity - count
                return VaultFile.retryingEINTR { Glibc.read(fd, base, want) }
            }
            if n < 0 { throw VaultError.io(operation: "cannot read", path: name, errno: errno) }
            if n == 0 { break }
            if untilNewline, buffer.withUnsafeBytes({ $0[count] }) == UInt8(ascii: "\n") {
                sawNewline = true
            } else {
                count += n
            }
        }
        if untilNewline, count > 0, buffer.withUnsafeBytes({ $0[count - 1] }) == UInt8(ascii: "\r") {
            count -= 1
        }
        return buffer.withUnsafeBytes { bytes in
            SecureBytes(count: count) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<count])) }
        }
    }

    /// The secret given by a `--…-fd N` / `--…-file PATH` pair of options: the first line of descriptor `fd`
    /// or of the file at `file`; `nil` when neither is given. `option` names the pair in messages.
    public static func read(fd: Int32?, file: String?, option: String) throws -> SecureBytes? {
        if let fd {
            return try read(fd: fd, limit: 64 << 10, untilNewline: true, name: "--\(option)-fd \(fd)")
        }
        if let file { return try readFirstLine(ofFile: file) }
        return nil
    }

    /// Reads the first line of the file at `path` (a passphrase file). Refuses a file others can read.
    public static func readFirstLine(ofFile path: String) throws -> SecureBytes {
        var fd = VaultFile.retryingEINTR { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot open", path: path, errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw VaultError.io(operation: "cannot stat", path: path, errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG || (info.st_mode & S_IFMT) == S_IFIFO else {
            throw VaultError.io(operation: "cannot read", path: path, errno: EINVAL)
        }
        if (info.st_mode & S_IFMT) == S_IFIFO {
            // A named pipe (e.g. bash's <(...)): open it again, blocking, so we wait for its writer
            // (a non-blocking open of a FIFO with no writer yet would read an empty passphrase).
            let blocking = VaultFile.retryingEINTR { open(path, O_RDONLY | O_CLOEXEC) }
            guard blocking >= 0 else { throw VaultError.io(operation: "cannot open", path: path, errno: errno) }
            close(fd)
            fd = blocking
        } else if info.st_mode & 0o077 != 0 {
            throw VaultError.unsafePermissions(
                path: path, reason: "the passphrase file is accessible by group or others (mode \(octal(info.st_mode & 0o7777)))",
                hint: "run: chmod 600 '\(path)'")
        }
        return try read(fd: fd, limit: 64 << 10, untilNewline: true, name: path)
    }
}

/// The controlling terminal (`/dev/tty`), for prompts that must not echo and must not mix with stdout.
///
/// The one place that talks to a terminal: the CLI's passphrase prompts and VaultAuth's credential prompt
/// both use it. Echo is turned off with `termios` for secrets and restored on every path: normal return,
/// error, and `SIGINT`/`SIGTERM`/`SIGHUP`/`SIGQUIT` while a secret is typed (the handler restores the terminal,
/// puts back the previous disposition and re-raises the signal).
public final class Terminal {
    /// The longest accepted line, in bytes.
    public static let maximumLineByteCount = 4096

    private let fd: Int32
    public let path: String

    /// Opens the terminal at `path` (default `/dev/tty`).
    ///
    /// - Throws: ``VaultError/io(operation:path:errno:)`` with operation `cannot open terminal` when the process
    ///   has no controlling terminal (CI, cron, `setsid`) or `path` is not a terminal: callers fail at once
    ///   instead of waiting for input that never comes.
    public init(path: String = "/dev/tty") throws {
        let fd = VaultFile.retryingEINTR { open(path, O_RDWR | O_CLOEXEC | O_NOCTTY) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot open terminal", path: path, errno: errno) }
        guard isatty(fd) == 1 else {
            let code = errno
            close(fd)
            throw VaultError.io(operation: "cannot open terminal", path: path, errno: code)
        }
        self.fd = fd
        self.path = path
    }

    /// The controlling terminal, or `nil` when there is none.
    public static func controlling() -> Terminal? { try? Terminal() }

    deinit { close(fd) }

    /// Writes `text` to the terminal (never to stdout).
    public func write(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { buffer in
                VaultFile.retryingEINTR { Glibc.write(fd, buffer.baseAddress, buffer.count) }
            }
            guard n > 0 else { throw VaultError.io(operation: "cannot write to", path: path, errno: n < 0 ? errno : EIO) }
            bytes = bytes.dropFirst(n)
        }
    }

    /// Shows `prompt` and reads one line with echo on (for a user name). `nil` at end of input before any byte.
    public func readLine(prompt: String) throws -> SecureBytes? {
        try write(prompt)
        return try readLine()
    }

    /// Shows `prompt` and reads one line with echo off. `nil` at end of input before any byte.
    ///
    /// Echo goes off before the prompt appears, so nothing typed after it is ever echoed; the newline the
    /// user typed is written back afterwards.
    public func readSecret(prompt: String) throws -> SecureBytes? {
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else {
            throw VaultError.io(operation: "cannot read the settings of", path: path, errno: errno)
        }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO | ECHOE | ECHOK | ECHONL)
        quiet.c_lflag |= tcflag_t(ICANON)
        TerminalRestore.arm(fd: fd, saved: saved)
        defer { TerminalRestore.disarm() }
        guard VaultFile.retryingEINTR({ tcsetattr(fd, TCSAFLUSH, &quiet) }) == 0 else {
            throw VaultError.io(operation: "cannot turn off echo on", path: path, errno: errno)
        }
        try write(prompt)
        let line = try readLine()
        try write("\n")
        return line
    }

    /// Reads up to a newline (dropping `\r`) straight into guarded memory.
    private func readLine() throws -> SecureBytes? {
        let capacity = Self.maximumLineByteCount
        var count = 0
        var sawAny = false
        let scratch = try SecureBytes(count: capacity) { buffer in
            while true {
                var byte: UInt8 = 0
                let n = VaultFile.retryingEINTR { Glibc.read(fd, &byte, 1) }
                if n < 0 { throw VaultError.io(operation: "cannot read from", path: path, errno: errno) }
                if n == 0 { break }
                sawAny = true
                if byte == UInt8(ascii: "\n") { break }
                if byte == UInt8(ascii: "\r") { continue }
                guard count < capacity else { throw VaultError.valueTooLarge(key: path, byteCount: count + 1) }
                buffer[count] = byte
                count += 1
                byte = 0
            }
        }
        guard sawAny else { return nil }
        return scratch.withUnsafeBytes { bytes in
            SecureBytes(count: count) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<count])) }
        }
    }
}

/// The terminal state to restore from a signal handler. One secret prompt runs at a time (guarded by
/// `lock`); the handler reads only plain C memory written before the handlers are installed.
private enum TerminalRestore {
    static let lock = NSLock()
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
    nonisolated(unsafe) static let fd = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    nonisolated(unsafe) static let saved = UnsafeMutablePointer<termios>.allocate(capacity: 1)
    nonisolated(unsafe) static let previous = UnsafeMutablePointer<sigaction>.allocate(capacity: 4)

    static func index(of signal: Int32) -> Int {
        switch signal {
        case SIGINT: return 0
        case SIGTERM: return 1
        case SIGHUP: return 2
        default: return 3
        }
    }

    static func arm(fd: Int32, saved: termios) {
        lock.lock()
        Self.fd.pointee = fd
        Self.saved.pointee = saved
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = terminalRestoreHandler
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            sigaction(signal, &action, previous + index(of: signal))
        }
    }

    static func disarm() {
        _ = VaultFile.retryingEINTR { tcsetattr(fd.pointee, TCSAFLUSH, saved) }
        for signal in signals {
            sigaction(signal, previous + index(of: signal), nil)
        }
        fd.pointee = -1
        lock.unlock()
    }
}

/// Restores the terminal, puts back the previous disposition and re-raises: async-signal-safe calls only
/// (`tcsetattr`, `sigaction`, `raise`) on memory written before the handler was installed.
private func terminalRestoreHandler(_ signal: Int32) {
    _ = tcsetattr(TerminalRestore.fd.pointee, TCSANOW, TerminalRestore.saved)
    sigaction(signal, TerminalRestore.previous + TerminalRestore.index(of: signal), nil)
    raise(signal)
}

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
public final class Terminal {
    private let fd: Int32

    /// Opens `/dev/tty`, or returns `nil` when the process has no controlling terminal (CI, cron, pipes
    /// from a daemon): callers then fail at once instead of waiting for input that never comes.
    public init?() {
        let fd = VaultFile.retryingEINTR { open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY) }
        guard fd >= 0 else { return nil }
        guard isatty(fd) == 1 else {
            close(fd)
            return nil
        }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Writes `text` to the terminal (never to stdout).
    public func write(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            var offset = 0
            while offset < utf8.count {
                let n = VaultFile.retryingEINTR { Glibc.write(fd, utf8.baseAddress! + offset, utf8.count - offset) }
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// Shows `prompt` and reads one line with echo on (for a user name).
    public func readLine(prompt: String) throws -> SecureBytes {
        write(prompt)
        return try SecretInput.read(fd: fd, limit: 64 << 10, untilNewline: true, name: "/dev/tty")
    }

    /// Shows `prompt` and reads one line with echo off; the terminal's settings are restored on every path,
    /// including Ctrl-C (SIGINT, SIGTERM, SIGHUP, SIGQUIT restore them, then the signal takes its course).
    public func readSecret(prompt: String) throws -> SecureBytes {
        write(prompt)
        var original = termios()
        guard tcgetattr(fd, &original) == 0 else {
            throw VaultError.io(operation: "cannot read settings of", path: "/dev/tty", errno: errno)
        }
        var silent = original
        silent.c_lflag &= ~tcflag_t(ECHO | ECHONL)
        silent.c_lflag |= tcflag_t(ICANON)
        TerminalRestore.arm(fd: fd, settings: original)
        defer {
            _ = tcsetattr(fd, TCSAFLUSH, &original)
            TerminalRestore.disarm()
            write("\n")
        }
        guard tcsetattr(fd, TCSAFLUSH, &silent) == 0 else {
            throw VaultError.io(operation: "cannot turn off echo on", path: "/dev/tty", errno: errno)
        }
        return try SecretInput.read(fd: fd, limit: 64 << 10, untilNewline: true, name: "/dev/tty")
    }
}

/// Restores the terminal from a signal handler. Only async-signal-safe calls inside the handler.
private enum TerminalRestore {
    nonisolated(unsafe) static var fd: Int32 = -1
    nonisolated(unsafe) static var settings = termios()
    static let signals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    static func arm(fd: Int32, settings: termios) {
        Self.settings = settings
        Self.fd = fd
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { signo in
                if TerminalRestore.fd >= 0 {
                    _ = tcsetattr(TerminalRestore.fd, TCSAFLUSH, &TerminalRestore.settings)
                }
                Glibc.signal(signo, SIG_DFL)
                raise(signo)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            sigaction(signal, &action, nil)
        }
    }

    static func disarm() {
        for signal in signals { Glibc.signal(signal, SIG_DFL) }
        fd = -1
    }
}

import Foundation
import Synchronization
import VaultCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        let fd = Posix.retryingEINTR { open(path, O_RDWR | O_CLOEXEC | O_NOCTTY) }
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
                Posix.retryingEINTR { Glibc.write(fd, buffer.baseAddress, buffer.count) }
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
        return try TerminalRestore.whileArmed(fd: fd, saved: saved) { () throws -> SecureBytes? in
            guard Posix.retryingEINTR({ tcsetattr(fd, TCSAFLUSH, &quiet) }) == 0 else {
                throw VaultError.io(operation: "cannot turn off echo on", path: path, errno: errno)
            }
            try write(prompt)
            let line = try readLine()
            try write("\n")
            return line
        }
    }

    /// Reads up to a newline (dropping `\r`) straight into guarded memory.
    private func readLine() throws -> SecureBytes? {
        let capacity = Self.maximumLineByteCount
        var count = 0
        var sawAny = false
        let scratch = try SecureBytes(count: capacity) { buffer in
            while true {
                var byte: UInt8 = 0
                let n = Posix.retryingEINTR { Glibc.read(fd, &byte, 1) }
                if n < 0 { throw VaultError.io(operation: "cannot read from", path: path, errno: errno) }
                if n == 0 { break }
                sawAny = true
                if byte == UInt8(ascii: "\n") { break }
                if byte == UInt8(ascii: "\r") { continue }
                guard count < capacity else { throw SecretInputError.tooLong(source: path, limit: capacity) }
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
    static let lock = Mutex(())
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
    // Raw C memory the signal handler reads (a handler cannot take a lock); written only under `lock`.
    nonisolated(unsafe) static let fd = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    nonisolated(unsafe) static let saved = UnsafeMutablePointer<termios>.allocate(capacity: 1)
    nonisolated(unsafe) static let previous = UnsafeMutablePointer<sigaction>.allocate(capacity: 4)

    /// Runs `body` with the handlers installed, then restores the terminal and the previous dispositions.
    static func whileArmed<R>(fd: Int32, saved: termios, _ body: () throws -> R) throws -> R {
        try lock.withLock { _ in
            arm(fd: fd, saved: saved)
            defer { disarm() }
            return try body()
        }
    }

    static func index(of signal: Int32) -> Int {
        switch signal {
        case SIGINT: return 0
        case SIGTERM: return 1
        case SIGHUP: return 2
        default: return 3
        }
    }

    private static func arm(fd: Int32, saved: termios) {
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

    private static func disarm() {
        _ = Posix.retryingEINTR { tcsetattr(fd.pointee, TCSAFLUSH, saved) }
        for signal in signals {
            sigaction(signal, previous + index(of: signal), nil)
        }
        fd.pointee = -1
    }
}

/// Restores the terminal, puts back the previous disposition and re-raises: async-signal-safe calls only
/// (`tcsetattr`, `sigaction`, `raise`) on memory written before the handler was installed.
private func terminalRestoreHandler(_ signal: Int32) {
    _ = tcsetattr(TerminalRestore.fd.pointee, TCSANOW, TerminalRestore.saved)
    sigaction(signal, TerminalRestore.previous + TerminalRestore.index(of: signal), nil)
    raise(signal)
}

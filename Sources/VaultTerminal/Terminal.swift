import CVaultSystem
import FoundationEssentials
import Synchronization
import VaultCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The controlling terminal (`/dev/tty`), for prompts that must not echo and must not mix with stdout.
///
/// The one place that talks to a terminal: the CLI's passphrase, new-passphrase and value prompts and
/// VaultAuth's credential prompt all use it.
///
/// - One prompt at a time on a terminal, across processes: every prompt (``readSecret(prompt:)``,
///   ``readLine(prompt:)``, and a dialogue of several in ``exclusively(_:)``) holds an exclusive `flock` on the
///   terminal's device node (`/dev/pts/N`, found from the process's controlling terminal): in
///   `vault get a | vault put b` the second prompt appears once the first is answered, and each saves and puts
///   back the terminal's settings while no other prompt has changed them.
/// - Echo is turned off with `termios` for secrets and put back (only the bits turned off) on every path:
///   normal return, error, and a signal while a secret is typed: SIGINT, SIGTERM, SIGHUP and SIGQUIT end the
///   process by that signal, SIGTSTP (Ctrl-Z) and SIGCONT (continued after a stop) by SIGINT, as Ctrl-C; a
///   prompt never goes on after its echo came back (C part in CVaultSystem: `vault_prompt_begin`).
/// - Text written to the terminal goes through ``TerminalText``: a name or a server's realm cannot send escape
///   sequences.
public final class Terminal {
    /// The longest accepted line, in bytes.
    public static let maximumLineByteCount = 4096

    private let fd: Int32
    public let path: String
    /// The descriptor of the terminal's device node while this terminal holds the prompt turn (`-1` otherwise),
    /// and how many nested ``exclusively(_:)`` calls hold it.
    private var turnFD: Int32 = -1
    private var turnDepth = 0

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

    deinit {
        if turnFD >= 0 { close(turnFD) }
        close(fd)
    }

    /// Runs `body` holding the terminal's prompt turn: no other prompt of ours, in this process or another,
    /// asks on this terminal meanwhile (it waits). Nested calls hold the one turn. For a dialogue of several
    /// prompts (a passphrase and its confirmation, a username and its password); each prompt takes it anyway.
    ///
    /// The turn is an exclusive `flock` on the terminal's device node, released when `body` returns or the
    /// process ends. When that node cannot be opened (another user's terminal after `su`), prompts are not
    /// serialised.
    public func exclusively<R>(_ body: () throws -> R) throws -> R {
        if turnDepth == 0 {
            turnFD = TerminalTurn.acquire(terminal: fd, path: path)
        }
        turnDepth += 1
        defer {
            turnDepth -= 1
            if turnDepth == 0, turnFD >= 0 {
                close(turnFD)
                turnFD = -1
            }
        }
        return try body()
    }

    /// Writes `text` to the terminal (never to stdout), its control characters and bidirectional controls
    /// escaped but for newlines (``TerminalText/escaped(_:keepingNewlines:keepingBackslashes:)``; parts from
    /// elsewhere are best escaped whole, newlines included, before they are put in `text`).
    public func write(_ text: String) throws {
        var bytes = Array(TerminalText.escaped(text, keepingNewlines: true, keepingBackslashes: true).utf8)[...]
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
        try exclusively {
            try write(prompt)
            return try readLine()
        }
    }

    /// Shows `prompt` and reads one line with echo off. `nil` at end of input before any byte.
    ///
    /// Echo goes off before the prompt appears, so nothing typed after it is ever echoed; the newline the
    /// user typed is written back afterwards.
    public func readSecret(prompt: String) throws -> SecureBytes? {
        try readingWithoutEcho(prompt: prompt, readLine)
    }

    /// Like ``readSecret(prompt:)``, for a value of one line: when more input is waiting right after the line (a
    /// paste of several lines arrives at once; checked for `settleMilliseconds`), that input is discarded from
    /// the terminal, echo still off, so the shell never reads it as commands, and
    /// ``SecretInputError/severalLines(source:)`` is thrown.
    public func readSingleLineSecret(prompt: String, settleMilliseconds: Int32 = 60) throws -> SecureBytes? {
        try readingWithoutEcho(prompt: prompt, readLine) { line in
            var pending = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if line != nil, Posix.retryingEINTR({ poll(&pending, 1, settleMilliseconds) }) > 0 {
                // Drain what arrived (a paste may come in several chunks), then drop the queue.
                repeat { tcflush(fd, TCIFLUSH) } while Posix.retryingEINTR({ poll(&pending, 1, settleMilliseconds) }) > 0
                throw SecretInputError.severalLines(source: path)
            }
        }
    }

    /// Shows `prompt` and reads with echo off up to end of input (Ctrl-D at the start of a line), newlines
    /// kept, at most `limit` bytes: a value of several lines typed or pasted (`vault put --multiline`).
    public func readSecretUntilEnd(prompt: String, limit: Int = 1 << 20) throws -> SecureBytes {
        try readingWithoutEcho(prompt: prompt) { try SecretInput.read(fd: fd, limit: limit, untilNewline: false, name: path) }
    }

    /// One no-echo prompt at a time in this process (the C guard keeps one saved state).
    private static let secretPrompt = Mutex(())

    /// Every no-echo prompt: echo goes off before `prompt` appears (nothing typed after it is ever echoed), `read`
    /// reads, the newline the user typed is written back, and `then` runs on what was read with echo still off.
    private func readingWithoutEcho<R>(
        prompt: String, _ read: () throws -> R, then: (R) throws -> Void = { _ in }
    ) throws -> R {
        try exclusively {
            try Self.secretPrompt.withLock { _ in
                guard vault_prompt_begin(fd) == 0 else {
                    throw VaultError.io(operation: "cannot turn off echo on", path: path, errno: errno)
                }
                defer { vault_prompt_end() }
                try write(prompt)
                let value = try read()
                try write("\n")
                try then(value)
                return value
            }
        }
    }

    /// Reads up to a newline (dropping `\r`) straight into guarded memory.
    private func readLine() throws -> SecureBytes? {
        let capacity = Self.maximumLineByteCount
        var sawAny = false
        let line = try SecureBytes(capacity: capacity) { (out) throws in
            while true {
                var byte: UInt8 = 0
                let n = Posix.retryingEINTR { Glibc.read(fd, &byte, 1) }
                if n < 0 { throw VaultError.io(operation: "cannot read from", path: path, errno: errno) }
                if n == 0 { break }
                sawAny = true
                if byte == UInt8(ascii: "\n") { break }
                if byte == UInt8(ascii: "\r") { continue }
                guard out.count < capacity else { throw SecretInputError.tooLong(source: path, limit: capacity) }
                out.append(byte)
                byte = 0
            }
        }
        return sawAny ? line : nil
    }
}

/// The cross-process prompt turn: an exclusive `flock` on the device node of the controlling terminal.
///
/// Not on `/dev/tty` itself: that node is one inode for every terminal on the machine, so its lock would make
/// every user's prompts wait on each other's. Not a lock file of the user's: a per-user directory is not always
/// there (no `$XDG_RUNTIME_DIR`), and the device node is exactly "this terminal", whoever runs on it.
enum TerminalTurn {
    /// Opens the device node of `terminal` (opened at `path`) and waits for an exclusive `flock` on it.
    /// Returns the descriptor that holds the lock, or `-1` when the node is not found or cannot be opened.
    static func acquire(terminal: Int32, path: String) -> Int32 {
        guard let node = deviceNode(of: terminal, path: path) else { return -1 }
        let lockFD = Posix.retryingEINTR { open(node, O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK) }
        guard lockFD >= 0 else { return -1 }
        guard Posix.retryingEINTR({ flock(lockFD, LOCK_EX) }) == 0 else {
            close(lockFD)
            return -1
        }
        return lockFD
    }

    /// The device number `/dev/tty` has (major 5, minor 0): it stands for the controlling terminal.
    static let controllingTerminalDevice = device(major: 5, minor: 0)

    static func device(major: UInt64, minor: UInt64) -> UInt64 {
        (minor & 0xff) | ((major & 0xfff) << 8) | ((minor & ~0xff) << 12) | ((major & ~0xfff) << 32)
    }

    /// The path of the terminal device `terminal` is: `path` itself unless it is `/dev/tty`; for `/dev/tty`,
    /// the process's controlling terminal, whose device number is `tty_nr` of `/proc/self/stat`: `/dev/pts/N`
    /// for a pseudo-terminal, else one of stdin, stdout and stderr when it is that terminal. Checked by `stat`
    /// (a character device with that number).
    static func deviceNode(of terminal: Int32, path: String) -> String? {
        var opened = Glibc.stat()
        guard fstat(terminal, &opened) == 0 else { return nil }
        if UInt64(opened.st_rdev) != controllingTerminalDevice { return path }
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state ppid pgrp session tty_nr ...
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 4, let number = UInt64(fields[4]), number != 0 else { return nil }
        let major = (number >> 8) & 0xfff
        let minor = (number & 0xff) | ((number >> 12) & 0xfff00)
        let device = device(major: major, minor: minor)
        var candidates: [String] = []
        if major == 136 { candidates.append("/dev/pts/\(minor)") }
        for fd: Int32 in 0...2 {
            if let name = ttyname(fd) { candidates.append(String(cString: name)) }
        }
        for candidate in candidates {
            var info = Glibc.stat()
            if lstat(candidate, &info) == 0, (info.st_mode & S_IFMT) == S_IFCHR, UInt64(info.st_rdev) == device {
                return candidate
            }
        }
        return nil
    }
}

import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VaultCore

/// A ``CredentialPrompting`` on the controlling terminal, `/dev/tty`: the username is echoed, the password is not.
///
/// It never reads standard input, so it works when stdin and stdout are pipes, and fails at once with
/// ``AuthenticationError/noPromptAvailable(space:detail:)`` when there is no terminal (CI, a daemon, `setsid`).
/// Echo is turned off with `termios` for the password and restored on every path: normal return, error, and
/// `SIGINT`/`SIGTERM`/`SIGHUP`/`SIGQUIT` while the password is typed (the handler restores the terminal and then
/// re-raises the signal with its previous disposition).
///
/// The password is read byte by byte into a buffer that is wiped after being copied into ``SecureBytes``.
public struct TerminalCredentialPrompt: CredentialPrompting {
    /// The longest accepted username or password, in bytes.
    public static let maximumInputByteCount = 4096

    /// The terminal device; `/dev/tty` unless a test passes a pseudo-terminal.
    public let ttyPath: String

    public init(ttyPath: String = "/dev/tty") {
        self.ttyPath = ttyPath
    }

    public func credential(
        for space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) async throws -> Credential? {
        // Blocking terminal I/O runs on its own thread, not on the cooperative pool.
        let ttyPath = self.ttyPath
        return try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                do {
                    let credential = try Self.ask(
                        ttyPath: ttyPath, space: space, reason: reason, suggestedUsername: suggestedUsername)
                    continuation.resume(returning: credential)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.start()
        }
    }

    static func ask(
        ttyPath: String, space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) throws -> Credential? {
        let fd = retryingEINTR { open(ttyPath, O_RDWR | O_NOCTTY | O_CLOEXEC) }
        guard fd >= 0 else {
            let message = String(cString: strerror(errno))
            throw AuthenticationError.noPromptAvailable(
                space: space, detail: "cannot open terminal '\(ttyPath)': \(message)")
        }
        defer { _ = close(fd) }

        var header: String
        switch reason {
        case .noStoredCredential:
            header = "Log in to \(space)\n"
        case let .storedCredentialRejected(username):
            header = "The stored password for '\(username)' was rejected by \(space).\n"
        case let .enteredCredentialRejected(username):
            header = "The password for '\(username)' was rejected by \(space). Try again.\n"
        }
        try writeText(fd, header)
        if let suggestedUsername {
            try writeText(fd, "Username [\(suggestedUsername)]: ")
        } else {
            try writeText(fd, "Username: ")
        }
        guard let usernameBytes = try readLine(fd, secret: false) else { return nil }  // EOF: declined
        var username = String(decoding: usernameBytes.unprotectedBytes, as: UTF8.self)
        if username.isEmpty, let suggestedUsername { username = suggestedUsername }
        if username.isEmpty { return nil }

        // Echo goes off before the prompt appears, so nothing typed after it is ever echoed.
        let password = try withEchoOff(fd) { () throws -> SecureBytes? in
            try writeText(fd, "Password for '\(username)': ")
            return try readLine(fd, secret: true)
        }
        try writeText(fd, "\n")  // the user's newline was not echoed
        guard let password else { return nil }
        return Credential(username: username, password: password)
    }

    private static func writeText(_ fd: Int32, _ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { buffer in retryingEINTR { write(fd, buffer.baseAddress, buffer.count) } }
            guard n > 0 else {
                throw AuthenticationError.promptFailed(detail: "cannot write to the terminal: \(String(cString: strerror(errno)))")
            }
            bytes = bytes.dropFirst(n)
        }
    }

    /// Reads up to a newline into guarded memory; `nil` on end of input before any byte.
    private static func readLine(_ fd: Int32, secret: Bool) throws -> SecureBytes? {
        let capacity = maximumInputByteCount
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
        defer {
            explicit_bzero(buffer.baseAddress!, capacity)
            buffer.deallocate()
        }
        var count = 0
        var sawAny = false
        while true {
            var byte: UInt8 = 0
            let n = retryingEINTR { read(fd, &byte, 1) }
            if n < 0 {
                throw AuthenticationError.promptFailed(detail: "cannot read from the terminal: \(String(cString: strerror(errno)))")
            }
            if n == 0 {
                if !sawAny { return nil }
                break
            }
            sawAny = true
            if byte == UInt8(ascii: "\n") { break }
            if byte == UInt8(ascii: "\r") { continue }
            guard count < capacity else {
                throw AuthenticationError.promptFailed(detail: "input longer than \(capacity) bytes")
            }
            buffer[count] = byte
            count += 1
            byte = 0
        }
        return SecureBytes(count: count) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// Runs `body` with echo off on `fd`, restoring the terminal afterwards and on a terminating signal.
    private static func withEchoOff<R>(_ fd: Int32, _ body: () throws -> R) throws -> R {
        var saved = termios()
        guard tcgetattr(fd, &saved) == 0 else {
            throw AuthenticationError.promptFailed(detail: "not a terminal: \(String(cString: strerror(errno)))")
        }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO | ECHOE | ECHOK)
        TerminalRestore.arm(fd: fd, saved: saved)
        defer { TerminalRestore.disarm() }
        guard retryingEINTR({ tcsetattr(fd, TCSAFLUSH, &quiet) }) == 0 else {
            throw AuthenticationError.promptFailed(detail: "cannot turn off echo: \(String(cString: strerror(errno)))")
        }
        return try body()
    }
}

/// The terminal state to restore from a signal handler. Only one password prompt runs at a time (guarded by
/// `lock`); the handler reads only plain C memory written before the handlers are installed.
private enum TerminalRestore {
    static let lock = NSLock()
    static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
    /// fd, saved termios and previous actions, in memory the signal handler can read without the Swift runtime.
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
        _ = retryingEINTR { tcsetattr(fd.pointee, TCSAFLUSH, saved) }
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

@inline(__always)
func retryingEINTR<T: BinaryInteger>(_ body: () -> T) -> T {
    while true {
        let result = body()
        if result == -1 && errno == EINTR { continue }
        return result
    }
}

import FoundationEssentials
import Glibc
import VaultCore

/// The program an unlock prompt asks a vault's passphrase with (`vault secret-service --askpass/--pinentry`, else
/// `$SSH_ASKPASS` as OpenSSH uses it; docs/SECRET-SERVICE.md, "Unlock").
public enum PassphraseProgram: Sendable, Equatable {
    /// OpenSSH's askpass: the question as its one argument, the passphrase as the first line of its stdout and exit
    /// status 0; any other status is a cancel.
    case askpass(String)
    /// A pinentry: GnuPG's Assuan protocol on its stdin and stdout (`SETDESC`, `SETPROMPT`, `SETERROR`, `GETPIN`,
    /// the passphrase in a `D` line, percent-escaped; an `ERR` is a cancel).
    case pinentry(String)

    var name: String {
        switch self {
        case .askpass(let program), .pinentry(let program): return program
        }
    }
}

/// One run of a ``PassphraseProgram`` asking one vault's passphrase: started without waiting for it, looked at
/// between bus calls (``poll()``), ended by ``cancel()`` (a Dismiss, the client gone). The passphrase goes from
/// the pipe into guarded memory; it is never on an argument list.
final class PassphraseQuestion {
    enum Outcome {
        case running
        /// Cancelled by the user, or the program failed (what it said, never a secret).
        case cancelled(String)
        case passphrase(SecureBytes)
    }

    let program: PassphraseProgram
    private var pid: pid_t
    private var output: Int32
    private let answer = SecretBuffer()
    /// The answer is read up to this many bytes (a passphrase is at most 64 KiB, as from a file).
    static let limit = 80 << 10

    /// Starts `program` with `description` (the question) and, on a retry, `error` (why it asks again).
    init(_ program: PassphraseProgram, description: String, error: String?) throws(SecretServiceError) {
        self.program = program
        var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1]
        // Close-on-exec at once (the provider runs no other thread that spawns: nothing inherits them in between).
        guard pipe(&toChild) == 0 else { throw .failed("cannot make a pipe: \(Posix.describe(errno: errno))") }
        guard pipe(&fromChild) == 0 else {
            toChild.forEach { close($0) }
            throw .failed("cannot make a pipe: \(Posix.describe(errno: errno))")
        }
        for fd in toChild + fromChild { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var arguments = [program.name]
        var environment: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            // An askpass told SSH_ASKPASS_PROMPT=confirm (or none) asks a yes, not a passphrase.
            if !text.hasPrefix("SSH_ASKPASS_PROMPT=") { environment.append(text) }
            cursor += 1
        }
        var script: [UInt8] = []
        switch program {
        case .askpass:
            arguments.append(description + (error.map { " (\($0))" } ?? "") + ": ")
        case .pinentry:
            var lines = ["SETTITLE vault"]
            if let terminal = Self.terminal {
                // A terminal pinentry (pinentry-curses, -tty) draws on it, as gpg-agent tells it GPG_TTY.
                lines.append("OPTION ttyname=" + Self.escaped(terminal))
                if let type = Posix.environment("TERM"), !type.isEmpty { lines.append("OPTION ttytype=" + Self.escaped(type)) }
            }
            lines += ["SETDESC " + Self.escaped(description), "SETPROMPT Passphrase:"]
            if let error { lines.append("SETERROR " + Self.escaped(error)) }
            lines += ["GETPIN", "BYE"]
            script = Array(lines.map { $0 + "\n" }.joined().utf8)
        }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own session, so its own process group (a Dismiss ends a script and what it started) and no controlling
        // terminal: a terminal pinentry opens the provider's by name and draws on it, where as a background process
        // group of the provider's terminal it would be stopped (SIGTTOU). The signals the provider ignores back to
        // their defaults, none blocked. glibc's spawn.h: SETSIGDEF 0x04, SETSIGMASK 0x08, SETSID 0x80.
        var defaults = sigset_t(), none = sigset_t()
        sigemptyset(&defaults)
        sigemptyset(&none)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, 0x04 | 0x08 | 0x80)
        var child: pid_t = 0
        let spawned = posix_spawnp(&child, program.name, &actions, &attributes, argv, envp)
        close(toChild[0])
        close(fromChild[1])
        guard spawned == 0 else {
            close(toChild[1])
            close(fromChild[0])
            throw .failed("cannot run '\(program.name)': \(Posix.describe(errno: spawned))")
        }
        pid = child
        output = fromChild[0]
        _ = fcntl(output, F_SETFL, O_NONBLOCK)
        // The whole conversation at once (a few hundred bytes: the pipe takes them); pinentry answers in order.
        _ = script.withUnsafeBytes { Posix.writeAll(toChild[1], $0) }
        close(toChild[1])
    }

    deinit { cancel() }

    /// The terminal a pinentry is told to draw on: `$GPG_TTY` (as gpg-agent takes it), else the provider's own
    /// when its stdin is one (`vault secret-service` run in a terminal); `nil` for a graphical one's.
    static var terminal: String? {
        if let tty = Posix.environment("GPG_TTY"), !tty.isEmpty { return tty }
        guard isatty(0) == 1, let name = ttyname(0) else { return nil }
        return String(cString: name)
    }

    /// Ends the program (its process group: SIGTERM, then SIGKILL after a second) and forgets it.
    func cancel() {
        guard pid > 0 else { return }
        kill(-pid, SIGTERM)
        let deadline = Posix.monotonicSeconds() + 1
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Posix.monotonicSeconds() > deadline {
                kill(-pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                break
            }
            usleep(10_000)
        }
        finish()
    }

    private func finish() {
        pid = 0
        if output >= 0 { close(output) }
        output = -1
        answer.wipe()
    }

    /// What the program has answered so far: ``Outcome/running`` until it exits.
    func poll() -> Outcome {
        guard pid > 0 else { return .cancelled("ended") }
        drain()
        guard answer.count <= Self.limit else {
            cancel()  // it would block on the full pipe for ever
            return .cancelled("'\(program.name)' answered more than \(Self.limit) bytes")
        }
        var status: Int32 = 0
        let done = waitpid(pid, &status, WNOHANG)
        guard done == pid else {
            if done < 0 && errno != EINTR {
                finish()
                return .cancelled("lost the program: \(Posix.describe(errno: errno))")
            }
            return .running
        }
        drain()
        defer { finish() }
        guard answer.count <= Self.limit else { return .cancelled("'\(program.name)' answered more than \(Self.limit) bytes") }
        // WIFEXITED and WEXITSTATUS, which Swift does not import.
        let exited = status & 0x7F == 0, code = (status >> 8) & 0xFF
        switch program {
        case .askpass:
            guard exited && code == 0 else { return .cancelled("'\(program.name)' ended with status \(exited ? code : 128 + status & 0x7F)") }
            return answer.withUnsafeBytes { bytes in
                var end = bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
                if end > 0, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                return .passphrase(SecureBytes(count: end) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<end])) })
            }
        case .pinentry:
            return answer.withUnsafeBytes { Self.pinentryAnswer($0, program: program.name) }
        }
    }

    /// Reads what is there (non-blocking), up to the limit and one byte past it.
    private func drain() {
        while output >= 0, answer.count <= Self.limit {
            let read = answer.append(upTo: 4096) { space in
                Posix.valueOrErrno { Glibc.read(output, space.baseAddress, space.count) }
            }
            guard case .success(let count) = read, count > 0 else { return }
        }
    }

    /// The passphrase of a pinentry's answers: the `D` line's data, percent-decoded straight into guarded memory;
    /// an `ERR` without it is a cancel (GPG_ERR_CANCELED, or any failure), and no `OK` at all is no pinentry.
    static func pinentryAnswer(_ bytes: UnsafeRawBufferPointer, program: String) -> Outcome {
        var start = 0, sawOK = false, error: String?
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            let line = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            start = end + 1
            if line.starts(with: Array("D ".utf8)) {
                let data = UnsafeRawBufferPointer(rebasing: line[2...])
                guard let decoded = percentDecoded(data) else { return .cancelled("'\(program)' sent a malformed D line") }
                return .passphrase(decoded)
            }
            if line.starts(with: Array("OK".utf8)) { sawOK = true }
            if line.starts(with: Array("ERR".utf8)), error == nil { error = String(decoding: line.prefix(200), as: UTF8.self) }
        }
        if let error { return .cancelled("'\(program)' answered \(error)") }
        guard sawOK else { return .cancelled("'\(program)' did not speak the pinentry protocol") }
        return .passphrase(SecureBytes(count: 0) { _ in })  // OK without data: an empty passphrase
    }

    /// Assuan's percent escapes undone, into guarded memory; `nil` for a malformed escape.
    static func percentDecoded(_ data: UnsafeRawBufferPointer) -> SecureBytes? {
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var count = 0, index = 0
        while index < data.count {
            if data[index] == UInt8(ascii: "%") {
                guard index + 2 < data.count, hex(data[index + 1]) != nil, hex(data[index + 2]) != nil else { return nil }
                index += 3
            } else {
                index += 1
            }
            count += 1
        }
        return SecureBytes(count: count) { out in
            var from = 0, to = 0
            while from < data.count {
                if data[from] == UInt8(ascii: "%") {
                    out[to] = hex(data[from + 1])! << 4 | hex(data[from + 2])!
                    from += 3
                } else {
                    out[to] = data[from]
                    from += 1
                }
                to += 1
            }
        }
    }

    /// Text for an Assuan command's argument: `%`, CR and LF percent-escaped.
    static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "%": result += "%25"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}

import CVaultSystem
import FoundationEssentials
import VaultCore
import VaultSodium
#if canImport(Glibc)
import Glibc
#endif

/// Where `vault clip` puts a value: a clipboard tool (wl-copy on Wayland, xclip or xsel on X11), fed on a pipe,
/// or OSC 52 written to the terminal (the terminal, or tmux, sets its clipboard; works over ssh).
package enum Clipboard: String, CaseIterable, Sendable {
    case wayland = "wl-copy", xclip, xsel, osc52 = "osc52"

    /// The tool for this session: OSC 52 when asked for; else wl-copy under Wayland, xclip or xsel under X11.
    ///
    /// - Throws: ``ClipboardError/noTool`` in a graphical session without a tool for it,
    ///   ``ClipboardError/noDisplay(installed:)`` outside one (with the tools installed, which need one).
    package static func choose(osc52: Bool) throws -> Clipboard {
        if osc52 { return .osc52 }
        let wayland = Posix.environment("WAYLAND_DISPLAY").map { !$0.isEmpty } ?? false
        let x11 = Posix.environment("DISPLAY").map { !$0.isEmpty } ?? false
        if wayland, executableOnPath("wl-copy") { return .wayland }
        if x11, executableOnPath("xclip") { return .xclip }
        if x11, executableOnPath("xsel") { return .xsel }
        guard wayland || x11 else {
            throw ClipboardError.noDisplay(installed: ["wl-copy", "xclip", "xsel"].filter(executableOnPath))
        }
        throw ClipboardError.noTool
    }

    var copyArguments: [String] {
        switch self {
        case .wayland: return ["wl-copy"]
        case .xclip: return ["xclip", "-selection", "clipboard", "-in"]
        case .xsel: return ["xsel", "--clipboard", "--input"]
        case .osc52: return []
        }
    }

    /// What prints the clipboard, for the check before clearing; nil for OSC 52 (a terminal cannot be asked).
    var readArguments: [String]? {
        switch self {
        case .wayland: return ["wl-paste", "--no-newline"]
        case .xclip: return ["xclip", "-selection", "clipboard", "-out"]
        case .xsel: return ["xsel", "--clipboard", "--output"]
        case .osc52: return nil
        }
    }

    var clearArguments: [String]? {
        switch self {
        case .wayland: return ["wl-copy", "--clear"]
        case .xclip: return ["xclip", "-selection", "clipboard", "-in", "/dev/null"]
        case .xsel: return ["xsel", "--clipboard", "--clear"]
        case .osc52: return nil
        }
    }

    /// Puts `value` on the clipboard. A tool gets it on its stdin, never on its command line.
    func copy(_ value: SecureBytes) throws {
        if self == .osc52 { return try Self.writeOSC52(value) }
        let status = try Self.run(copyArguments, input: value)
        guard status == 0 else {
            throw ClipboardError.toolFailed(tool: rawValue, status: status)
        }
    }

    /// The clipboard's content (at most `limit` bytes; nil when it is larger, unreadable or empty).
    func read(limit: Int) -> SecureBytes? {
        guard let arguments = readArguments else { return nil }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        defer { if ends[0] >= 0 { close(ends[0]) } }
        guard let pid = try? Self.spawn(arguments, input: -1, output: ends[1], detach: false) else {
            close(ends[1])
            return nil
        }
        close(ends[1])
        let buffer = SecretBuffer()
        var tooLarge = false
        while true {
            let result: Result<Int, Posix.Errno> = buffer.append(upTo: 65_536) { region in
                Posix.valueOrErrno { Glibc.read(ends[0], region.baseAddress, region.count) }
            }
            guard case let .success(count) = result, count > 0 else { break }
            if buffer.count > limit { tooLarge = true; break }
        }
        close(ends[0])
        ends[0] = -1
        let status = Self.wait(pid, seconds: 10)
        guard status == 0, !tooLarge, buffer.count > 0 else { return nil }
        return buffer.secureBytes()
    }

    /// Empties the clipboard.
    func clear() {
        guard let arguments = clearArguments else { return }
        _ = try? Self.run(arguments, input: nil)
    }

    // MARK: Processes

    /// The environment the tools get: what a clipboard needs, never VAULT_PASSPHRASE (a clipboard tool keeps
    /// running as the clipboard's owner).
    static var toolEnvironment: [String] {
        ["PATH", "HOME", "DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "LANG", "LC_ALL", "LC_CTYPE"]
            .compactMap { name in Posix.environment(name).map { "\(name)=\($0)" } }
    }

    /// Starts `arguments` in a session of its own (the clipboard then outlives the terminal), feeds `input` on
    /// its stdin and waits for it (10 s at most).
    static func run(_ arguments: [String], input: SecureBytes?) throws -> Int32 {
        var ends: [Int32] = [-1, -1]
        if input != nil {
            guard pipe(&ends) == 0 else { throw VaultError.io(operation: "cannot create a pipe for", path: arguments[0], errno: errno) }
        }
        let pid: pid_t
        do {
            pid = try spawn(arguments, input: ends[0], output: -1, detach: true)
        } catch {
            for fd in ends where fd >= 0 { close(fd) }
            throw error
        }
        if let input {
            close(ends[0])
            let previous = signal(SIGPIPE, SIG_IGN)
            _ = input.withUnsafeBytes { Posix.writeAll(ends[1], $0) }
            close(ends[1])
            signal(SIGPIPE, previous)
        }
        return wait(pid, seconds: 10)
    }

    static func spawn(_ arguments: [String], input: Int32, output: Int32, detach: Bool) throws -> pid_t {
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = toolEnvironment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        let pid = vault_spawn_tool(arguments[0], argv, envp, input, output, -1, detach ? 1 : 0)
        guard pid > 0 else {
            throw ClipboardError.cannotRun(tool: arguments[0], errno: errno)
        }
        return pid
    }

    /// Waits for `pid` at most `seconds`, then kills it; its exit status, or 128 + signal.
    static func wait(_ pid: pid_t, seconds: Double) -> Int32 {
        let deadline = Posix.monotonicSeconds() + seconds
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { return 127 }
            if Posix.monotonicSeconds() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                break
            }
            usleep(5_000)
        }
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    static func executableOnPath(_ name: String) -> Bool {
        let path = Posix.environment("PATH") ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains { access("\($0)/\(name)", X_OK) == 0 }
    }

    // MARK: OSC 52

    /// `ESC ] 52 ; c ; BASE64 BEL` to the controlling terminal, built in guarded memory.
    static func writeOSC52(_ value: SecureBytes) throws {
        let tty = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else {
            throw ClipboardError.noTerminal
        }
        defer { close(tty) }
        let sequence = SecretBuffer()
        sequence.reserve(8 + (value.count + 2) / 3 * 4)
        Array("\u{1B}]52;c;".utf8).withUnsafeBytes { sequence.append($0) }
        value.withUnsafeBytes { Base64.encode($0, into: sequence) }
        [UInt8(0x07)].withUnsafeBytes { sequence.append($0) }
        let code = sequence.withUnsafeBytes { Posix.writeAll(tty, $0) }
        guard code == 0 else { throw VaultError.io(operation: "cannot write to", path: "/dev/tty", errno: code) }
    }
}

/// Why `vault clip` could not copy (exit 1).
enum ClipboardError: Error, CLIReportable, CustomStringConvertible {
    /// A graphical session, and no tool for it.
    case noTool
    /// No graphical session (neither WAYLAND_DISPLAY nor DISPLAY); `installed`: the clipboard tools found anyway.
    case noDisplay(installed: [String])
    case toolFailed(tool: String, status: Int32)
    case cannotRun(tool: String, errno: Int32)
    case noTerminal

    var exitCode: Int32 { Exit.failure }
    var code: String { "no_clipboard" }
    var description: String {
        switch self {
        case .noTool: return "cannot copy to the clipboard: no clipboard tool found (wl-copy for Wayland, xclip or xsel for X11)"
        case .noDisplay: return "cannot copy to the clipboard: there is no display to copy to (neither WAYLAND_DISPLAY nor DISPLAY is set)"
        case let .toolFailed(tool, status): return "cannot copy to the clipboard: \(tool) failed (exit \(status))"
        case let .cannotRun(tool, code): return "cannot run '\(tool)': \(String(cString: strerror(code)))"
        case .noTerminal: return "cannot copy with OSC 52: there is no terminal (/dev/tty)"
        }
    }
    var hint: String? {
        switch self {
        case let .noDisplay(installed) where !installed.isEmpty:
            return "\(installed.joined(separator: " and ")) \(installed.count == 1 ? "copies" : "copy") to a graphical session's clipboard: run vault clip in that session; or use --osc52 in a terminal that supports it (also over ssh)"
        case .noTool, .noDisplay, .cannotRun:
            return "install wl-clipboard, xclip or xsel; or use --osc52 in a terminal that supports it (also over ssh)"
        case .toolFailed: return "is the graphical session's DISPLAY or WAYLAND_DISPLAY reachable from here?"
        case .noTerminal: return nil
        }
    }
}

/// Base64 (RFC 4648, with padding) straight into guarded memory.
enum Base64 {
    static func encode(_ bytes: UnsafeRawBufferPointer, into output: SecretBuffer) {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var quad: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
        var index = 0
        while index < bytes.count {
            let b0 = bytes[index]
            let b1 = index + 1 < bytes.count ? bytes[index + 1] : 0
            let b2 = index + 2 < bytes.count ? bytes[index + 2] : 0
            quad.0 = alphabet[Int(b0 >> 2)]
            quad.1 = alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)]
            quad.2 = index + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "=")
            quad.3 = index + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "=")
            withUnsafeBytes(of: &quad) { output.append($0) }
            index += 3
        }
        quad = (0, 0, 0, 0)
    }
}

/// The check `vault clip` leaves behind: after the delay, the clipboard is cleared if it still holds the value.
/// The value itself is not kept: a keyed BLAKE2b of it under a random key, both handed over on a pipe (never on
/// a command line or in the environment).
enum ClipboardWatch {
    static let limit = 64 << 20

    /// Starts `vault clip-clear` in a session of its own, and returns at once.
    static func start(_ clipboard: Clipboard, value: SecureBytes, seconds: Int) throws {
        let key = SecureBytes.random(count: 32)
        let token = SecureBytes(count: 64) { out in
            key.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 32) }
            let digest = fingerprint(value, key: key)
            digest.withUnsafeBytes { (out.baseAddress! + 32).copyMemory(from: $0.baseAddress!, byteCount: 32) }
        }
        var executable = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &executable, executable.count - 1)
        guard length > 0 else { throw VaultError.io(operation: "cannot find", path: "/proc/self/exe", errno: errno) }
        let path = String(cString: executable)
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw VaultError.io(operation: "cannot create a pipe for", path: "clip-clear", errno: errno) }
        defer { for fd in ends where fd >= 0 { close(fd) } }
        _ = try Clipboard.spawn(
            [path, "clip-clear", "--after", String(seconds), "--clipboard", clipboard.rawValue],
            input: ends[0], output: -1, detach: true)
        close(ends[0])
        ends[0] = -1
        _ = token.withUnsafeBytes { Posix.writeAll(ends[1], $0) }  // 64 bytes: within any pipe's buffer
    }

    static func fingerprint(_ value: SecureBytes, key: SecureBytes) -> [UInt8] {
        value.withUnsafeBytes { bytes in key.withUnsafeBytes { Sodium.blake2b(bytes, key: $0, outputByteCount: 32) } }
    }
}

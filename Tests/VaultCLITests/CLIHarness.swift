import Foundation
import Testing
import VaultCore
import VaultTestSupport

/// Runs the built `vault` binary (next to the test bundle) and captures stdout, stderr and the exit code.
struct CLIResult {
    var status: Int32
    var stdout: Data
    var stderr: String
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

enum CLI {
    /// The directory of the test executable: SwiftPM puts the package's executables there too.
    static let binDirectory: URL = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // The test binary may sit inside a .xctest bundle directory.
        while dir.path != "/" && !FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("vault").path) {
            dir = dir.deletingLastPathComponent()
        }
        return dir
    }()

    static var vault: String { binDirectory.appendingPathComponent("vault").path }

    /// SIGPIPE ignored in the test process, once: a write to a child that exited is an error, not the end of the run.
    static let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Runs `executable` with `arguments`; `stdin` is written then closed. The environment is minimal and
    /// explicit; the process is started in a new session (`setsid`) so it never has a controlling terminal.
    static func run(
        _ arguments: [String], stdin: Data = Data(), environment: [String: String] = [:]
    ) throws -> CLIResult {
        try exec(vault, arguments, stdin: stdin, environment: environment)
    }

    static func exec(
        _ executable: String, _ arguments: [String], stdin: Data = Data(),
        environment: [String: String] = [:], timeout: TimeInterval = 60
    ) throws -> CLIResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        process.arguments = ["-w", executable] + arguments
        // No agent unless a test names its own socket: an agent on the default socket must not serve the tests.
        var env = [
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": NSTemporaryDirectory(), "LANG": "C.UTF-8",
            "VAULT_AGENT_SOCK": "/nonexistent/vault-tests/agent.sock", "VAULT_AGENT": "off",
        ]
        env.merge(environment) { $1 }
        process.environment = env
        let input = Pipe(), output = Pipe(), error = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = error
        try process.run()
        // A hung child must fail the test, not hang the suite: kill it after `timeout`.
        let pid = process.processIdentifier
        let killer = DispatchWorkItem { killTree(pid) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        defer { killer.cancel() }
        // Feed stdin from another thread, so a child that answers before reading everything cannot block the
        // drain below, and a child that stops reading (a size cap) ends the write with EPIPE, not SIGPIPE.
        _ = ignoreBrokenPipes
        nonisolated(unsafe) var errData = Data()
        let group = DispatchGroup()
        group.enter()
        let writer = input.fileHandleForWriting
        DispatchQueue.global().async {
            stdin.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(writer.fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    guard written > 0 else { break }
                    offset += written
                }
            }
            try? writer.close()
            group.leave()
        }
        group.enter()
        DispatchQueue.global().async {
            errData = error.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitForExit()
        if process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL {
            Issue.record("process timed out after \(timeout) s: \(arguments)")
        }
        return CLIResult(status: process.terminationStatus, stdout: outData, stderr: String(decoding: errData, as: UTF8.self))
    }

    /// `/bin/sh -c script` with `$VAULT` set to the binary.
    static func shell(_ script: String, stdin: Data = Data(), environment: [String: String] = [:]) throws -> CLIResult {
        var env = environment
        env["VAULT"] = vault
        return try exec("/bin/sh", ["-c", script], stdin: stdin, environment: env)
    }
}

/// The passphrase prompt for `vaultPath` as a pseudo-terminal transcript shows it once answered (its marker
/// lower-cased): the vault's path with `$HOME` (`home`, the harness's default) written `~`.
func answeredPassphrasePrompt(_ vaultPath: String, home: String = NSTemporaryDirectory(), caller: String? = nil) -> String {
    let prefix = home.hasSuffix("/") ? home : home + "/"
    let shown = vaultPath.hasPrefix(prefix) ? "~/" + vaultPath.dropFirst(prefix.count) : vaultPath
    return "vault passphrase for \(shown)\(caller.map { " (\($0))" } ?? ""): "
}

/// A private temporary directory (0700) with a vault path and a passphrase file inside, removed at deinit.
final class Sandbox: @unchecked Sendable {
    let directory: String
    let vaultPath: String
    let passphraseFile: String

    init(passphrase: String = "correct horse battery staple") throws {
        directory = try makePrivateDirectory(prefix: "vault-cli")
        vaultPath = directory + "/vaults/test.vault"
        passphraseFile = directory + "/passphrase"
        try write(passphrase + "\n", to: passphraseFile)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func write(_ text: String, to path: String, mode: Int = 0o600) throws {
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode])
    }

    /// The environment for the CLI: this sandbox's vault, the cheap test KDF.
    var environment: [String: String] {
        ["VAULT_PATH": vaultPath, "VAULT_TESTING_INSECURE_KDF": "1", "VAULT_AGENT": "off"]
    }

    /// Runs `vault` with the sandbox's vault and passphrase file.
    @discardableResult
    func vault(_ arguments: [String], stdin: Data = Data(), passphrase: Bool = true, extraEnvironment: [String: String] = [:]) throws -> CLIResult {
        var args = arguments
        if passphrase { args += ["--passphrase-file", passphraseFile] }
        return try CLI.run(args, stdin: stdin, environment: environment.merging(extraEnvironment) { $1 })
    }

    func initVault() throws {
        let result = try vault(["init"])
        #expect(result.status == 0, "init failed: \(result.stderr)")
    }
}

/// Kills `pid` and everything below it. `setsid` forks when it is started as a process-group leader (as
/// Process starts it), so the real child sits in a session of its own: walk /proc's children lists, deepest
/// first, and kill each process and its group.
func killTree(_ pid: pid_t) {
    let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
    for child in children.split(separator: " ").compactMap({ pid_t($0) }) { killTree(child) }
    kill(-pid, SIGKILL)
    kill(pid, SIGKILL)
}

/// Helpers shared by the adversarial CLI suites (crash, fault injection, concurrency, hygiene).
enum Adversarial {
    static let passphrase = "correct horse battery staple"

    static func environmentInt(_ name: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? value
    }

    /// Opens the vault at `path` with the library (cheap test KDF) and returns its entries as strings.
    /// Either format version (``VaultOpener``), without rollback protection (the test reads, it is no replica).
    static func contents(of path: String, passphrase: String = passphrase) throws -> [String: String] {
        let store = try VaultOpener.open(path: path, passphrase: SecureBytes(string: passphrase), options: .insecureForTesting)
        defer { store.close() }
        var out = [String: String]()
        for key in try store.keys() { out[key] = try store.getString(key) }
        return out
    }

    /// Temporary files of the vault's writers (`.NAME.<16 hex>.tmp`) in the vault's directory.
    static func strayTemporaryFiles(_ vaultPath: String) -> [String] {
        let url = URL(fileURLWithPath: vaultPath)
        let prefix = "." + url.lastPathComponent + "."
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)) ?? []
        return names.filter { $0.hasPrefix(prefix) && $0.hasSuffix(".tmp") }.sorted()
    }

    /// Starts `vault` with `arguments`, stdin from `stdinFile` (or /dev/null), stdout and stderr discarded.
    static func start(
        _ arguments: [String], executable: String = CLI.vault, stdinFile: String? = nil,
        environment: [String: String], stderrFile: String? = nil
    ) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        // No agent unless a test names its own socket: an agent on the default socket must not serve the tests.
        var env = [
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": NSTemporaryDirectory(), "LANG": "C.UTF-8",
            "VAULT_AGENT_SOCK": "/nonexistent/vault-tests/agent.sock", "VAULT_AGENT": "off",
        ]
        env.merge(environment) { $1 }
        process.environment = env
        process.standardInput = stdinFile.flatMap { FileHandle(forReadingAtPath: $0) } ?? FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        if let stderrFile {
            FileManager.default.createFile(atPath: stderrFile, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: stderrFile)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        return process
    }
}

/// Seconds on the monotonic clock, for measuring waits.
func monotonicNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

extension Trait where Self == TimeLimitTrait {
    /// The time limit of the suites that drive child processes. Their tests block a thread of Swift's
    /// cooperative pool while a child runs (2 threads on a 2-core machine): a test that has started may wait
    /// minutes for a thread behind long ones (ConcurrencyTests, git's t0303, the registry), and its limit
    /// counts from its start. 10 minutes still ends a hang; CI's whole second run takes about 4.
    static var processTimeLimit: Self { .timeLimit(.minutes(10)) }
}

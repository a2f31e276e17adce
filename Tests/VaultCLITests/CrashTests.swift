import Foundation
import Testing
import VaultCore

/// Helpers shared by the adversarial CLI suites (crash, fault injection, concurrency, hygiene).
enum Adversarial {
    static let passphrase = "correct horse battery staple"

    static func environmentInt(_ name: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment[name].flatMap { Int($0) } ?? value
    }

    /// Opens the vault at `path` with the library (cheap test KDF) and returns its entries as strings.
    static func contents(of path: String, passphrase: String = passphrase) throws -> [String: String] {
        let store = SecureKeyValueStore(path: path, options: .insecureForTesting)
        try store.open(with: SecureBytes(string: passphrase), createIfMissing: false)
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
        var env = ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": NSTemporaryDirectory(), "LANG": "C.UTF-8"]
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

/// kill -9 at random moments of `vault put`: the vault always opens with the correct passphrase and holds the
/// old or the new value; temporary files a killed writer leaves are removed by the next write.
///
/// CI runs 200 kills; `VAULT_CRASH_ITERATIONS=1000 swift test --filter CrashTests` runs the long version.
@Suite(.timeLimit(.minutes(10))) struct CrashTests {
    @Test func sigkillDuringPutLeavesTheOldOrTheNewVault() throws {
        let iterations = Adversarial.environmentInt("VAULT_CRASH_ITERATIONS", default: 200)
        let box = try Sandbox()
        try box.initVault()
        let valueFile = box.directory + "/value"
        let arguments = ["put", "k", "--passphrase-file", box.passphraseFile]
        try box.write("v0", to: valueFile)
        #expect(try box.vault(["put", "k"], stdin: Data("v0".utf8)).status == 0)

        // The kill window: 0 to 1.1 times the duration of an uninterrupted put (process start included).
        var durations = [Double]()
        for _ in 0..<5 {
            let started = monotonicNow()
            let process = try Adversarial.start(arguments, stdinFile: valueFile, environment: box.environment)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
            durations.append(monotonicNow() - started)
        }
        let window = durations.sorted()[2] * 1.1

        var old = "v0"
        var (keptOld, tookNew, finished, strayCount, cleanups) = (0, 0, 0, 0, 0)
        var generator = SystemRandomNumberGenerator()
        for iteration in 1...iterations {
            // Values of varying size, so that the file grows and shrinks across 256-byte blocks.
            let new = "v\(iteration)-" + String(repeating: "x", count: Int.random(in: 0..<600, using: &generator))
            try box.write(new, to: valueFile)
            let process = try Adversarial.start(arguments, stdinFile: valueFile, environment: box.environment)
            usleep(UInt32(Double.random(in: 0..<window, using: &generator) * 1_000_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let killed = process.terminationReason == .uncaughtSignal
            if !killed {
                finished += 1
                #expect(process.terminationStatus == 0, "iteration \(iteration): put failed on its own")
            }

            let contents: [String: String]
            do {
                contents = try Adversarial.contents(of: box.vaultPath)
            } catch {
                Issue.record("iteration \(iteration): the vault does not open after kill -9: \(error)")
                break
            }
            let value = contents["k"]
            #expect(value == old || value == new, "iteration \(iteration): neither the old nor the new value")
            #expect(contents.count == 1 + (cleanups > 0 ? 1 : 0))
            if value == new {
                if killed { tookNew += 1 }
                old = new
            } else {
                #expect(killed, "a put that exited 0 must have written its value")
                keptOld += 1
            }
            // A killed writer may leave its temporary file; the next write (here: another process's) removes it.
            let stray = Adversarial.strayTemporaryFiles(box.vaultPath)
            if !stray.isEmpty {
                strayCount += 1
                cleanups += 1
                let put = try box.vault(["put", "cleanup"], stdin: Data("\(iteration)".utf8))
                #expect(put.status == 0)
                #expect(Adversarial.strayTemporaryFiles(box.vaultPath) == [], "the next write left stray files")
            }
        }
        print("""
            CrashTests: \(iterations) kill -9 of 'vault put' (window \(Int(window * 1000)) ms): \
            \(keptOld) old, \(tookNew) new after the kill, \(finished) finished first; \
            \(strayCount) left a temporary file, all removed by the next write
            """)
        #expect(keptOld > 0, "no kill landed before the rename: the window is wrong")
        #expect(tookNew + finished > 0)
        // Finally a clean put still works and the lock is free.
        #expect(try box.vault(["put", "k"], stdin: Data("final".utf8)).status == 0)
        #expect(try Adversarial.contents(of: box.vaultPath)["k"] == "final")
    }
}

func monotonicNow() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

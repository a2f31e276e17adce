import Foundation
import Testing
import VaultCore
import VaultTestSupport

/// Many writer processes and readers at once; the lock holder killed while it holds the lock.
/// `VAULT_CONCURRENCY_WRITERS` and `VAULT_CONCURRENCY_PUTS` (default 8 × 150) scale the first test. Each put is a
/// debug-built process (about 0.1 s here), all serialised by the lock: 8 × 250 took 216 s alone and ran past the
/// writers' 280 s limit in a loaded CI run; 1,200 puts keep the contention and leave the limit twice the need.
@Suite(.serialized, .processTimeLimit) struct ConcurrencyTests {
    final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    /// Runs `body` on a dedicated thread: blocking process waits must not occupy the cooperative pool (two
    /// threads on a two-core machine: readers spinning there would starve the writers).
    final class Box<T>: @unchecked Sendable { var value: T? }
    static func onThread<T>(_ group: DispatchGroup, _ body: @escaping @Sendable () throws -> T) -> Box<Result<T, Error>> {
        let box = Box<Result<T, Error>>()
        group.enter()
        Thread.detachNewThread {
            box.value = Result { try body() }
            group.leave()
        }
        return box
    }

    @Test func writersLoseNothingAndReadersNeverSeeATornFile() throws {
        let writers = Adversarial.environmentInt("VAULT_CONCURRENCY_WRITERS", default: 8)
        let puts = Adversarial.environmentInt("VAULT_CONCURRENCY_PUTS", default: 150)
        let box = try Sandbox()
        try box.initVault()
        let done = Flag()
        let started = monotonicNow()
        // Writers: one shell loop each, started from Swift (the runner's blocked SIGCHLD breaks `sh`'s wait).
        let writerGroup = DispatchGroup()
        let writerBoxes = (1...writers).map { writer in
            Self.onThread(writerGroup) {
                try CLI.exec("/bin/sh", ["-c", """
                    i=1; while [ $i -le \(puts) ]; do
                      printf v | "$VAULT" put w\(writer)-$i --passphrase-file '\(box.passphraseFile)' || echo "FAIL $i $?"
                      i=$((i+1))
                    done
                    """], environment: box.environment.merging(["VAULT": CLI.vault, "VAULT_LOCK_TIMEOUT": "60"]) { $1 },
                    timeout: 400)
            }
        }
        // Readers: two run `vault list`, two open the file with the library, until the writers finish.
        let readerGroup = DispatchGroup()
        let readerBoxes = (0..<4).map { reader in
            Self.onThread(readerGroup) { () throws -> (reads: Int, errors: [String]) in
                var (reads, errors, last) = (0, [String](), 0)
                while !done.isSet {
                    usleep(20_000)
                    reads += 1
                    if reader < 2 {
                        let list = try box.vault(["list"])
                        if list.status != 0 { errors.append("list exit \(list.status): \(list.stderr)"); continue }
                        let names = list.stdoutText.split(separator: "\n")
                        if names.count < last { errors.append("list went backwards: \(names.count) < \(last)") }
                        last = names.count
                    } else {
                        do {
                            let count = try Adversarial.contents(of: box.vaultPath).count
                            if count < last { errors.append("open went backwards: \(count) < \(last)") }
                            last = count
                        } catch {
                            errors.append("open: \(error)")
                        }
                    }
                }
                return (reads, errors)
            }
        }
        writerGroup.wait()
        done.set()
        readerGroup.wait()
        let writerResults = try writerBoxes.map { try #require($0.value).get() }
        let readerResults = try readerBoxes.map { try #require($0.value).get() }
        for result in writerResults {
            #expect(result.status == 0)
            #expect(!result.stdoutText.contains("FAIL"), "\(result.stdoutText) \(result.stderr)")
        }
        let reads = readerResults.map(\.reads).reduce(0, +)
        for result in readerResults { #expect(result.errors.isEmpty, "\(result.errors.prefix(3))") }
        let keys = try Adversarial.contents(of: box.vaultPath).keys.sorted()
        let expected = (1...writers).flatMap { w in (1...puts).map { "w\(w)-\($0)" } }.sorted()
        #expect(keys.count == writers * puts)
        #expect(keys == expected)
        print("Concurrency: \(writers) writers × \(puts) puts → \(keys.count) keys; \(reads) reads by 4 readers, 0 errors expected; \(Int(monotonicNow() - started)) s")
    }

    /// A held lock makes a writer wait and fail busy (exit 5) after its timeout; killing the holder with
    /// SIGKILL frees the lock at once (the kernel drops a dead process's flock) for a writer already waiting.
    @Test func killingTheLockHolderFreesTheLockAtOnce() throws {
        let box = try Sandbox()
        try box.initVault()
        let holder = try Adversarial.start(
            ["-x", box.vaultPath + ".lock", "sleep", "120"], executable: "/usr/bin/flock", environment: [:])
        defer { if holder.isRunning { kill(holder.processIdentifier, SIGKILL) } }
        for _ in 0..<200 {
            if try CLI.exec("/usr/bin/flock", ["-n", box.vaultPath + ".lock", "true"]).status != 0 { break }
            usleep(20_000)
        }
        let waitStarted = monotonicNow()
        let busy = try box.vault(["put", "k"], stdin: Data("v".utf8), extraEnvironment: ["VAULT_LOCK_TIMEOUT": "1"])
        let waited = monotonicNow() - waitStarted
        #expect(busy.status == 5)
        #expect(busy.stderr.hasPrefix("vault: vault '\(box.vaultPath)' is busy"))
        #expect(waited >= 1.0 && waited < 10, "waited \(waited) s for a 1 s timeout")

        let waiterValue = box.directory + "/waiter"
        try box.write("waiter", to: waiterValue)
        // Wait until the waiter opens the lock file (inotify: works for any user, unlike /proc/PID/fd of a
        // non-dumpable process): it is then at the lock, retrying while the holder lives.
        let lockOpened = try OpenWatch(path: box.vaultPath + ".lock")
        let waiter = try Adversarial.start(
            ["put", "k", "--passphrase-file", box.passphraseFile], stdinFile: waiterValue,
            environment: box.environment.merging(["VAULT_LOCK_TIMEOUT": "30"]) { $1 })
        #expect(lockOpened.wait(seconds: 30), "the waiter never opened the lock file")
        #expect(waiter.isRunning, "the waiter did not wait for the lock")
        // flock(1) forks `sleep`, which inherits the locked descriptor: kill the whole holder (both).
        let children = (try? String(contentsOfFile: "/proc/\(holder.processIdentifier)/task/\(holder.processIdentifier)/children", encoding: .utf8)) ?? ""
        let killedAt = monotonicNow()
        for child in children.split(separator: " ").compactMap({ Int32($0) }) { kill(child, SIGKILL) }
        kill(holder.processIdentifier, SIGKILL)
        waiter.waitForExit()
        let freedAfter = monotonicNow() - killedAt
        #expect(waiter.terminationStatus == 0)
        #expect(freedAfter < 1.0, "the waiter took \(freedAfter) s after the holder died")
        #expect(try Adversarial.contents(of: box.vaultPath) == ["k": "waiter"])
        holder.waitForExit()
        print("Concurrency: busy after \(String(format: "%.2f", waited)) s (timeout 1 s); lock free \(String(format: "%.3f", freedAfter)) s after kill -9 of the holder")
    }
}

/// Reports when some process opens a file (inotify `IN_OPEN`); create it before starting that process.
final class OpenWatch {
    private let fd: Int32

    init(path: String) throws {
        fd = inotify_init1(0o2000000)  // IN_CLOEXEC
        guard fd >= 0 else { throw POSIXError(.EIO) }
        guard inotify_add_watch(fd, path, 0x20) >= 0 else {  // IN_OPEN
            close(fd)
            throw POSIXError(.ENOENT)
        }
    }

    deinit { close(fd) }

    /// True once the file was opened, false if `seconds` passed first.
    func wait(seconds: Double) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, Int32(seconds * 1000)) == 1
    }
}

import Benchmark
import Foundation
import VaultCore

#if canImport(Glibc)
import Glibc
#endif

// Benchmarks of VaultCore. Run from this directory:
//
//     swift package benchmark                                  # everything
//     swift package benchmark --filter 'open.*'                # one group
//
// Fixtures (vaults of 1 … 100,000 entries) are made once per process in a private temporary directory, in
// the benchmarks' setup (not measured). "test-hook KDF" vaults use libsodium's minimum Argon2id cost
// (`Options.insecureForTesting`, the tests' hook): their `open` shows the non-KDF part of an unlock.

let entryCounts = [1, 1_000, 10_000, 100_000]

/// The entries every fixture holds: `entry-000000` … with 32-byte values (a typical password length).
func entryName(_ index: Int) -> String { "entry-" + String(format: "%06d", index) }
func entryValue(_ index: Int) -> String { "pw-" + String(format: "%06d", index) + "-abcdefghijklmnopqrstuv" }

let passphrase = SecureBytes(string: "correct horse battery staple")

/// Vault files made once per process, in a private directory (0700, as the store requires).
final class Fixtures: @unchecked Sendable {
    static let shared = Fixtures()

    let directory: String
    private let lock = NSLock()
    private var made: [String: String] = [:]
    private var counter = 0

    private init() {
        var template = Array((NSTemporaryDirectory() + "/vault-bench-XXXXXX").utf8CString)
        guard let path = mkdtemp(&template) else { fatalError("mkdtemp failed") }
        directory = String(cString: path)
        chmod(directory, 0o700)
        atexit { Fixtures.shared.removeAll() }
    }

    func removeAll() {
        _ = try? FileManager.default.removeItem(atPath: directory)
    }

    /// A fresh path in the fixtures' directory.
    func newPath(_ stem: String) -> String {
        lock.withLock {
            counter += 1
            return "\(directory)/\(stem)-\(counter).vault"
        }
    }

    /// The path of a format-1 vault with `count` entries and the given KDF cost (made on first use).
    func vault(entries count: Int, interactive: Bool) throws -> String {
        let key = "\(interactive ? "interactive" : "testhook")-\(count)"
        if let path = lock.withLock({ made[key] }) { return path }
        let path = "\(directory)/\(key).vault"
        let store = SecureKeyValueStore(path: path, options: Self.options(interactive: interactive))
        try store.create(with: passphrase, parameters: interactive ? .interactive : .insecureForTesting, formatVersion: 1)
        // One batch, one write (the values of a batch share one guarded region).
        try store.update { changes in
            for index in 0..<count { try changes.put(entryValue(index), forKey: entryName(index)) }
        }
        store.close()
        lock.withLock { made[key] = path }
        return path
    }

    /// A private copy of a fixture, for benchmarks that write.
    func copy(entries count: Int, interactive: Bool) throws -> String {
        let source = try vault(entries: count, interactive: interactive)
        let path = newPath("copy-\(count)")
        try FileManager.default.copyItem(atPath: source, toPath: path)
        chmod(path, 0o600)
        return path
    }

    static func options(interactive: Bool) -> SecureKeyValueStore.Options {
        interactive ? SecureKeyValueStore.Options(kdfParametersForNewVaults: .interactive) : .insecureForTesting
    }
}

/// State a benchmark's setup hands to its body.
final class Box<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

func fileSize(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : 0
}

/// One durable replacement of a file of `bytes.count` bytes: what a vault write cannot do without.
/// write(2) to a temporary file in the same directory, fsync, rename over the target, fsync the directory.
func durableReplace(_ bytes: [UInt8], directory: String, name: String) {
    let dirfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    precondition(dirfd >= 0)
    defer { close(dirfd) }
    let temp = "." + name + ".tmp"
    let fd = openat(dirfd, temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    precondition(fd >= 0)
    bytes.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            precondition(n > 0)
            offset += n
        }
    }
    precondition(fsync(fd) == 0)
    close(fd)
    precondition(renameat(dirfd, temp, dirfd, name) == 0)
    precondition(fsync(dirfd) == 0)
}

let timeAndMemory: [BenchmarkMetric] = [
    .wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident, .instructions,
]

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: timeAndMemory, timeUnits: .automatic, warmupIterations: 1,
        maxDuration: .seconds(5), maxIterations: 1_000)

    // MARK: Argon2id at each preset (the floor of every passphrase unlock)

    for (name, parameters, iterations) in [
        ("interactive", Argon2id.Parameters.interactive, 20), ("moderate", .moderate, 8), ("sensitive", .sensitive, 4),
    ] {
        Benchmark(
            "Argon2id \(name) (\(parameters))",
            configuration: .init(
                metrics: timeAndMemory, warmupIterations: 1, maxDuration: .seconds(20), maxIterations: iterations)
        ) { benchmark in
            let salt = [UInt8](repeating: 7, count: Argon2id.saltByteCount)
            benchmark.startMeasurement()
            blackHole(try Argon2id.deriveKey(from: passphrase, salt: salt, parameters: parameters))
        }
    }

    // MARK: open (unlock): interactive KDF, and the test hook's KDF to show the rest

    for count in entryCounts {
        let path = Box("")
        Benchmark(
            "open interactive KDF, \(count) entries",
            configuration: .init(
                metrics: timeAndMemory, warmupIterations: 1, maxDuration: .seconds(10), maxIterations: 20),
            closure: { benchmark in
                let store = SecureKeyValueStore(path: path.value, options: Fixtures.options(interactive: true))
                try store.open(with: passphrase, createIfMissing: false)
                benchmark.stopMeasurement()
                let opened = try store.count
                precondition(opened == count)
                store.close()
            },
            setup: { path.value = try Fixtures.shared.vault(entries: count, interactive: true) })

        Benchmark(
            "open test-hook KDF, \(count) entries",
            configuration: .init(
                metrics: timeAndMemory, warmupIterations: 2, maxDuration: .seconds(5),
                maxIterations: count >= 100_000 ? 30 : 300),
            closure: { benchmark in
                let store = SecureKeyValueStore(path: path.value, options: Fixtures.options(interactive: false))
                try store.open(with: passphrase, createIfMissing: false)
                benchmark.stopMeasurement()
                let opened = try store.count
                precondition(opened == count)
                store.close()
            },
            setup: { path.value = try Fixtures.shared.vault(entries: count, interactive: false) })
    }

    // MARK: getString on an open store (1,000 look-ups per iteration)

    for count in [1_000, 100_000] {
        let store = Box<SecureKeyValueStore?>(nil)
        let keys = Box<[String]>([])
        Benchmark(
            "getString, open store of \(count) entries",
            configuration: .init(
                metrics: [.throughput, .wallClock, .mallocCountTotal, .instructions], warmupIterations: 3,
                scalingFactor: .kilo, maxDuration: .seconds(3), maxIterations: 100_000),
            closure: { benchmark in
                let keys = keys.value
                let store = store.value!
                for index in benchmark.scaledIterations {
                    blackHole(try store.getString(keys[index % keys.count]))
                }
            },
            setup: {
                let opened = SecureKeyValueStore(
                    path: try Fixtures.shared.vault(entries: count, interactive: false),
                    options: Fixtures.options(interactive: false))
                try opened.open(with: passphrase, createIfMissing: false)
                store.value = opened
                // Names in a scattered order, so that look-ups do not walk the index in file order.
                keys.value = (0..<1_000).map { entryName(($0 * 7_919) % count) }
            },
            teardown: { store.value?.close(); store.value = nil })
    }

    // MARK: durable put (one atomic, fsynced replacement) against one write+fsync+rename+dir fsync

    for count in entryCounts {
        let store = Box<SecureKeyValueStore?>(nil)
        let round = Box(0)
        Benchmark(
            "put durable, \(count) entries",
            configuration: .init(
                metrics: timeAndMemory, warmupIterations: 2, maxDuration: .seconds(5),
                maxIterations: count >= 100_000 ? 30 : 200),
            closure: { _ in
                round.value += 1
                // Replace an existing entry's value (same size, so the file keeps its size).
                try store.value!.put(entryValue(round.value % 1_000_000), forKey: entryName(round.value % count))
            },
            setup: {
                let opened = SecureKeyValueStore(
                    path: try Fixtures.shared.copy(entries: count, interactive: false),
                    options: Fixtures.options(interactive: false))
                try opened.open(with: passphrase, createIfMissing: false)
                store.value = opened
            },
            teardown: { store.value?.close(); store.value = nil })

        let baseline = Box<(bytes: [UInt8], directory: String, name: String)>(([], "", ""))
        Benchmark(
            "write+fsync+rename+dir fsync, size of \(count) entries",
            configuration: .init(
                metrics: timeAndMemory, warmupIterations: 2, maxDuration: .seconds(5),
                maxIterations: count >= 100_000 ? 30 : 200),
            closure: { _ in
                durableReplace(baseline.value.bytes, directory: baseline.value.directory, name: baseline.value.name)
            },
            setup: {
                let size = fileSize(try Fixtures.shared.vault(entries: count, interactive: false))
                var bytes = [UInt8](repeating: 0, count: size)
                for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 31) }
                baseline.value = (bytes, Fixtures.shared.directory, "baseline-\(count)")
            })
    }

    // MARK: changeEncryptionKey (one interactive Argon2id and one durable write)

    for count in [1, 10_000] {
        let store = Box<SecureKeyValueStore?>(nil)
        Benchmark(
            "changeEncryptionKey interactive KDF, \(count) entries",
            configuration: .init(
                metrics: timeAndMemory, warmupIterations: 1, maxDuration: .seconds(10), maxIterations: 20),
            closure: { _ in
                try store.value!.changeEncryptionKey(with: passphrase)
            },
            setup: {
                let opened = SecureKeyValueStore(
                    path: try Fixtures.shared.copy(entries: count, interactive: true),
                    options: Fixtures.options(interactive: true))
                try opened.open(with: passphrase, createIfMissing: false)
                store.value = opened
            },
            teardown: { store.value?.close(); store.value = nil })
    }

    // MARK: format version 2 (issue 18): the same fixtures upgraded, opened and written through DocumentVault

    for count in entryCounts {
        let path = Box("")
        Benchmark(
            "v2 open test-hook KDF, \(count) entries",
            configuration: .init(
                metrics: timeAndMemory, warmupIterations: 2, maxDuration: .seconds(5),
                maxIterations: count >= 100_000 ? 30 : 300),
            closure: { benchmark in
                let vault = try DocumentVault(
                    path: path.value, key: .passphrase(passphrase), replica: ReplicaID(rawValue: 1), policy: .insecureForTesting)
                benchmark.stopMeasurement()
                let opened = try vault.keys().count
                precondition(opened == count)
                vault.close()
            },
            setup: { path.value = try Fixtures.shared.version2(entries: count) })

        let vault = Box<DocumentVault?>(nil)
        let round = Box(0)
        Benchmark(
            "v2 put durable, \(count) entries",
            configuration: .init(
                metrics: timeAndMemory, warmupIterations: 2, maxDuration: .seconds(5),
                maxIterations: count >= 100_000 ? 30 : 200),
            closure: { _ in
                round.value += 1
                try vault.value!.put(entryValue(round.value % 1_000_000), forKey: entryName(round.value % count))
            },
            setup: {
                vault.value = try DocumentVault(
                    path: try Fixtures.shared.version2(entries: count, copy: true), key: .passphrase(passphrase),
                    replica: ReplicaID(rawValue: 1), policy: .insecureForTesting)
            },
            teardown: { vault.value?.close(); vault.value = nil })
    }

    // MARK: merge through the library alone (issue 34): two copies of the 10,000-entry format-3 fixture, each with
    // 100 changes of its own (another replica each) since the last merge; measured: the merge of the other's file
    // into ours (open it against ours, merge, seal, durable write), as `vault merge` does it without the CLI

    let copies = Box<(ours: DocumentVault, other: DocumentVault, otherPath: String)?>(nil)
    let mergeRound = Box(0)
    Benchmark(
        "v3 merge, 10000 entries, 100 changes each side",
        configuration: .init(
            metrics: timeAndMemory, warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 40),
        closure: { benchmark in
            mergeRound.value += 1
            let round = mergeRound.value
            let pair = copies.value!
            // Not measured: 100 changes on each side (one batch each), the other's file read.
            try pair.other.apply((0..<100).map { index in
                .setField(entry: entryName((index * 7 + round * 1_000 + 1) % 10_000), field: "password",
                          value: SecureBytes(string: "other-\(round)-\(index)"))
            })
            try pair.ours.apply((0..<100).map { index in
                .setField(entry: entryName((index * 11 + round * 1_000 + 5) % 10_000), field: "password",
                          value: SecureBytes(string: "mine-\(round)-\(index)"))
            })
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: pair.otherPath)))
            benchmark.startMeasurement()
            let report = try pair.ours.merge(bytes, label: pair.otherPath, dryRun: false, otherPassphrase: nil, acceptDeletions: false)
            benchmark.stopMeasurement()
            precondition(report.written && report.updated.count >= 50, "each merge brings the other's changes")
        },
        setup: {
            let ours = try Fixtures.shared.version2(entries: 10_000, copy: true)
            let other = Fixtures.shared.newPath("other-10000")
            try FileManager.default.copyItem(atPath: ours, toPath: other)
            chmod(other, 0o600)
            copies.value = (
                try DocumentVault(path: ours, key: .passphrase(passphrase), replica: ReplicaID(rawValue: 1), policy: .insecureForTesting),
                try DocumentVault(path: other, key: .passphrase(passphrase), replica: ReplicaID(rawValue: 2), policy: .insecureForTesting),
                other)
        },
        teardown: { copies.value?.ours.close(); copies.value?.other.close(); copies.value = nil })
}

extension Fixtures {
    /// The test-hook fixture of `count` entries upgraded to format version 2 (a private copy with `copy`); its
    /// size and the version-1 file's go to stderr, for the size comparison in Benchmarks/README.md.
    func version2(entries count: Int, copy: Bool = false) throws -> String {
        let path = try self.copy(entries: count, interactive: false)
        let v1Size = fileSize(path)
        _ = try VaultUpgrade.upgrade(path: path, passphrase: passphrase, options: Fixtures.options(interactive: false))
        if !copy {
            FileHandle.standardError.write(Data("size \(count) entries: v1 \(v1Size) bytes, v2 \(fileSize(path)) bytes\n".utf8))
        }
        return path
    }
}

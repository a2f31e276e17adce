import Foundation
import Testing
import VaultCore

/// I/O faults injected into `vault put` with strace (`-e inject=SYSCALL:error=ERRNO:when=N`), and kill -9
/// before each of its file-system calls in turn. Invariants, for every N: a failing put exits 1 with a
/// `vault: ...` message, leaves the vault byte-identical (or, when only the final directory fsync failed, the
/// complete new file) and no temporary file, and the next clean put succeeds; a put that exits 0 wrote its value.
///
/// `openat`, `read`, `close` and the stat calls are counted only on the vault's directory and files (`-P`),
/// so that N walks the vault's own calls rather than the dynamic loader's; the rare calls (`write`, `fsync`,
/// `renameat`, `flock`, `fchmod`, `unlinkat`, `getdents64`) are counted over the whole process.
@Suite(.serialized, .timeLimit(.minutes(10))) struct FaultInjectionTests {
    /// strace, installed by `scripts/install-deps --test`; a test that needs it fails without it.
    static let strace: String? = ["/usr/bin/strace", "/bin/strace"].first { FileManager.default.isExecutableFile(atPath: $0) }

    struct Setup {
        let box: Sandbox
        var directory: String { URL(fileURLWithPath: box.vaultPath).deletingLastPathComponent().path }
        /// strace resolves -P paths and warns on stderr if they are not canonical (NSTemporaryDirectory ends in /).
        var pathFilter: [String] {
            let vault = box.vaultPath.replacingOccurrences(of: "//", with: "/")
            let directory = self.directory.replacingOccurrences(of: "//", with: "/")
            return ["-P", directory, "-P", vault, "-P", vault + ".lock"]
        }

        init() throws {
            box = try Sandbox()
            try box.initVault()
            #expect(try box.vault(["put", "k"], stdin: Data("v0".utf8)).status == 0)
        }

        func file() throws -> Data { try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) }

        /// `vault put k` under strace with `straceArguments`.
        func put(_ value: String, _ straceArguments: [String]) throws -> CLIResult {
            let strace = try #require(FaultInjectionTests.strace, "strace is not installed: run scripts/install-deps --test")
            return try CLI.exec(
                strace, ["-f", "-qq", "-o", "/dev/null"] + straceArguments
                    + [CLI.vault, "put", "k", "--passphrase-file", box.passphraseFile],
                stdin: Data(value.utf8), environment: box.environment)
        }

        /// Checks the invariants after a put that may have failed; returns the value now in the vault.
        @discardableResult
        func check(_ result: CLIResult, before: Data, new: String, label: String) throws -> String? {
            let contents = try Adversarial.contents(of: box.vaultPath)
            if result.status == 0 {
                #expect(contents["k"] == new, "\(label): exit 0 but the value is not stored")
            } else {
                let loader = result.stderr.contains("error while loading shared libraries")
                #expect(result.status == 1 || (loader && result.status == 127), "\(label): exit \(result.status)")
                if !loader {
                    #expect(result.stderr.hasPrefix("vault: "), "\(label): \(result.stderr)")
                    #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("Crash"), "\(label)")
                }
                if result.stderr.contains("cannot fsync directory") {
                    // The rename happened; only its durability is in doubt. The new file is complete.
                    #expect(contents["k"] == new, "\(label)")
                } else {
                    #expect(try file() == before, "\(label): the vault changed although put failed: \(result.stderr)")
                }
            }
            #expect(Adversarial.strayTemporaryFiles(box.vaultPath) == [], "\(label): temporary file left")
            return contents["k"]
        }

        /// A clean put (no strace) after a fault succeeds.
        func cleanPut(_ value: String, label: String) throws {
            let result = try box.vault(["put", "k"], stdin: Data(value.utf8))
            #expect(result.status == 0, "\(label): the next clean put failed: \(result.stderr)")
            #expect(Adversarial.strayTemporaryFiles(box.vaultPath) == [])
        }
    }

    /// (syscall, errno, filtered by path, highest N, message the vault's own failing call prints)
    static let faults: [(String, String, Bool, Int, String)] = [
        ("write", "ENOSPC", false, 5, "cannot write '"),
        ("write", "EIO", false, 5, "cannot write '"),
        ("fsync", "EIO", false, 3, "cannot fsync"),
        ("renameat", "EIO", false, 2, "cannot rename temporary file over"),
        // 13 openat calls of the vault's paths before the temporary file's (the sandbox's paths are canonical, so
        // strace's -P counts the AT_FDCWD opens too: the access check and the version sniff).
        ("openat", "EACCES", true, 14, "cannot create temporary file"),
        ("openat", "EIO", true, 14, "cannot open"),
        ("read", "EIO", true, 4, "cannot read vault"),
        ("flock", "EIO", false, 6, "cannot lock"),
        ("fchmod", "EPERM", false, 2, "cannot set permissions"),
    ]

    @Test(arguments: 0..<faults.count)
    func injectedErrorLeavesTheVaultIntact(_ index: Int) throws {
        let (syscall, errnoName, filtered, highest, message) = Self.faults[index]
        let setup = try Setup()
        var hits = 0
        var failures = 0
        for n in 1...highest {
            let label = "\(syscall) \(errnoName) when=\(n)"
            let before = try setup.file()
            let result = try setup.put(
                "new-\(n)", (filtered ? setup.pathFilter : []) + ["-e", "inject=\(syscall):error=\(errnoName):when=\(n)"])
            if result.status != 0 { failures += 1 }
            if result.stderr.contains(message) { hits += 1 }
            try setup.check(result, before: before, new: "new-\(n)", label: label)
            try setup.cleanPut("clean-\(n)", label: label)
        }
        print("FaultInjection: \(syscall) \(errnoName) when=1...\(highest): \(failures) failed cleanly, \(hits) at the vault's own call")
        #expect(hits > 0, "no injection reached the vault's \(syscall): '\(message)' never printed")
    }

    /// kill -9 before each call of one put, in turn.
    @Test func killBeforeEachSyscallOfOnePut() throws {
        let setup = try Setup()
        let strace = try #require(Self.strace, "strace is not installed: run scripts/install-deps --test")
        // Count the calls of one clean put: path-filtered calls with -P, the rare ones over the whole process.
        func count(_ arguments: [String]) throws -> [String: Int] {
            let trace = setup.box.directory + "/trace"
            _ = try CLI.exec(
                strace, ["-f", "-qq", "-o", trace] + arguments + [CLI.vault, "put", "k", "--passphrase-file", setup.box.passphraseFile],
                stdin: Data("counted".utf8), environment: setup.box.environment)
            var counts = [String: Int]()
            for line in try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n") {
                // "PID  name(args) = result": strace pads the PID to 5 columns, so a PID under 10000 is followed
                // by two spaces (PIDs wrap around on a long-running machine).
                let call = line.drop { $0.isNumber }.drop { $0 == " " }
                guard let paren = call.firstIndex(of: "("), call.first?.isLetter == true else { continue }
                counts[String(call[..<paren]), default: 0] += 1
            }
            return counts
        }
        let filtered = try count(setup.pathFilter)
        let rare = ["flock", "fchmod", "write", "fsync", "renameat", "unlinkat", "getdents64"]
        let all = try count(["-e", "trace=" + rare.joined(separator: ",")])
        var plan = [(String, Bool, Int)]()
        for (name, n) in filtered.sorted(by: { $0.key < $1.key }) where !rare.contains(name) { plan.append((name, true, n)) }
        for name in rare { plan.append((name, false, all[name] ?? 0)) }
        #expect(plan.contains { $0.0 == "renameat" && $0.2 >= 1 } && plan.contains { $0.0 == "openat" && $0.2 >= 4 })

        var (runs, killed, old, new) = (0, 0, 0, 0)
        var current = try Adversarial.contents(of: setup.box.vaultPath)["k"]
        for (name, useFilter, highest) in plan where highest > 0 {
            for n in 1...highest {
                runs += 1
                let value = "kill-\(name)-\(n)"
                let result = try setup.put(
                    value, (useFilter ? setup.pathFilter : []) + ["-e", "inject=\(name):signal=KILL:when=\(n)"])
                if result.status != 0 { killed += 1 }
                let stored = try Adversarial.contents(of: setup.box.vaultPath)["k"]
                #expect(stored == current || stored == value, "kill before \(name) #\(n): neither old nor new")
                if stored == value { new += 1 } else { old += 1 }
                // The next write removes whatever the killed one left.
                try setup.cleanPut("after-\(name)-\(n)", label: "kill before \(name) #\(n)")
                current = "after-\(name)-\(n)"
            }
        }
        print("FaultInjection: kill -9 before each call of one put: \(runs) runs (\(plan.map { "\($0.0)×\($0.2)" }.joined(separator: " "))), \(killed) killed, \(old) kept the old value, \(new) the new")
        #expect(killed > 0)
        #expect(old > 0 && new > 0)
    }
}

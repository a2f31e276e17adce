import Foundation
import Testing
import VaultTestSupport

/// Process hygiene of the CLI: secrets stay out of argv, the environment, the output and stray files; a
/// running `vault` cannot be traced or read by another process of the same (non-root) user and dumps no core;
/// files and directories keep their modes under any umask; files an attacker plants at temporary names change
/// nothing. The tests are synchronous (blocking waits on a dedicated thread, never the cooperative pool).
@Suite(.serialized, .processTimeLimit) struct HygieneTests {
    /// strace, installed by `scripts/install-deps --test`; a test that needs it fails without it.
    static let strace: String? = ["/usr/bin/strace", "/bin/strace"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// A unique string that cannot occur by chance.
    static func canary(_ label: String) -> String {
        label + "-CANARY-" + (0..<16).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
    }

    static func contains(_ haystack: Data, _ needle: String) -> Bool {
        haystack.range(of: Data(needle.utf8)) != nil
    }

    static func makeTemporaryDirectory(_ prefix: String) throws -> String {
        try makePrivateDirectory(prefix: prefix)
    }

    /// Every regular file below `directory` (not following symlinks).
    static func regularFiles(under directory: String) -> [String] {
        var out = [String]()
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return out }
        while let relative = walker.nextObject() as? String {
            let path = directory + "/" + relative
            var info = stat()
            if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG { out.append(path) }
        }
        return out.sorted()
    }

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode : nil
    }

    // MARK: - Canaries

    @Test("canary passphrase and value: not in execve argv/env (strace), output other than get's, or any other file")
    func canariesStayInside() throws {
        let strace = try #require(Self.strace, "strace is not installed: run scripts/install-deps --test")
        let passphrase = Self.canary("pass"), value = Self.canary("value")
        let box = try Sandbox(passphrase: passphrase)
        let traces = try Self.makeTemporaryDirectory("vault-hygiene-trace")
        defer { try? FileManager.default.removeItem(atPath: traces) }
        let env = box.environment.merging(["XDG_STATE_HOME": box.directory + "/state"]) { $1 }

        var results: [(String, CLIResult)] = []
        for (step, args, stdin) in [
            ("init", ["init"], Data()), ("put", ["put", "k"], Data(value.utf8)), ("get", ["get", "k"], Data()),
            ("list", ["list"], Data()),
        ] {
            let trace = traces + "/\(step).trace"
            let result = try CLI.exec(
                strace, ["-f", "-e", "trace=execve", "-s", "4096", "-v", "-o", trace, CLI.vault]
                    + args + ["--passphrase-file", box.passphraseFile],
                stdin: stdin, environment: env)
            #expect(result.status == 0, "\(step) failed: \(result.stderr)")
            results.append((step, result))
            let traced = try Data(contentsOf: URL(fileURLWithPath: trace))
            // The trace saw vault's own execve with its full argv and environment (so the search below means something).
            #expect(Self.contains(traced, "execve(\"\(CLI.vault)\""), "\(step): no execve of vault in the trace")
            #expect(Self.contains(traced, "VAULT_TESTING_INSECURE_KDF=1"), "\(step): the trace shows no environment")
            #expect(!Self.contains(traced, passphrase), "\(step): the passphrase appears in an execve")
            #expect(!Self.contains(traced, value), "\(step): the value appears in an execve")
        }
        for (step, result) in results {
            #expect(!result.stderr.contains(passphrase) && !result.stderr.contains(value), "\(step): a canary on stderr")
            #expect(!Self.contains(result.stdout, passphrase), "\(step): the passphrase on stdout")
            if step == "get" {
                #expect(result.stdout == Data(value.utf8), "get printed something other than the value")
            } else {
                #expect(!Self.contains(result.stdout, value), "\(step): the value on stdout")
            }
        }
        // Files: the passphrase only in the passphrase file the test wrote; neither canary anywhere else, and
        // not in clear in the vault either.
        let files = Self.regularFiles(under: box.directory)
        #expect(files.contains(box.vaultPath) && files.contains(box.passphraseFile))
        #expect(files.count >= 4, "expected at least vault, lock, passphrase file, rollback record: \(files)")
        for file in files {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(!Self.contains(bytes, value), "the value appears in clear in \(file)")
            if file != box.passphraseFile {
                #expect(!Self.contains(bytes, passphrase), "the passphrase appears in \(file)")
            }
        }
    }

    // MARK: - ptrace and /proc by the same user

    static let testUser = "vaulttest"

    /// uid and gid of the test user, created once (`useradd -m`).
    static let testUserIDs: (uid: uid_t, gid: gid_t)? = {
        if getpwnam(testUser) == nil {
            _ = try? CLI.exec("/usr/sbin/useradd", ["-m", testUser])
        }
        guard let entry = getpwnam(testUser) else { return nil }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }()

    static func asTestUser(_ ids: (uid: uid_t, gid: gid_t), _ command: [String]) -> [String] {
        ["--reuid=\(ids.uid)", "--regid=\(ids.gid)", "--init-groups"] + command
    }

    /// Starts `command` as the test user (setpriv execs it, so the pid is the command's), stdin a pipe.
    static func startAsTestUser(
        _ ids: (uid: uid_t, gid: gid_t), _ command: [String], environment: [String: String]
    ) throws -> (Process, Pipe, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = asTestUser(ids, command)
        process.environment = ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"].merging(environment) { $1 }
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, input, output)
    }

    /// Waits until `pid` runs `executable` as `uid` and one of its threads is blocked in read(0, ...) (syscall 0
    /// on x86_64, 63 on aarch64).
    static func waitUntilReadingStdin(_ pid: pid_t, executable: String, uid: uid_t) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe"))
                .map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            // Any thread: the async main thread waits in rt_sigsuspend while another one reads.
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            let reading = tasks.contains { task in
                let syscall = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/syscall", encoding: .utf8)) ?? ""
                #if arch(x86_64)
                return syscall.hasPrefix("0 0x0 ")
                #else
                return syscall.hasPrefix("63 0x0 ")
                #endif
            }
            if exe == URL(fileURLWithPath: executable).resolvingSymlinksInPath().path && status.contains("\nUid:\t\(uid)\t\(uid)\t") && reading { return true }
            usleep(20_000)
        }
        return false
    }

    @Test("a running vault: same-user strace, /proc/PID/mem and /proc/PID/environ are refused; core size 0")
    func sameUserCannotTrace() throws {
        let strace = try #require(Self.strace, "strace is not installed: run scripts/install-deps --test")
        let ids = try #require(Self.testUserIDs, "could not create the user \(Self.testUser)")
        // The vault, its directory and the passphrase file belong to the test user.
        let home = try Self.makeTemporaryDirectory("vault-hygiene-user")
        defer { try? FileManager.default.removeItem(atPath: home) }
        let passphrase = Self.canary("pass"), value = Self.canary("value")
        FileManager.default.createFile(atPath: home + "/passphrase", contents: Data((passphrase + "\n").utf8))
        #expect(chown(home, ids.uid, ids.gid) == 0 && chown(home + "/passphrase", ids.uid, ids.gid) == 0)
        #expect(chmod(home + "/passphrase", 0o600) == 0)
        let env = [
            "VAULT_PATH": home + "/v/test.vault", "VAULT_TESTING_INSECURE_KDF": "1", "HOME": home,
            "XDG_STATE_HOME": home + "/state",
        ]
        func runAsUser(_ command: [String], stdin: Data = Data(), timeout: TimeInterval = 60) throws -> CLIResult {
            try CLI.exec("/usr/bin/setpriv", Self.asTestUser(ids, command), stdin: stdin, environment: env, timeout: timeout)
        }
        let made = try runAsUser([CLI.vault, "init", "--passphrase-file", home + "/passphrase"])
        try #require(made.status == 0, "init as \(Self.testUser): \(made.stderr)")
        let stored = try runAsUser([CLI.vault, "put", "k", "--passphrase-file", home + "/passphrase"], stdin: Data(value.utf8))
        try #require(stored.status == 0, "put as \(Self.testUser): \(stored.stderr)")

        // Control: a plain process of the same user IS readable and traceable by that user, so the refusals
        // below come from vault's hardening, not from the kernel's configuration.
        let (control, controlInput, _) = try Self.startAsTestUser(ids, ["/bin/cat"], environment: env)
        defer { kill(control.processIdentifier, SIGKILL); control.waitForExit() }
        try #require(Self.waitUntilReadingStdin(control.processIdentifier, executable: "/usr/bin/cat", uid: ids.uid))
        let controlEnviron = try runAsUser(["/bin/cat", "/proc/\(control.processIdentifier)/environ"])
        #expect(controlEnviron.status == 0 && Self.contains(controlEnviron.stdout, "VAULT_PATH="),
            "control: the same user cannot read a plain process's environ (\(controlEnviron.stderr))")
        let controlTrace = try runAsUser(
            ["/usr/bin/timeout", "--foreground", "-s", "KILL", "2", strace, "-qq", "-e", "trace=none", "-p", "\(control.processIdentifier)"])
        // Attached, it runs until timeout kills it (137); refused, it exits 1 at once.
        #expect(controlTrace.status == 137 && !controlTrace.stderr.contains("Operation not permitted"),
            "control: the same user cannot trace a plain process: exit \(controlTrace.status), \(controlTrace.stderr)")
        try? controlInput.fileHandleForWriting.close()

        // vault get, blocked reading the passphrase from stdin.
        let (process, input, output) = try Self.startAsTestUser(
            ids, [CLI.vault, "get", "k", "--passphrase-fd", "0"], environment: env)
        let pid = process.processIdentifier
        defer { if process.isRunning { kill(pid, SIGKILL) }; process.waitForExit() }
        try #require(Self.waitUntilReadingStdin(pid, executable: CLI.vault, uid: ids.uid), "vault get never blocked on stdin")

        let environ = try runAsUser(["/bin/cat", "/proc/\(pid)/environ"])
        #expect(environ.status == 1 && environ.stdout.isEmpty)
        #expect(environ.stderr.contains("Permission denied"), "environ: \(environ.stderr)")
        let mem = try runAsUser(["/bin/dd", "if=/proc/\(pid)/mem", "of=/dev/null", "count=1", "status=none"])
        #expect(mem.status == 1 && mem.stderr.contains("Permission denied"), "mem: \(mem.stderr)")
        let traced = try runAsUser(
            ["/usr/bin/timeout", "--foreground", "-s", "KILL", "20", strace, "-qq", "-e", "trace=none", "-p", "\(pid)"])
        #expect(traced.status == 1, "strace -p exited \(traced.status)")
        #expect(traced.stderr.contains("ptrace(PTRACE_SEIZE, \(pid)): Operation not permitted"), "strace: \(traced.stderr)")

        // Core dumps are off: soft and hard limit 0 (read as root).
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }
        #expect(core?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2) == ["0", "0"],
            "core limit: \(core ?? "missing")")

        // The refusals did not disturb it: the passphrase unblocks it and it prints the value.
        input.fileHandleForWriting.write(Data((passphrase + "\n").utf8))
        try input.fileHandleForWriting.close()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitForExit()
        #expect(process.terminationStatus == 0)
        #expect(printed == Data(value.utf8), "get printed something other than the value")
    }

    // MARK: - Modes under any umask

    @Test("vault, lock and state record 0600, new directories 0700, under umask 000, 022 and 077",
        arguments: ["000", "022", "077"])
    func modesUnderUmask(_ umask: String) throws {
        let box = try Sandbox()
        let state = box.directory + "/state/deeper"
        let env = box.environment.merging(["XDG_STATE_HOME": state]) { $1 }
        for (command, stdin) in [("init", ""), ("put k", "v1"), ("put k", "v2"), ("delete k", "")] {
            let result = try CLI.shell(
                "umask \(umask); exec \"$VAULT\" \(command) --passphrase-file '\(box.passphraseFile)'",
                stdin: Data(stdin.utf8), environment: env)
            #expect(result.status == 0, "umask \(umask), \(command): \(result.stderr)")
            let vaults = box.directory + "/vaults"
            #expect(Self.mode(vaults) == S_IFDIR | 0o700, "umask \(umask): vaults directory")
            #expect(Self.mode(box.vaultPath) == S_IFREG | 0o600, "umask \(umask): vault")
            #expect(Self.mode(box.vaultPath + ".lock") == S_IFREG | 0o600, "umask \(umask): lock")
            #expect(try FileManager.default.contentsOfDirectory(atPath: vaults).sorted() == ["test.vault", "test.vault.lock"])
            for directory in [box.directory + "/state", state, state + "/vault"] {
                #expect(Self.mode(directory) == S_IFDIR | 0o700, "umask \(umask): \(directory)")
            }
            let records = try FileManager.default.contentsOfDirectory(atPath: state + "/vault")
            // Version 2: the records of the path and of the vault's id, this user's replica id (made by init, which
            // names the replica in the new vault), and once written its latest write.
            let kinds = Set(records.map { $0.split(separator: ".").last.map(String.init) ?? "" })
            #expect(kinds == (command == "init" ? ["generation", "replica", "vault"] : ["generation", "replica", "vault", "written"])
                    && records.count == kinds.count,
                    "umask \(umask), \(command): state records \(records)")
            for record in records {
                #expect(Self.mode(state + "/vault/" + record) == S_IFREG | 0o600, "umask \(umask): state record")
            }
        }
    }

    // MARK: - Planted temporary names

    @Test("symlinks and FIFOs planted at .NAME.<x>.tmp are neither followed, written nor waited on")
    func plantedTemporaryNames() throws {
        let box = try Sandbox()
        try box.initVault()
        let outside = try Self.makeTemporaryDirectory("vault-hygiene-target")
        defer { try? FileManager.default.removeItem(atPath: outside) }
        let target = outside + "/target"
        let original = Data("attacker's target\n".utf8)
        FileManager.default.createFile(atPath: target, contents: original, attributes: [.posixPermissions: 0o644])

        let vaults = box.directory + "/vaults"
        // Names of the writer's pattern (removed as stray by the next write) and near misses (left alone).
        let strayLinks = [".test.vault.0123456789abcdef.tmp", ".test.vault.ffffffffffffffff.tmp"]
        let strayFIFOs = [".test.vault.fedcba9876543210.tmp", ".test.vault.0000000000000000.tmp"]
        let otherLinks = [".test.vault.attacker.tmp", ".test.vault.tmp", "test.vault.0123456789abcdef.tmp"]
        let otherFIFOs = [".test.vault.fifo.tmp", ".test.vault.0123456789abcdef0.tmp"]
        for name in strayLinks + otherLinks { #expect(symlink(target, vaults + "/" + name) == 0) }
        for name in strayFIFOs + otherFIFOs { #expect(mkfifo(vaults + "/" + name, 0o600) == 0) }

        for value in ["first", "second"] {
            let start = Date()
            let put = try CLI.exec(
                CLI.vault, ["put", "k", "--passphrase-file", box.passphraseFile], stdin: Data(value.utf8),
                environment: box.environment, timeout: 30)
            #expect(put.status == 0, "put: \(put.stderr)")
            #expect(Date().timeIntervalSince(start) < 20, "put waited on a FIFO")
            let get = try box.vault(["get", "k"])
            #expect(get.status == 0 && get.stdout == Data(value.utf8))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == original, "the symlinks' target was written")
        #expect(Self.mode(target) == S_IFREG | 0o644)
        for name in strayLinks + strayFIFOs { #expect(Self.mode(vaults + "/" + name) == nil, "\(name) was not removed") }
        for name in otherLinks {
            #expect(Self.mode(vaults + "/" + name).map { $0 & S_IFMT } == S_IFLNK, "\(name) was touched")
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: vaults + "/" + name)) == target)
        }
        for name in otherFIFOs { #expect(Self.mode(vaults + "/" + name) == S_IFIFO | 0o600, "\(name) was touched") }
        #expect(Self.mode(box.vaultPath) == S_IFREG | 0o600)

        // The CLI side of the library's symlinked-lock refusal (VaultFileTests.symlinkedLock): exit 4, target intact.
        #expect(unlink(box.vaultPath + ".lock") == 0 && symlink(target, box.vaultPath + ".lock") == 0)
        let refused = try box.vault(["put", "k"], stdin: Data("third".utf8))
        #expect(refused.status == 4, "symlinked lock: exit \(refused.status), \(refused.stderr)")
        #expect(refused.stderr.contains("symbolic link"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == original)
    }
}

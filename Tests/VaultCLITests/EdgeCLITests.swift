import Foundation
import Testing
import VaultCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The CLI at the edges of the system (issue 11): a closed or full stderr, a hostile umask, huge files at the
/// vault path, passphrase files and pipes of other users, names that are not UTF-8, values at the limit.
@Suite(.serialized, .processTimeLimit) struct EdgeCLITests {
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode : nil
    }

    /// `bash -c script` with `$VAULT` set (for `<(...)` and `$'...'`).
    static func bash(_ script: String, stdin: Data = Data(), environment: [String: String]) throws -> CLIResult {
        try CLI.exec("/bin/bash", ["-c", script], stdin: stdin, environment: environment.merging(["VAULT": CLI.vault]) { $1 })
    }

    // MARK: - Item 4: stderr closed or full

    @Test("an error with stderr closed or on /dev/full still exits with its documented code (2), no SIGILL",
        arguments: ["2>&-", "2>/dev/full"])
    func stderrClosedOrFull(_ redirect: String) throws {
        let box = try Sandbox()
        try box.initVault()
        for json in ["", " --json"] {
            let result = try CLI.shell(
                "exec \"$VAULT\" get missing-name\(json) --passphrase-file '\(box.passphraseFile)' \(redirect)",
                environment: box.environment)
            #expect(result.status == 2, "\(redirect)\(json): exit \(result.status)")
            #expect(result.stdout.isEmpty)
        }
    }

    // MARK: - Item 6: the lock file's mode

    @Test("under umask 0277: init, put, put again succeed and the lock file is 0600")
    func lockFileUnderUmask0277() throws {
        let box = try Sandbox()
        for (command, stdin) in [("init", ""), ("put k", "v1"), ("put k", "v2")] {
            let result = try CLI.shell(
                "umask 0277; exec \"$VAULT\" \(command) --passphrase-file '\(box.passphraseFile)'",
                stdin: Data(stdin.utf8), environment: box.environment)
            #expect(result.status == 0, "\(command): \(result.stderr)")
            #expect(Self.mode(box.vaultPath + ".lock") == S_IFREG | 0o600, "\(command): lock file mode")
            #expect(Self.mode(box.vaultPath) == S_IFREG | 0o600, "\(command): vault mode")
        }
        #expect(try box.vault(["get", "k"]).stdoutText == "v2")
    }

    @Test("a lock file of ours left 0400 is repaired to 0600; one readable by others (0644) is still refused")
    func lockFileRepair() throws {
        let box = try Sandbox()
        try box.initVault()
        let lock = box.vaultPath + ".lock"
        #expect(chmod(lock, 0o400) == 0)
        let put = try box.vault(["put", "k"], stdin: Data("v".utf8))
        #expect(put.status == 0, "\(put.stderr)")
        #expect(Self.mode(lock) == S_IFREG | 0o600)
        #expect(chmod(lock, 0o644) == 0)
        let refused = try box.vault(["put", "k"], stdin: Data("w".utf8))
        #expect(refused.status == 4)
        #expect(refused.stderr.contains("the lock file is accessible by group or others (mode 0644)"))
        #expect(Self.mode(lock) == S_IFREG | 0o644)
    }

    // MARK: - Item 8: huge files at the vault path

    @Test("a 1 TiB and a 4 GiB sparse file behind a valid header: corrupt (6) at once, no abort",
        arguments: [Int64(1) << 40, Int64(4) << 30])
    func hugeSparseVault(_ size: Int64) throws {
        let box = try Sandbox()
        try box.initVault()
        let prefix = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)).prefix(148)
        #expect(unlink(box.vaultPath) == 0)
        try box.write("", to: box.vaultPath)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: box.vaultPath))
        try handle.write(contentsOf: prefix)
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()
        let start = monotonicNow()
        let result = try box.vault(["get", "k", "--json"])
        let elapsed = monotonicNow() - start
        #expect(result.status == 6, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("\"code\":\"corrupt\""), "\(result.stderr)")
        #expect(result.stderr.contains("larger than a vault can be (\(size) bytes)"), "\(result.stderr)")
        #expect(elapsed < 1, "took \(elapsed) s")
    }

    // MARK: - Item 5: passphrase files and pipes

    @Test("a --passphrase-file FIFO writable by others is refused (4), before anything is read")
    func worldWritableFIFORefused() throws {
        let box = try Sandbox()
        try box.initVault()
        let fifo = box.directory + "/pass.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(chmod(fifo, 0o666) == 0)
        let result = try CLI.run(["get", "k", "--passphrase-file", fifo], environment: box.environment)
        #expect(result.status == 4, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("the passphrase pipe is writable by group or others (mode 0666)"), "\(result.stderr)")
    }

    @Test("a --passphrase-file or FIFO owned by another user is refused (4)")
    func otherOwnerRefused() throws {
        let box = try Sandbox()
        try box.initVault()
        let file = box.directory + "/other-pass"
        try box.write("correct horse battery staple\n", to: file)
        let fifo = box.directory + "/other.fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in [file, fifo] {
            #expect(chown(path, 65534, 65534) == 0, "chown needs root: errno \(errno)")
            let result = try CLI.run(["get", "k", "--passphrase-file", path], environment: box.environment)
            #expect(result.status == 4, "\(path): exit \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("is owned by another user (uid 65534)"), "\(result.stderr)")
        }
    }

    @Test("a --passphrase-file or --identity that is neither a regular file nor a pipe is refused (4), saying what it is")
    func directoryAsPassphraseFileRefused() throws {
        let box = try Sandbox()
        try box.initVault()
        for option in ["--passphrase-file", "--identity"] {
            let result = try CLI.run(["get", "k", option, box.directory], environment: box.environment)
            let what = option == "--identity" ? "identity" : "passphrase"
            #expect(result.status == 4, "\(option): exit \(result.status): \(result.stderr)")
            #expect(result.stderr == """
                vault: refusing to use '\(box.directory)': the \(what) file is a directory, not a regular file or a pipe
                hint: give the path of a regular file of yours (chmod 600 it) or of a pipe

                """, "\(result.stderr)")
        }
    }

    @Test("bash's <(printf ...) and a 0600 file of ours are still accepted")
    func processSubstitutionAccepted() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8)).status == 0)
        let viaPipe = try Self.bash(
            "exec \"$VAULT\" get k --passphrase-file <(printf 'correct horse battery staple\\n')",
            environment: box.environment)
        #expect(viaPipe.status == 0, "\(viaPipe.stderr)")
        #expect(viaPipe.stdoutText == "v")
        let viaFile = try box.vault(["get", "k"])
        #expect(viaFile.status == 0)
        #expect(viaFile.stdoutText == "v")
    }

    // MARK: - Item 10: names and passphrases that are not UTF-8

    @Test("a NAME that is not valid UTF-8 is refused (64, invalid_name) by put, get and delete")
    func nonUTF8NameRefused() throws {
        let box = try Sandbox()
        try box.initVault()
        for verb in ["put", "get", "delete"] {
            let result = try Self.bash(
                "printf v | exec \"$VAULT\" \(verb) $'k\\xff' --json --passphrase-file '\(box.passphraseFile)'",
                environment: box.environment)
            #expect(result.status == 64, "\(verb): exit \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("\"code\":\"invalid_name\""), "\(verb): \(result.stderr)")
            #expect(result.stderr.contains("not valid UTF-8"), "\(verb): \(result.stderr)")
        }
        #expect(try box.vault(["list"]).stdoutText == "")
        // A valid name with U+FFFD itself is still a name.
        let replacement = try box.vault(["put", "k\u{FFFD}"], stdin: Data("v".utf8))
        #expect(replacement.status == 0, "\(replacement.stderr)")
    }

    @Test("VAULT_PASSPHRASE is taken as the environment's raw bytes (not UTF-8)")
    func rawEnvironmentPassphrase() throws {
        let box = try Sandbox()
        let file = box.directory + "/raw-pass"
        FileManager.default.createFile(
            atPath: file, contents: Data([0x70, 0x61, 0x73, 0x73, 0xFF, 0x0A]), attributes: [.posixPermissions: 0o600])
        let created = try CLI.run(["init", "--force", "--passphrase-file", file], environment: box.environment)
        #expect(created.status == 0, "\(created.stderr)")
        let put = try CLI.run(["put", "k", "--passphrase-file", file], stdin: Data("v".utf8), environment: box.environment)
        #expect(put.status == 0, "\(put.stderr)")
        let viaEnv = try Self.bash("VAULT_PASSPHRASE=$'pass\\xff' exec \"$VAULT\" get k", environment: box.environment)
        #expect(viaEnv.status == 0, "exit \(viaEnv.status): \(viaEnv.stderr)")
        #expect(viaEnv.stdoutText == "v")
        let lossy = try CLI.run(["get", "k"], environment: box.environment.merging(["VAULT_PASSPHRASE": "pass\u{FFFD}"]) { $1 })
        #expect(lossy.status == 3, "the replacement character is not the byte 0xFF")
    }

    // MARK: - Item 11: the largest value

    @Test("put accepts a value of exactly 67,108,864 bytes from stdin; 67,108,865 is refused")
    func maximumValueFromStdin() throws {
        let box = try Sandbox()
        try box.initVault()
        let value = Data(repeating: 0x5A, count: 64 << 20)
        let put = try box.vault(["put", "big"], stdin: value)
        #expect(put.status == 0, "\(put.stderr)")
        let got = try box.vault(["get", "big"])
        #expect(got.status == 0)
        #expect(got.stdout == value)
        let tooBig = try box.vault(["put", "bigger"], stdin: value + Data([0x5A]))
        #expect(tooBig.status == 1)
        #expect(tooBig.stderr.contains("longer than 67108864 bytes"), "\(tooBig.stderr)")
    }

    @Test("an empty passphrase opens a vault that has one (docs/FORMAT.md allows it); init and passwd refuse to set one (64)")
    func emptyPassphrase() throws {
        let box = try Sandbox()
        let store = SecureKeyValueStore(path: box.vaultPath, options: .insecureForTesting)
        try store.create(with: SecureBytes([]))
        try store.put("made by the library", forKey: "k")
        store.close()
        let empty = box.directory + "/empty"
        FileManager.default.createFile(atPath: empty, contents: Data(), attributes: [.posixPermissions: 0o600])
        let get = try box.vault(["get", "k", "--passphrase-file", empty], passphrase: false)
        #expect(get.status == 0 && get.stdoutText == "made by the library", "exit \(get.status): \(get.stderr)")
        let fromEnvironment = try box.vault(["get", "k"], passphrase: false, extraEnvironment: ["VAULT_PASSPHRASE": ""])
        #expect(fromEnvironment.status == 0 && fromEnvironment.stdoutText == "made by the library", "\(fromEnvironment.stderr)")
        // The wrong one is a wrong passphrase, as always.
        #expect(try box.vault(["get", "k"]).status == 3)
        // Setting an empty passphrase is refused, and nothing is written.
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let passwd = try box.vault(["passwd", "--passphrase-file", empty, "--new-passphrase-file", empty], passphrase: false)
        #expect(passwd.status == 64 && passwd.stderr.hasPrefix("vault: the passphrase is empty"), "\(passwd.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
        let other = box.directory + "/new.vault"
        let initialise = try box.vault(["init", "--vault", other, "--passphrase-file", empty], passphrase: false)
        #expect(initialise.status == 64 && initialise.stderr.hasPrefix("vault: the passphrase is empty"), "\(initialise.stderr)")
        #expect(!FileManager.default.fileExists(atPath: other))
    }
}

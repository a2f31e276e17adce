import Foundation
import Testing

/// What the command line is given, at its edges (issue 11, items 20 and 21): a vault path that names a
/// directory, a descriptor that was not passed, a lock file that is a directory, an unbounded lock timeout, and
/// entry names given off the command line (`--name-fd`).
@Suite(.processTimeLimit) struct InputEdgeTests {
    // MARK: item 21

    /// `--vault DIR/new/` (and a path that is a directory) is refused before anything is created in it.
    @Test func aVaultPathThatNamesADirectoryIsRefusedAndCreatesNothing() throws {
        let box = try Sandbox()
        let existing = box.directory + "/new"
        try FileManager.default.createDirectory(atPath: existing, withIntermediateDirectories: false)
        for path in [existing + "/", box.directory + "/absent/", existing, existing + "/."] {
            let result = try CLI.run(
                ["init", "--vault", path, "--passphrase-file", box.passphraseFile], environment: box.environment)
            #expect(result.status == 64)
            #expect(result.stderr.hasPrefix(
                "vault: the vault path '\(path)' names a directory: give the path of a file in it (e.g. '"),
                "\(result.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: existing) == [])
        #expect(!FileManager.default.fileExists(atPath: box.directory + "/absent"))
    }

    /// `--passphrase-fd 3` when 3 was not passed: "not open", exit 64, not the runtime's own descriptor read.
    @Test func aDescriptorThatWasNotPassedIsReportedAsNotOpen() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8)).status == 0)
        let closed = try box.vault(["get", "k", "--passphrase-fd", "3"], passphrase: false)
        #expect(closed.status == 64)
        #expect(closed.stdout.isEmpty)
        #expect(closed.stderr == """
            vault: file descriptor 3 is not open (it was not passed to the program)
            hint: open it for the program, e.g. '3<FILE' or '3<<<"$VAR"' in the shell

            """)
        // vault-net (asynchronous: the runtime's eventfd takes the lowest free number, 3, before main): reading it
        // failed with "Invalid argument".
        let net = try CLI.exec(
            CLI.binDirectory.appendingPathComponent("vault-net").path, ["get", "k", "--passphrase-fd", "3"],
            environment: box.environment)
        #expect(net.status == 64)
        #expect(net.stderr.hasPrefix("vault: file descriptor 3 is not open (it was not passed to the program)\n"))
        let json = try box.vault(["get", "k", "--passphrase-fd", "7", "--json"], passphrase: false)
        #expect(json.status == 64)
        #expect(json.stderr.hasPrefix(#"{"error":{"code":"descriptor_not_open","exit_code":64,"#))
        // Passed, it works.
        let passed = try CLI.shell(
            #""$VAULT" get k --passphrase-fd 3 3<"$PASSFILE""#,
            environment: box.environment.merging(["PASSFILE": box.passphraseFile]) { $1 })
        #expect(passed.status == 0 && passed.stdoutText == "v")
    }

    /// A directory where the lock file goes: refused as unsafe (exit 4), like a symbolic link there.
    @Test func aLockFileThatIsADirectoryExitsFour() throws {
        let box = try Sandbox()
        try box.initVault()
        try FileManager.default.removeItem(atPath: box.vaultPath + ".lock")
        try FileManager.default.createDirectory(atPath: box.vaultPath + ".lock", withIntermediateDirectories: false)
        let result = try box.vault(["put", "k"], stdin: Data("v".utf8))
        #expect(result.status == 4)
        #expect(result.stderr == """
            vault: refusing to use '\(box.vaultPath).lock': the lock file is a directory
            hint: remove '\(box.vaultPath).lock' (it is not vault's); vault recreates it

            """)
    }

    /// `VAULT_LOCK_TIMEOUT` is bounded: `inf`, `nan`, negative numbers, words and more than an hour are refused
    /// at once (a held lock would otherwise make the writer wait for ever); the maximum itself is accepted.
    @Test func theLockTimeoutIsBounded() throws {
        let box = try Sandbox()
        try box.initVault()
        // Another process holds the vault's lock the whole time.
        let lock = open(box.vaultPath + ".lock", O_RDWR)
        #expect(lock >= 0 && flock(lock, LOCK_EX) == 0)
        defer { close(lock) }
        for value in ["inf", "Infinity", "nan", "-1", "3600.5", "1e9", "soon"] {
            let started = monotonicNow()
            let result = try CLI.exec(
                CLI.vault, ["put", "k", "--passphrase-file", box.passphraseFile], stdin: Data("v".utf8),
                environment: box.environment.merging(["VAULT_LOCK_TIMEOUT": value]) { $1 }, timeout: 20)
            #expect(result.status == 64, "\(value)")
            #expect(result.stderr.hasPrefix(
                "vault: VAULT_LOCK_TIMEOUT must be a number of seconds from 0 to 3600, not '\(value)'\n"))
            #expect(monotonicNow() - started < 10)
        }
        let bounded = try box.vault(["put", "k"], stdin: Data("v".utf8), extraEnvironment: ["VAULT_LOCK_TIMEOUT": "0.2"])
        #expect(bounded.status == 5)
        let maximum = try box.vault(["get", "k"], extraEnvironment: ["VAULT_LOCK_TIMEOUT": "3600"])
        #expect(maximum.status == 2)  // accepted (a reader takes no lock); there is no entry 'k'
    }

    // MARK: item 20

    /// `--name-fd N`: the name from a descriptor, never on the command line (`ps` shows argv to every user).
    @Test func namesCanBeGivenOffTheCommandLine() throws {
        let box = try Sandbox()
        try box.initVault()
        let name = "bank.example.com/alice"
        let nameFile = box.directory + "/name"
        try box.write(name + "\n", to: nameFile)
        var environment = box.environment
        environment["NAMEFILE"] = nameFile
        environment["PASSFILE"] = box.passphraseFile

        let put = try CLI.shell(
            #"printf 's3cret' | "$VAULT" put --name-fd 3 --passphrase-file "$PASSFILE" 3<"$NAMEFILE""#,
            environment: environment)
        #expect(put.status == 0, "\(put.stderr)")
        #expect(try box.vault(["list"]).stdoutText == name + "\n")

        let get = try box.vault(["get", "--name-fd", "0"], stdin: Data((name + "\n").utf8))
        #expect(get.status == 0 && get.stdoutText == "s3cret")

        // The same checks as for the argument: invalid UTF-8 is refused, not replaced.
        let invalid = try box.vault(["get", "--name-fd", "0"], stdin: Data([0x6B, 0xFF, 0x0A]))
        #expect(invalid.status == 64)
        #expect(invalid.stderr == "vault: invalid entry name: the name is not valid UTF-8\n")

        // Once: not both, not neither; put's stdin carries the value.
        let both = try box.vault(["get", name, "--name-fd", "0"], stdin: Data((name + "\n").utf8))
        #expect(both.status == 64)
        #expect(both.stderr.hasPrefix("vault: give the entry's name once: NAME or --name-fd N, not both\n"))
        let onStdin = try box.vault(["put", "--name-fd", "0"], stdin: Data("v".utf8))
        #expect(onStdin.status == 64)
        #expect(onStdin.stderr.hasPrefix("vault: stdin carries the value: use another --name-fd\n"))
        let closed = try box.vault(["get", "--name-fd", "3"])
        #expect(closed.status == 64)
        #expect(closed.stderr.hasPrefix("vault: file descriptor 3 is not open"))

        // delete: one name a line.
        #expect(try box.vault(["put", "other"], stdin: Data("v".utf8)).status == 0)
        let deleted = try box.vault(["delete", "--name-fd", "0"], stdin: Data("\(name)\nother\n".utf8))
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(try box.vault(["list"]).stdoutText == "")
    }
}

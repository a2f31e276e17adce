import Foundation
import Testing
import VaultTestSupport

/// `vault run` and `vault inject` (issue 12, "Any process"), through the real binary.
@Suite(.processTimeLimit) struct RunInjectTests {
    let box: Sandbox

    init() throws {
        box = try Sandbox()
        try box.initVault()
        for (name, value) in [("k1", "v1 with spaces"), ("k2", "v2\nsecond line"), ("k3", "v3"), ("odd \"name\"", "v4")] {
            let put = try box.vault(["put", name], stdin: Data(value.utf8))
            #expect(put.status == 0, "put \(name): \(put.stderr)")
        }
    }

    /// `vault run --passphrase-file P ARGUMENTS` (the option before `--`, which ends vault's options).
    func run(_ arguments: [String]) throws -> CLIResult {
        try box.vault(["run", "--passphrase-file", box.passphraseFile] + arguments, passphrase: false)
    }

    /// Starts `vault run --passphrase-file P ARGUMENTS` without waiting for it (its output dropped).
    func startRun(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.vault)
        process.arguments = ["run", "--passphrase-file", box.passphraseFile] + arguments
        process.environment = box.environment.merging(["PATH": "/usr/bin:/bin", "HOME": box.directory]) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Waits (at most 10 s) until `path` is a FIFO.
    func waitForFIFO(_ path: String) {
        let deadline = Date().addingTimeInterval(10)
        while AgentFiles.lstatMode(path).map({ $0 & S_IFMT }) != S_IFIFO, Date() < deadline { usleep(10_000) }
    }

    /// Issue 33 §4: the FIFO of a `vault run --mount` killed by SIGKILL stays, nothing serves it and its readers wait
    /// forever. The next --mount at that path replaces it (a FIFO of this user's that no writer serves) and says so;
    /// the reader that waited gets an end of file. A FIFO a live run serves is not replaced (exit 7), and that run's
    /// command still reads its copy whole.
    @Test func aStaleFIFOLeftByAKilledRunIsReplacedAndALiveOneIsNot() throws {
        let mount = box.directory + "/stale.env"
        let killed = try startRun(["--env", "A=k1", "--mount", mount, "--", "/bin/sleep", "1"])
        waitForFIFO(mount)
        kill(killed.processIdentifier, SIGKILL)
        killed.waitForExit()
        #expect(AgentFiles.lstatMode(mount).map { $0 & S_IFMT } == S_IFIFO, "SIGKILL leaves the FIFO")
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        reader.arguments = ["20", "/bin/cat", mount]
        reader.standardOutput = FileHandle.nullDevice
        try reader.run()
        usleep(200_000)
        let replaced = try run(["--env", "A=k1", "--mount", mount, "--", "/bin/cat", mount])
        #expect(replaced.status == 0 && replaced.stdoutText == "A='v1 with spaces'\n", "\(replaced.stdoutText) \(replaced.stderr)")
        #expect(replaced.stderr == "vault: note: --mount: '\(mount)' was a FIFO of yours that nothing served (left by a vault run that was killed): replaced\n")
        reader.waitForExit()
        #expect(reader.terminationStatus == 0, "the waiting reader got an end of file, not the 20 s timeout")
        #expect(AgentFiles.lstatMode(mount) == nil)

        // A live run's FIFO: refused as before, and its command reads its copy whole.
        let output = box.directory + "/live-output"
        let live = try startRun(["--env", "A=k1", "--mount", mount, "--", "/bin/sh", "-c", "sleep 1.5; cat \"$0\" > \"$1\"", mount, output])
        waitForFIFO(mount)
        let refused = try run(["--env", "A=k3", "--mount", mount, "--", "/bin/true"])
        #expect(refused.status == 7 && refused.stderr == "vault: --mount: '\(mount)' exists; it is made (as a FIFO) and removed by vault run\n", "\(refused.stderr)")
        live.waitForExit()
        #expect(live.terminationStatus == 0)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "A='v1 with spaces'\n")
    }

    @Test func runGivesSecretsByEnvironmentFileAndStdinAndExitsWithTheCommandsStatus() throws {
        try box.write("# comment\n\nB=k3\n", to: box.directory + "/env")
        let script = #"printf '%s|%s|' "$A" "$B"; cat "$F"; printf '|'; cat; printf '|%s|' "${VAULT_PASSPHRASE-unset}"; case "$F" in /dev/fd/*) echo memfd;; esac; exit 7"#
        let result = try box.vault(
            ["run", "--env", "A=k1", "--env-file", box.directory + "/env", "--file", "F=k2", "--stdin", "k3", "--",
             "/bin/sh", "-c", script],
            passphrase: false, extraEnvironment: ["VAULT_PASSPHRASE": "correct horse battery staple"])
        #expect(result.status == 7, "run: exit \(result.status), \(result.stderr)")
        #expect(result.stdoutText == "v1 with spaces|v3|v2\nsecond line|v3|unset|memfd\n")
        #expect(result.stderr == "")
    }

    /// Issue 21: `--mount PATH` serves a .env of the variables (or a filled template) through a FIFO, to every reader
    /// while the command runs, and removes it at exit; an existing PATH is refused and the command does not run.
    @Test func mountServesADotenvThroughAFifoWhileTheCommandRunsAndRemovesIt() throws {
        let mount = box.directory + "/project/.env"
        try FileManager.default.createDirectory(atPath: box.directory + "/project", withIntermediateDirectories: true)
        let script = #"test -p "$0" && stat -c %a "$0"; cat "$0"; printf '%s\n' ---; cat "$0"; exit 4"#
        let result = try run(["--env", "A=k1", "--env", "B=k2", "--env", "C=odd \"name\"", "--mount", mount, "--", "/bin/sh", "-c", script, mount])
        #expect(result.status == 4, "\(result.stderr)")
        let dotenv = "A='v1 with spaces'\nB=\"v2\\nsecond line\"\nC='v4'\n"
        #expect(result.stdoutText == "600\n" + dotenv + "---\n" + dotenv, "read twice, whole each time")
        #expect(!FileManager.default.fileExists(atPath: mount), "removed at exit")
        #expect(AgentFiles.lstatMode(mount) == nil)

        // A dotenv loader (python-dotenv, scripts/install-deps --test) reads back the exact values, quotes, $, #
        // and backslashes included (not `${NAME}`, which python-dotenv expands inside any quotes: the help says so).
        #expect(try box.vault(["put", "tricky1"], stdin: Data(#"pa$$ "w" #x $HOME"#.utf8)).status == 0)
        #expect(try box.vault(["put", "tricky2"], stdin: Data(#"back\slash 'q' $x "dq""#.utf8)).status == 0)
        let loader = try run(["--env", "A=k1", "--env", "B=k2", "--env", "T1=tricky1", "--env", "T2=tricky2", "--mount", mount, "--",
                              findTool("python3") ?? "/usr/bin/python3", "-c",
                              "import dotenv,json,sys; print(json.dumps(dotenv.dotenv_values(sys.argv[1]), sort_keys=True))", mount])
        let values = try JSONSerialization.jsonObject(with: loader.stdout) as? [String: String]
        #expect(loader.status == 0 && values == ["A": "v1 with spaces", "B": "v2\nsecond line", "T1": #"pa$$ "w" #x $HOME"#, "T2": #"back\slash 'q' $x "dq""#],
                "\(loader.stdoutText) \(loader.stderr)")

        // A template instead, filled as inject fills it.
        try box.write("user: {{ vault \"k3\" }}\n", to: box.directory + "/template")
        let templated = try run(["--mount", mount, "--mount-template", box.directory + "/template", "--", "/bin/cat", mount])
        #expect(templated.status == 0 && templated.stdoutText == "user: v3\n", "\(templated.stderr)")

        // A file put in the FIFO's place while the command runs gets nothing, and is not removed.
        let replaced = try run(["--env", "A=k1", "--mount", mount, "--", "/bin/sh", "-c", "rm \"$0\"; echo mine > \"$0\"; sleep 0.3; cat \"$0\"", mount])
        #expect(replaced.status == 0 && replaced.stdoutText == "mine\n", "\(replaced.stdoutText) \(replaced.stderr)")
        #expect(try String(contentsOfFile: mount, encoding: .utf8) == "mine\n")
        try FileManager.default.removeItem(atPath: mount)

        // An existing path: refused, exit 7, the command does not run, the file is left as it was.
        try box.write("mine\n", to: mount)
        let refused = try run(["--env", "A=k1", "--mount", mount, "--", "/bin/sh", "-c", "echo ran"])
        #expect(refused.status == 7 && refused.stdout.isEmpty, "\(refused.stderr)")
        #expect(refused.stderr == "vault: --mount: '\(mount)' exists; it is made (as a FIFO) and removed by vault run\n")
        #expect(try String(contentsOfFile: mount, encoding: .utf8) == "mine\n")
        let orphan = try run(["--mount-template", box.directory + "/template", "--", "/bin/true"])
        #expect(orphan.status == 64 && orphan.stderr.contains("--mount-template needs --mount PATH"), "\(orphan.stderr)")
    }

    /// Issue 24 §5: dotenv files as they are written (CRLF, a BOM, export, quotes, comments), and a bad line named
    /// by its number, never shown: in a .env file of values (not entry names) the line is the secret.
    @Test func envFileIsReadAsDotenvAndABadLineIsNamedNotShown() throws {
        let file = box.directory + "/env"
        let text = "\u{FEFF}# saved on Windows\r\n\r\nexport A=k1\r\nB = \"odd \\\"name\\\"\" # quoted\r\n  C='k3'\r\nD=k2 # comment\r\n"
        try box.write(text, to: file)
        let script = #"printf '%s|%s|%s|%s' "$A" "$B" "$C" "$D""#
        let result = try run(["--env-file", file, "--", "/bin/sh", "-c", script])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutText == "v1 with spaces|v4|v3|v2\nsecond line")

        for (lines, line, reason) in [
            ("A=k1\nTOKEN: ghp_s3cr3tValue\n", 2, "expected NAME=ENTRY"),
            ("ghp_s3cr3tValue\n", 1, "expected NAME=ENTRY"),
            ("A=k1\r\n\r\nB='ghp_s3cr3tValue\r\n", 3, "the quote is not closed"),
            ("ghp s3cr3tValue=k1\n", 1, "the variable name is not letters, digits and _ (not starting with a digit)"),
            ("A=\"ghp_s3cr3tValue\" x\n", 1, "only a # comment may follow the closing quote"),
            ("A=ghp_s3cr3t\rValue\n", 1, "contains a carriage return or NUL"),
            ("A=\n", 1, "no entry after '='"),
        ] {
            try box.write(lines, to: file)
            let bad = try run(["--env-file", file, "--", "/bin/true"])
            #expect(bad.status == 64)
            #expect(bad.stderr == "vault: \(file): line \(line): \(reason) (the line is not shown: it may hold a secret)\n")
        }
        // A .env of values read as entry names: the value is not echoed as a missing entry's name.
        try box.write("A=k1\nTOKEN=ghp_s3cr3tValue\n", to: file)
        let missing = try run(["--env-file", file, "--", "/bin/true"])
        #expect(missing.status == 2)
        #expect(missing.stderr.hasPrefix("vault: \(file): line 2: no such entry in vault '\(box.vaultPath)'"))
        #expect(!missing.stderr.contains("s3cr3t"))
    }

    /// A shell's process substitution gives a FIFO at /dev/fd/N (Foundation read it as nothing: "cannot read
    /// '/dev/fd/63' failed"): --env-file, inject's template and --mount-template read it to its end. A missing file
    /// says its path and why, once.
    @Test func envFileAndTemplatesMayBeProcessSubstitutions() throws {
        var environment = box.environment
        environment["VAULT"] = CLI.vault
        environment["P"] = box.passphraseFile
        let script = #"""
            "$VAULT" run --passphrase-file "$P" --env-file <(printf 'A=k1\nB=k3\n') -- /bin/sh -c 'printf "%s|%s;" "$A" "$B"'
            "$VAULT" inject --passphrase-file "$P" -i <(printf 'x={{ vault "k3" }};')
            "$VAULT" run --passphrase-file "$P" --mount "$D/m" --mount-template <(printf 'y={{ vault "k1" }}') -- /bin/sh -c 'cat "$0"' "$D/m"
            """#
        environment["D"] = box.directory
        let result = try CLI.exec("/bin/bash", ["-c", script], environment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutText == "v1 with spaces|v3;x=v3;y=v1 with spaces")

        let missing = try run(["--env-file", box.directory + "/nothing.env", "--", "/bin/true"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "vault: cannot read '\(box.directory)/nothing.env': No such file or directory\n")
    }

    @Test func runRefusesAMissingEntryAndDoesNotStartTheCommand() throws {
        let marker = box.directory + "/ran"
        let result = try run(["--env", "A=k1", "--env", "B=missing", "--", "/usr/bin/touch", marker])
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "vault: no entry 'missing' in vault '\(box.vaultPath)'\nhint: 'vault list' shows the names\n")
        #expect(!FileManager.default.fileExists(atPath: marker))

        let bad = try run(["--env", "1A=k1", "--", "/bin/true"])
        #expect(bad.status == 64)
        let nul = try box.vault(["put", "nul"], stdin: Data([0x61, 0x00, 0x62]))
        #expect(nul.status == 0)
        let refused = try run(["--env", "A=nul", "--", "/bin/true"])
        #expect(refused.status == 64)
        #expect(refused.stderr.hasPrefix("vault: entry 'nul' contains a NUL byte and cannot be an environment variable"))
    }

    @Test func runPassesSigtermOnAndDiesOfTheCommandsSignal() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.vault)
        process.arguments = ["run", "--passphrase-file", box.passphraseFile, "--", "/bin/sh", "-c",
                             "trap 'echo got INT' INT; trap 'echo got TERM; exit 3' TERM; echo ready; while :; do sleep 0.05; done"]
        process.environment = box.environment.merging(["PATH": "/usr/bin:/bin", "VAULT_AGENT_SOCK": "/nonexistent/x"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let reader = output.fileHandleForReading
        var seen = Data()
        let deadline = Date().addingTimeInterval(30)
        while !String(decoding: seen, as: UTF8.self).contains("ready\n"), Date() < deadline {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            seen += chunk
        }
        #expect(String(decoding: seen, as: UTF8.self) == "ready\n")
        // A SIGINT sent to vault alone (not from the terminal) is passed on too.
        kill(process.processIdentifier, SIGINT)
        while !String(decoding: seen, as: UTF8.self).contains("got INT\n"), Date() < deadline {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            seen += chunk
        }
        kill(process.processIdentifier, SIGTERM)
        seen += reader.readDataToEndOfFile()
        process.waitForExit()
        #expect(String(decoding: seen, as: UTF8.self) == "ready\ngot INT\ngot TERM\n")
        #expect(process.terminationReason == .exit && process.terminationStatus == 3)

        // A command killed by a signal: vault dies of the same signal.
        let killed = try run(["--", "/bin/sh", "-c", "kill -KILL $$"])
        #expect(killed.status == 128 + SIGKILL || killed.status == SIGKILL, "exit \(killed.status)")
    }

    /// Ctrl-C reaches the command (and vault exits with its status). That it arrives once is by design (vault
    /// passes on only a SIGINT sent to it alone, `si_code == SI_USER`), but not provable here: the terminal's
    /// SIGINT and a passed-on one would arrive together, and the kernel keeps one pending SIGINT.
    @Test func ctrlCOnTheTerminalReachesTheCommand() throws {
        var environment = box.environment
        environment["VAULT"] = CLI.vault
        environment["P"] = box.passphraseFile
        let inner = "n=0; trap 'n=$((n+1))' INT; echo ready; sleep 2; sleep 1; echo \"INT x$n\"; exit 5"
        // The outer shell has a trap (not an ignored SIGINT, which children would inherit) so it reports the exit.
        let script = "trap : INT; \"$VAULT\" run --passphrase-file \"$P\" -- /bin/sh -c '\(inner.replacingOccurrences(of: "'", with: "'\\''"))'; echo \"[exit $?]\""
        let result = try PseudoTerminal.run(
            "/bin/sh", ["-c", script], steps: [("ready", "\u{03}", nil)], environment: environment, seconds: 30, timeout: 60)
        #expect(result.stdoutText.hasSuffix("INT x1\n[exit 5]\n[echo on]\n"), "transcript: \(result.stdoutText)")
    }

    @Test func injectFillsPlaceholdersAndWritesOut0600Atomically() throws {
        let template = "a={{ vault \"k1\" }};b={{vault \"k3\"}};c={{ vault \"odd \\\"name\\\"\" }};{{ other }} {{vaultish}}\n"
        let stdout = try box.vault(["inject"], stdin: Data(template.utf8))
        #expect(stdout.status == 0, "inject: \(stdout.stderr)")
        #expect(stdout.stdoutText == "a=v1 with spaces;b=v3;c=v4;{{ other }} {{vaultish}}\n")

        let out = box.directory + "/out.conf"
        try box.write("old\n", to: out, mode: 0o644)
        try box.write(template, to: box.directory + "/t.tpl")
        let file = try box.vault(["inject", "-i", box.directory + "/t.tpl", "-o", out])
        #expect(file.status == 0 && file.stdout.isEmpty && file.stderr == "", "inject -o: \(file.stderr)")
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "a=v1 with spaces;b=v3;c=v4;{{ other }} {{vaultish}}\n")
        let mode = try FileManager.default.attributesOfItem(atPath: out)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        // A missing entry: an error naming it, OUT untouched, no temporary file left.
        let missing = try box.vault(["inject", "-o", out], stdin: Data("x={{ vault \"k1\" }} y={{ vault \"nope\" }}\n".utf8))
        #expect(missing.status == 2)
        #expect(missing.stderr == "vault: no entry 'nope' in vault '\(box.vaultPath)'\nhint: 'vault list' shows the names\n")
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "a=v1 with spaces;b=v3;c=v4;{{ other }} {{vaultish}}\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: box.directory).filter { $0.hasSuffix(".tmp") } == [])

        let malformed = try box.vault(["inject"], stdin: Data("ok\nx={{ vault k1 }}\n".utf8))
        #expect(malformed.status == 64)
        #expect(malformed.stdout.isEmpty)
        #expect(malformed.stderr == "vault: malformed placeholder on line 2: expected {{ vault \"ENTRY\" }}, {{ vault \"ENTRY\" \"FIELD\" }} or {{ otp \"ENTRY\" }}\n")
    }
}

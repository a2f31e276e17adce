import Foundation
import Testing
import VaultTestSupport

/// An unlock prompt of `vault secret-service` that asks the passphrase itself (issue 37): through a real askpass
/// program (a script here, as ssh-askpass is one), or a pinentry (a small program speaking the Assuan protocol that
/// records what it is told, and Debian's real pinentry-curses on a pseudo-terminal); three tries; a Dismiss ends the
/// program; `vault unlock` elsewhere still completes it; with no program configured it waits as before.
@Suite(.processTimeLimit, .serialized) struct SecretServicePromptTests {
    typealias Provider = SecretServiceCLITests.Provider

    /// An executable script `name` in the box.
    static func script(_ box: AgentBox, _ name: String, _ text: String) throws -> String {
        let path = box.directory + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o700)
        return path
    }

    /// An askpass that counts its runs and notes its question; `answer` is shell that prints the answer of run `$n`.
    static func askpass(_ box: AgentBox, answer: String) throws -> String {
        try script(box, "askpass", """
            #!/bin/sh
            n=$(( $(cat '\(box.directory)/count' 2>/dev/null || echo 0) + 1 )); echo $n > '\(box.directory)/count'
            printf '%s\\n' "$1" >> '\(box.directory)/questions'
            \(answer)

            """)
    }

    /// The box's vault with one item `k=v` seen by a provider started with the arguments and environment
    /// `configure` gives, then locked.
    static func lockedBox(
        _ secret: String, _ configure: (AgentBox) throws -> (arguments: [String], environment: [String: String])
    ) throws -> (AgentBox, Provider) {
        let (box, bus, _) = try SecretServiceLockedTests.boxWithItem(secret)
        let first = try #require(bus.provider)
        let (arguments, environment) = try configure(box)
        bus.provider = try bus.start(extra: ["--replace"] + arguments, environment: environment)
        _ = first.finish()
        // The new provider learns the item while the vault is still unlocked.
        #expect(try bus.tool(["search", "k", "v"]).status == 0)
        #expect(try box.vault(["lock"]).status == 0)
        #expect(try AgentTests.poll { bus.log.contains("collection/test locked") }, "\(bus.log)")
        return (box, bus)
    }

    static func runs(_ box: AgentBox) -> Int { Int(Provider.text(box.directory + "/count").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 }

    /// jeepney's connection and session, and `dismiss_when(prompt, file)`.
    static let prelude = SecretServiceClientsTests.jeepney + """
        import os, time
        def dismiss_when(prompt, file):
            while not os.path.exists(file): time.sleep(0.02)
            call(prompt, 'Dismiss', '')

        """

    /// Unlock then Prompt from jeepney, `action` (one Python statement) once the prompt runs, and the Completed
    /// signal printed.
    static func prompt(then action: String) -> String {
        """
        unlocked, path = call(service, 'Unlock', 'ao', ['/org/freedesktop/secrets/aliases/default'])
        rule = MatchRule(type='signal', interface='org.freedesktop.Secret.Prompt', member='Completed', path=path)
        call(message_bus, 'AddMatch', 's', rule.serialise())
        prompt = DBusAddress(path, bus_name='org.freedesktop.secrets', interface='org.freedesktop.Secret.Prompt')
        with conn.filter(rule) as queue:
            call(prompt, 'Prompt', 's', '')
            \(action)
            print(conn.recv_until_filtered(queue, timeout=20).body, flush=True)

        """
    }

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func anAskpassUnlocksAfterAWrongPassphraseAndTheLookupGetsTheSecret() throws {
        let secret = AgentTests.canary("askpass")
        // $SSH_ASKPASS as ssh uses it: without a display only with SSH_ASKPASS_REQUIRE=force.
        let (box, bus) = try Self.lockedBox(secret) { box in
            let program = try Self.askpass(box, answer: "if [ $n -ge 2 ]; then cat '\(box.passphraseFile)'; else echo not-the-passphrase; fi")
            return ([], ["SSH_ASKPASS": program, "SSH_ASKPASS_REQUIRE": "force"])
        }
        defer { box.stopAgents() }
        let lookup = try AgentCLI.exec("/usr/bin/secret-tool", ["lookup", "k", "v"], environment: bus.environment)
        #expect(lookup.status == 0 && lookup.stdoutText == secret, "\(lookup.stderr) \(bus.log)")
        #expect(Self.runs(box) == 2)
        let questions = Provider.text(box.directory + "/questions")
        #expect(questions == """
            A program asks, through the Secret Service, to unlock the vault '\(box.vaultPath)'. Its passphrase: 
            A program asks, through the Secret Service, to unlock the vault '\(box.vaultPath)'. Its passphrase (wrong passphrase; try 2 of 3): 

            """, "\(questions)")
        #expect(bus.log.contains("unlocked \(box.vaultPath)"), "\(bus.log)")
        #expect(try box.vault(["agent", "status"]).stdoutText.contains(box.vaultPath), "the agent holds the vault")
        let passphrase = try String(contentsOfFile: box.passphraseFile, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(!bus.log.contains(passphrase) && !questions.contains(passphrase))
    }

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func threeWrongPassphrasesOrACancelDismissThePrompt() throws {
        // Three wrong answers, then a cancel (exit 1).
        let (box, bus) = try Self.lockedBox(AgentTests.canary("wrong")) { box in
            (["--askpass", try Self.askpass(box, answer: "[ $n -le 3 ] && echo wrong-$n && exit 0; exit 1")], [:])
        }
        defer { box.stopAgents() }
        let run = try bus.python(Self.prelude + Self.prompt(then: "pass") + Self.prompt(then: "pass"))
        #expect(run.stdoutText == "(True, ('ao', []))\n(True, ('ao', []))\n", "\(run.stdoutText) \(run.stderr) \(bus.log)")
        #expect(Self.runs(box) == 4)
        #expect(Provider.text(box.directory + "/questions").components(separatedBy: "\n").map { $0.hasSuffix("(wrong passphrase; try 3 of 3): ") }
                == [false, false, true, false, false], "\(Provider.text(box.directory + "/questions"))")
        #expect(bus.log.contains("cannot unlock \(box.vaultPath): "), "\(bus.log)")
        #expect(bus.log.contains("ended with status 1; dismissed"), "\(bus.log)")
        #expect(try box.vault(["agent", "status"]).stdoutText.contains(box.vaultPath) == false, "still locked")
        #expect(bus.isRunning)
    }

    /// A Dismiss ends the askpass (its process group); `vault unlock` in another terminal completes the next prompt
    /// and ends its askpass too.
    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func aDismissOrAnUnlockElsewhereEndsTheAskpass() throws {
        let (box, bus) = try Self.lockedBox(AgentTests.canary("dismiss")) { box in
            (["--askpass", try Self.askpass(box, answer: "echo $$ > '\(box.directory)/pid'.$n; exec sleep 60")], [:])
        }
        defer { box.stopAgents() }
        let pidFile = box.directory + "/pid"
        func askpassPID(_ n: Int) -> pid_t? { pid_t(Provider.text("\(pidFile).\(n)").trimmingCharacters(in: .whitespacesAndNewlines)) }

        let dismissed = try bus.python(Self.prelude + Self.prompt(then: "dismiss_when(prompt, '\(pidFile).1')"))
        #expect(dismissed.stdoutText == "(True, ('ao', []))\n", "\(dismissed.stdoutText) \(dismissed.stderr)")
        let one = try #require(askpassPID(1))
        #expect(try AgentTests.poll { kill(one, 0) != 0 }, "the askpass still runs after the Dismiss")

        let running = try AgentCLI.start(SecretServiceCLITests.python, ["-c", Self.prelude + Self.prompt(then: "print('asking', flush=True)")], environment: bus.environment)
        #expect(try AgentTests.poll { askpassPID(2) != nil }, "\(bus.log)")
        try box.unlock()
        let completed = running.finish()
        #expect(completed.stdoutText == "asking\n(False, ('ao', ['/org/freedesktop/secrets/aliases/default']))\n", "\(completed.stdoutText) \(completed.stderr)")
        let two = try #require(askpassPID(2))
        #expect(try AgentTests.poll { kill(two, 0) != 0 }, "the askpass still runs after vault unlock")
    }

    /// A program that cannot run (not found) dismisses the prompt with the reason in the log; the provider stays up.
    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func aProgramThatCannotRunDismissesThePrompt() throws {
        let (box, bus) = try Self.lockedBox(AgentTests.canary("missing")) { box in (["--askpass", box.directory + "/no-such-askpass"], [:]) }
        defer { box.stopAgents() }
        let run = try bus.python(Self.prelude + Self.prompt(then: "pass"))
        #expect(run.stdoutText == "(True, ('ao', []))\n", "\(run.stdoutText) \(run.stderr)")
        #expect(bus.log.contains("cannot run '\(box.directory)/no-such-askpass': No such file or directory"), "\(bus.log)")
        #expect(bus.isRunning)
    }

    /// `$SSH_ASKPASS` without a display (and no SSH_ASKPASS_REQUIRE=force) is not used, as ssh does not: the prompt
    /// waits for `vault unlock`.
    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func withoutAProgramThePromptWaitsForVaultUnlock() throws {
        let secret = AgentTests.canary("waits")
        let (box, bus) = try Self.lockedBox(secret) { box in
            ([], ["SSH_ASKPASS": try Self.askpass(box, answer: "cat '\(box.passphraseFile)'")])
        }
        defer { box.stopAgents() }
        let lookup = try AgentCLI.start("/usr/bin/secret-tool", ["lookup", "k", "v"], environment: bus.environment)
        #expect(try AgentTests.poll { bus.log.contains("waiting for 'vault unlock'") }, "\(bus.log)")
        #expect(kill(lookup.pid, 0) == 0)
        try box.unlock()
        #expect(lookup.finish().stdoutText == secret)
        #expect(Self.runs(box) == 0, "the askpass ran")
    }

    /// A pinentry (the Assuan protocol): the description, the prompt, SETERROR on the second try, the passphrase in
    /// a percent-escaped D line; a cancel (ERR 83886179) dismisses.
    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func aPinentryIsAskedInItsProtocol() throws {
        let secret = AgentTests.canary("pinentry")
        let (box, bus) = try Self.lockedBox(secret) { box in (["--pinentry", box.directory + "/pinentry"], [:]) }
        defer { box.stopAgents() }
        let log = box.directory + "/assuan"
        _ = try Self.script(box, "pinentry", """
            #!/usr/bin/python3
            import os, sys, urllib.parse
            count = '\(box.directory)/count'
            n = int(open(count).read()) + 1 if os.path.exists(count) else 1
            open(count, 'w').write(str(n))
            secret = open('\(box.passphraseFile)').read().rstrip('\\n')
            answers = {1: 'D ' + urllib.parse.quote('50%\\nwrong', safe=' '), 2: 'D ' + urllib.parse.quote(secret, safe=''), 3: 'ERR 83886179 Operation cancelled <Pinentry>'}
            out = sys.stdout
            out.write('OK Pleased to meet you\\n'); out.flush()
            with open('\(log)', 'a') as record:
                for line in sys.stdin:
                    command = line.rstrip('\\n')
                    record.write(command + '\\n')
                    if command == 'GETPIN':
                        answer = answers[n]
                        out.write(answer + '\\n' + ('' if answer.startswith('ERR') else 'OK\\n'))
                    elif command == 'BYE':
                        out.write('OK closing connection\\n'); out.flush(); break
                    else:
                        out.write('OK\\n')
                    out.flush()

            """)
        let lookup = try AgentCLI.exec("/usr/bin/secret-tool", ["lookup", "k", "v"], environment: bus.environment)
        #expect(lookup.status == 0 && lookup.stdoutText == secret, "\(lookup.stderr) \(bus.log)")
        let description = "SETDESC A program asks, through the Secret Service, to unlock the vault '\(box.vaultPath)'. Its passphrase"
        #expect(Provider.text(log) == """
            SETTITLE vault
            \(description)
            SETPROMPT Passphrase:
            GETPIN
            BYE
            SETTITLE vault
            \(description)
            SETPROMPT Passphrase:
            SETERROR wrong passphrase; try 2 of 3
            GETPIN
            BYE

            """, "\(Provider.text(log))")

        #expect(try box.vault(["lock"]).status == 0)
        let cancelled = try bus.python(Self.prelude + Self.prompt(then: "pass"))
        #expect(cancelled.stdoutText == "(True, ('ao', []))\n", "\(cancelled.stdoutText) \(cancelled.stderr)")
        #expect(bus.log.contains("answered ERR 83886179 Operation cancelled <Pinentry>; dismissed"), "\(bus.log)")
    }

    /// Debian's real pinentry-curses, which draws on a terminal: the provider runs on a pseudo-terminal (as `vault
    /// secret-service` run in a terminal), tells the pinentry its tty (`OPTION ttyname`), the user types the
    /// passphrase into the curses dialog, and the prompt completes unlocked.
    @Test(.enabled(if: SecretServiceCLITests.present && FileManager.default.isExecutableFile(atPath: "/usr/bin/pinentry-curses")
                   || ProcessInfo.processInfo.environment["CI"] == "true", "pinentry-curses is missing: run scripts/install-deps --test"))
    func theRealPinentryCursesAsksOnTheProvidersTerminal() throws {
        let (box, bus, _) = try SecretServiceLockedTests.boxWithItem(AgentTests.canary("curses"))
        defer { box.stopAgents() }
        #expect(try box.vault(["lock"]).status == 0)
        let passphrase = try String(contentsOfFile: box.passphraseFile, encoding: .utf8).trimmingCharacters(in: .newlines)
        let steps = try JSONSerialization.data(withJSONObject: [
            "seconds": 60,
            "steps": [["Passphrase:", passphrase + "\r", NSNull(), NSNull()], ["unlocked /", "", NSNull(), Int(SIGTERM)]] as [Any],
        ])
        let first = try #require(bus.provider)
        let terminal = try AgentCLI.start(
            "/usr/bin/python3", ["-c", PseudoTerminal.driver, CLI.vault, "secret-service", "--replace", "--pinentry", "/usr/bin/pinentry-curses"],
            stdin: steps, environment: bus.environment.merging(["TERM": "xterm"]) { $1 }, timeout: 90)
        bus.provider = nil
        _ = first.finish()  // it ends once the new provider took the name
        let run = try bus.python(Self.prelude + Self.prompt(then: "pass"))
        #expect(run.stdoutText == "(False, ('ao', ['/org/freedesktop/secrets/aliases/default']))\n", "\(run.stdoutText) \(run.stderr)")
        let shown = terminal.finish()
        #expect(shown.status == 0, "\(shown.stdoutText) \(shown.stderr.debugDescription)")
        #expect(shown.stdoutText.contains("asking with /usr/bin/pinentry-curses"), "\(shown.stdoutText)")
        #expect(!shown.stdoutText.contains(passphrase), "the passphrase was echoed")
        #expect(try box.vault(["agent", "status"]).stdoutText.contains(box.vaultPath), "the agent holds the vault")
    }
}

import Foundation
import Testing
import VaultCommands
import VaultTestSupport

/// ``QuickPath``: `get`, `put` and `list` on a vault the agent holds, parsed without ArgumentParser.
@Suite(.processTimeLimit) struct QuickPathTests {
    typealias Invocation = QuickPath.Invocation

    // MARK: Which command lines it takes

    @Test(arguments: [
        (["get", "k"], Invocation(verb: .get(name: "k"), vaultPath: nil, json: false)),
        (["get", "--vault", "/v/a.vault", "k", "--json"], Invocation(verb: .get(name: "k"), vaultPath: "/v/a.vault", json: true)),
        (["get", "k", "--vault=rel.vault"], Invocation(verb: .get(name: "k"), vaultPath: "rel.vault", json: false)),
        (["get", "help"], Invocation(verb: .get(name: "help"), vaultPath: nil, json: false)),
        (["list"], Invocation(verb: .list, vaultPath: nil, json: false)),
        (["list", "--json", "--vault", "x"], Invocation(verb: .list, vaultPath: "x", json: true)),
        (["put", "k"], Invocation(verb: .put(name: "k", noClobber: false, trimNewline: false), vaultPath: nil, json: false)),
        (["put", "--trim-newline", "k", "--no-clobber", "--json"],
            Invocation(verb: .put(name: "k", noClobber: true, trimNewline: true), vaultPath: nil, json: true)),
    ])
    func plainFormsAreTaken(arguments: [String], expected: Invocation) {
        #expect(QuickPath.parse(arguments) == expected)
    }

    /// Everything else is ArgumentParser's, which gives the help, the usage errors and the rarer options.
    @Test(arguments: [
        [], ["get"], ["get", "a", "b"], ["list", "a"], ["put"], ["delete", "k"], ["help", "get"], ["--version"],
        ["get", "--help"], ["get", "-h"], ["list", "--help"], ["get", "k", "--version"],
        ["get", "--", "-k"], ["get", "-k"], ["get", ""],
        ["get", "k", "--name-fd", "3"], ["get", "--name-fd=3"], ["get", "k", "--passphrase-file", "p"],
        ["get", "k", "--passphrase-fd", "3"], ["get", "k", "--accept-rollback"],
        ["get", "k", "--vault"], ["get", "--vault", "--json", "k"], ["get", "--vault", "-", "k"],
        ["get", "k", "--vault", "a", "--vault", "b"], ["get", "k", "--vault=a", "--vault=b"], ["get", "k", "--json", "--json"],
        ["get", "k", "--no-clobber"], ["list", "--trim-newline"], ["put", "k", "--no-clobber", "--no-clobber"],
        ["get", "k", "--jso"], ["get", "k", "--vault-path", "x"], ["GET", "k"], ["list", "-"],
    ])
    func everyOtherCommandLineIsArgumentParsers(arguments: [String]) {
        #expect(QuickPath.parse(arguments) == nil, "\(arguments)")
    }

    // MARK: The same bytes either way

    /// `vault put -- NAME` around the agent (``AgentBox/around(_:stdin:)`` puts its option last, after `--`).
    static func putAround(_ box: AgentBox, _ name: String, _ value: Data) throws -> AgentRun {
        try box.vault(
            ["put", "--passphrase-file", box.passphraseFile, "--", name], stdin: value,
            environment: ["VAULT_AGENT_SOCK": box.elsewhereSocket])
    }

    /// The quick path's runs carry the test hook that makes a command it leaves to the parser fail (exit 70), so
    /// that they are known to have taken it.
    static let required = [QuickPath.requireVariable: "1"]

    /// Each command line run through the quick path (no passphrase source; the test hook makes sure that it is
    /// taken) and through ArgumentParser (the same plus `--passphrase-file`, which the quick path leaves alone;
    /// the agent still serves the vault): the same exit code, stdout and stderr, and for `put` the same stored
    /// value.
    @Test func theQuickPathAndArgumentParserGiveTheSameBytes() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        let binary = Data((0...255).map { UInt8($0) } + Array("\n\n".utf8))
        #expect(try box.around(["put", "binary"], stdin: binary).status == 0)
        #expect(try box.around(["put", "text"], stdin: Data("a value\n".utf8)).status == 0)
        #expect(try box.around(["put", "help"], stdin: Data("named help".utf8)).status == 0)
        try box.unlock()

        let vaultOption = "--vault=" + box.vaultPath
        let readOnly: [[String]] = [
            ["get", "binary"], ["get", "text"], ["get", "--json", "binary"], ["get", "text", "--json"], ["get", "help"],
            ["get", "missing"], ["get", "missing", "--json"], ["get", "bad\u{7}name"], ["get", "text", vaultOption],
            ["list"], ["list", "--json"], ["list", "--vault", box.vaultPath],
        ]
        for arguments in readOnly {
            let quick = try box.vault(arguments, environment: Self.required), parsed = try box.vault(arguments, source: true)
            #expect(quick.status == parsed.status, "\(arguments): exit \(quick.status) / \(parsed.status)")
            #expect(quick.stdout == parsed.stdout, "\(arguments): stdout differs")
            #expect(quick.stderr == parsed.stderr, "\(arguments): stderr \(quick.stderr) / \(parsed.stderr)")
        }
        #expect(try box.vault(["get", "missing"], environment: Self.required).status == 2)
        #expect(try box.vault(["get", "binary"], environment: Self.required).stdout == binary)

        // Writes: each pair starts from the same state, and leaves the same value behind.
        let writes: [([String], Data)] = [
            (["put", "new"], Data("x\r\n".utf8)), (["put", "new", "--trim-newline"], Data("x\r\n".utf8)),
            (["put", "--json", "new"], Data("y".utf8)), (["put", "text", "--no-clobber"], Data("z".utf8)),
            (["put", "text", "--no-clobber", "--json"], Data("z".utf8)), (["put", "new", "--no-clobber"], Data()),
            (["put", "bad\u{85}name"], Data("v".utf8)),
        ]
        for (arguments, value) in writes {
            var outcomes: [(AgentRun, Data)] = []
            for source in [false, true] {
                _ = try box.around(["delete", "--force", "new"])
                #expect(try box.around(["put", "text"], stdin: Data("a value\n".utf8)).status == 0)
                let run = try box.vault(arguments, stdin: value, source: source, environment: source ? [:] : Self.required)
                outcomes.append((run, try box.around(["get", "new"]).stdout))
            }
            let (quick, quickValue) = outcomes[0], (parsed, parsedValue) = outcomes[1]
            #expect(quick.status == parsed.status, "\(arguments): exit \(quick.status) / \(parsed.status)")
            #expect(quick.stdout == parsed.stdout, "\(arguments): stdout \(quick.stdoutText) / \(parsed.stdoutText)")
            #expect(quick.stderr == parsed.stderr, "\(arguments): stderr \(quick.stderr) / \(parsed.stderr)")
            #expect(quickValue == parsedValue, "\(arguments): stored values differ")
        }
        #expect(try box.vault(["put", "text", "--no-clobber"], stdin: Data("z".utf8), environment: Self.required).status == 7)
        #expect(try box.around(["get", "text"]).stdout == Data("a value\n".utf8), "--no-clobber stored a value")
    }

    /// A locked vault, a missing agent and an agent holding another vault all leave the command to the
    /// ordinary path: the usual "no passphrase" failure at once, nothing read from stdin, nothing stored.
    @Test func aVaultTheAgentDoesNotHoldGoesTheOrdinaryWay() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        #expect(try box.around(["put", "k"], stdin: Data("v".utf8)).status == 0)
        // No agent at all.
        AgentTests.expectLocked(try box.vault(["get", "k"]), "get, no agent")
        // An agent that holds another vault.
        let other = try AgentBox(sharingAgentWith: box)
        try other.initVault()
        try other.unlock()
        AgentTests.expectLocked(try box.vault(["get", "k"]), "get, another vault unlocked")
        AgentTests.expectLocked(try box.vault(["list"]), "list, another vault unlocked")
        AgentTests.expectLockedJSON(try box.vault(["list", "--json"]), "list --json, another vault unlocked")
        AgentTests.expectLocked(try box.vault(["put", "k"], stdin: Data("new".utf8)), "put, another vault unlocked")
        #expect(try box.around(["get", "k"]).stdout == Data("v".utf8), "a put that failed changed the value")
        // The test hook confirms that these were the parser's.
        for arguments in [["get", "k"], ["list", "--json"], ["put", "k"]] {
            let hooked = try box.vault(arguments, stdin: Data("new".utf8), environment: Self.required)
            #expect(hooked.status == QuickPath.requiredButDeclinedExitCode && hooked.stdout.isEmpty, "\(arguments): \(hooked.stderr)")
        }
        // Unlocked, then locked again.
        try box.unlock()
        #expect(try box.vault(["get", "k"], environment: Self.required).stdout == Data("v".utf8))
        #expect(try box.vault(["lock"]).status == 0)
        AgentTests.expectLocked(try box.vault(["get", "k"]), "get after lock")
    }

    /// A held vault, but a command line the quick path leaves to the parser: a `--vault` that names a directory
    /// and a `VAULT_LOCK_TIMEOUT` out of range (the parser's usage errors, 64), and forms outside the plain ones
    /// (`--`, `--name-fd`), which the parser runs through the agent.
    @Test func theParserKeepsWhatTheQuickPathDoesNotTake() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        #expect(try Self.putAround(box, "-dash", Data("d".utf8)).status == 0)
        try box.unlock()
        let cases: [([String], [String: String], Int32, String)] = [
            (["get", "k", "--vault", box.directory], [:], 64, "names a directory"),
            (["list", "--vault=" + box.directory + "/"], [:], 64, "names a directory"),
            (["get", "--", "-dash"], ["VAULT_LOCK_TIMEOUT": "inf"], 64, "VAULT_LOCK_TIMEOUT must be a number"),
            (["get", "--", "-dash"], [:], 0, ""),
        ]
        for (arguments, environment, status, error) in cases {
            let hooked = try box.vault(arguments, environment: environment.merging(Self.required) { $1 })
            #expect(hooked.status == QuickPath.requiredButDeclinedExitCode, "\(arguments): exit \(hooked.status), \(hooked.stderr)")
            let parsed = try box.vault(arguments, environment: environment)
            #expect(parsed.status == status && (error.isEmpty ? parsed.stderr.isEmpty : parsed.stderr.contains(error)),
                "\(arguments): exit \(parsed.status), \(parsed.stderr)")
        }
        #expect(try box.vault(["get", "--", "-dash"]).stdout == Data("d".utf8))
    }
}

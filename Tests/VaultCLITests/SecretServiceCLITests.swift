import Foundation
import Testing
import VaultTestSupport

/// `vault secret-service` with the real clients (issue 37): a private session bus the test starts (`dbus-daemon
/// --session`), the provider on it serving the box's vault through the box's agent, and libsecret's `secret-tool`,
/// Python's `keyring` (its SecretService backend, through `secretstorage`) and `gdbus` as the clients.
@Suite(.processTimeLimit, .serialized) struct SecretServiceCLITests {
    static let python = "/usr/bin/python3"
    static var present: Bool {
        (["/usr/bin/dbus-daemon", "/usr/bin/secret-tool", "/usr/bin/gdbus"].allSatisfy(FileManager.default.isExecutableFile)
            && (try? AgentCLI.exec(python, ["-c", "import secretstorage, keyring"], environment: [:]).status) == 0)
            || ProcessInfo.processInfo.environment["CI"] == "true"
    }
    static let missing: Comment = "dbus-daemon, secret-tool, gdbus or python3-secretstorage/python3-keyring is missing: run scripts/install-deps --test"

    /// A private session bus in the box, and a provider on it; both stopped at the end.
    final class Provider {
        let box: AgentBox
        let address: String
        let daemon: AgentCLI.Running
        var provider: AgentCLI.Running?

        init(_ box: AgentBox, vaults: [String] = []) throws {
            self.box = box
            let path = box.directory + "/session_bus_socket"
            address = "unix:path=" + path
            daemon = try AgentCLI.start(
                "/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--address=\(address)"], environment: [:], timeout: 300)
            try #require(AgentTests.poll { AgentFiles.lstatMode(path) != nil }, "dbus-daemon made no socket")
            provider = try start(vaults: vaults)
        }

        var environment: [String: String] { box.environment.merging(["DBUS_SESSION_BUS_ADDRESS": address]) { $1 } }

        /// Starts `vault secret-service` and waits until it serves.
        func start(vaults: [String] = [], extra: [String] = [], environment more: [String: String] = [:]) throws -> AgentCLI.Running {
            let running = try AgentCLI.start(
                CLI.vault, ["secret-service"] + vaults.flatMap { ["--vault", $0] } + extra, environment: environment.merging(more) { $1 },
                timeout: 300)
            box.remember(running.pid)
            try #require(AgentTests.poll { Self.text(running.files.stderr).contains("serving org.freedesktop.secrets") },
                         "the provider did not start: \(Self.text(running.files.stderr))")
            return running
        }

        static func text(_ file: String) -> String { (try? String(contentsOfFile: file, encoding: .utf8)) ?? "" }
        var log: String { provider.map { Self.text($0.files.stderr) } ?? "" }

        func tool(_ arguments: [String], stdin: Data = Data()) throws -> AgentRun {
            try AgentCLI.exec("/usr/bin/secret-tool", arguments, stdin: stdin, environment: environment)
        }

        func python(_ script: String, _ arguments: [String] = []) throws -> AgentRun {
            try AgentCLI.exec(SecretServiceCLITests.python, ["-c", script] + arguments, environment: environment)
        }

        func gdbus(_ arguments: [String]) throws -> AgentRun {
            try AgentCLI.exec("/usr/bin/gdbus", ["call", "--address", address, "--dest", "org.freedesktop.secrets"] + arguments, environment: environment)
        }

        var isRunning: Bool { provider.map { kill($0.pid, 0) == 0 } ?? false }

        deinit {
            for running in [provider, Optional(daemon)].compactMap({ $0 }) {
                kill(running.pid, SIGTERM)
                _ = running.finish()
            }
        }
    }

    /// The item ids `secret-tool search --all` prints (`[/ID]` lines: the last element of each item's path).
    static func ids(_ search: AgentRun) -> [String] {
        search.stdoutText.split(separator: "\n").filter { $0.hasPrefix("[/") }.map { String($0.dropFirst(2).dropLast()) }
    }

    @Test(.enabled(if: present, missing))
    func secretToolStoresLooksUpSearchesAndClearsInTheVault() throws {
        let (box, _) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let bus = try Provider(box)
        let secret = AgentTests.canary("secret-tool")
        let store = try bus.tool(["store", "--label=My login", "service", "example.org", "user", "alice"], stdin: Data(secret.utf8))
        try #require(store.status == 0, "\(store.stderr)")
        // libsecret opened the Diffie-Hellman session, its default, not `plain`.
        #expect(bus.log.contains("dh-ietf1024-sha256-aes128-cbc-pkcs7"), "\(bus.log)")

        let lookup = try bus.tool(["lookup", "service", "example.org"])
        #expect(lookup.status == 0 && lookup.stdoutText == secret, "\(lookup.stderr)")
        #expect(try bus.tool(["lookup", "service", "example.com"]).stdout.isEmpty)

        let search = try bus.tool(["search", "--all", "user", "alice"])
        let ids = Self.ids(search)
        try #require(ids.count == 1, "\(search.stdoutText) \(search.stderr)")
        #expect(search.stdoutText.contains("label = My login"))
        #expect(search.stderr.contains("attribute.service = example.org"), "secret-tool prints the attributes on stderr: \(search.stderr)")
        #expect(search.stdoutText.contains("secret = \(secret)"))
        let id = ids[0]

        // An ordinary entry of the vault: `vault get` reads it, its fields are there, the export has it.
        let get = try box.vault(["get", "secret-service/\(id)"])
        #expect(get.status == 0 && get.stdoutText == secret, "\(get.stderr)")
        let service = try box.vault(["get", "secret-service/\(id)", "--field", "attribute:service"])
        #expect(service.stdoutText == "example.org", "\(service.stderr)")
        let export = try box.vault(["export", "--format", "json", "--yes"])
        #expect(export.status == 0 && export.stdoutText.contains(secret) && export.stdoutText.contains("secret-service/\(id)"), "\(export.stderr)")

        // Store again with the same attributes: replaced, not a second item.
        let again = AgentTests.canary("second")
        #expect(try bus.tool(["store", "--label=My login", "service", "example.org", "user", "alice"], stdin: Data(again.utf8)).status == 0)
        #expect(Self.ids(try bus.tool(["search", "--all", "service", "example.org"])) == ids)
        #expect(try bus.tool(["lookup", "user", "alice"]).stdoutText == again)

        let clear = try bus.tool(["clear", "service", "example.org"])
        #expect(clear.status == 0, "\(clear.stderr)")
        #expect(try bus.tool(["lookup", "service", "example.org"]).stdout.isEmpty)
        #expect(try box.vault(["get", "secret-service/\(id)"]).status != 0, "the entry is gone")
    }

    @Test(.enabled(if: present, missing))
    func aLockedVaultGivesNothingAndTheProviderStaysUp() throws {
        let (box, _) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let bus = try Provider(box)
        let secret = AgentTests.canary("locked")
        #expect(try bus.tool(["store", "--label=x", "k", "v"], stdin: Data(secret.utf8)).status == 0)
        #expect(try box.vault(["lock"]).status == 0)

        // Its item is listed as locked and its secret refused (SecretServiceLockedTests); what it never held, nothing.
        let lookup = try bus.tool(["lookup", "k", "absent"])
        #expect(lookup.stdout.isEmpty)
        let locked = try bus.python("import secretstorage; print([i.is_locked() for i in secretstorage.search_items(secretstorage.dbus_init(), {'k': 'v'})])")
        #expect(locked.stdoutText == "[True]\n", "\(locked.stderr)")
        #expect(bus.isRunning, "the provider stopped: \(bus.log)")

        // A store into the locked vault: libsecret asks to unlock the collection and waits on the prompt, which
        // completes when `vault unlock` opens the vault from another terminal; then the item is written.
        let other = AgentTests.canary("after-unlock")
        let store = try AgentCLI.start("/usr/bin/secret-tool", ["store", "--label=y", "k", "w"], stdin: Data(other.utf8), environment: bus.environment)
        #expect(try AgentTests.poll { bus.log.contains("waiting for 'vault unlock'") }, "\(bus.log)")
        #expect(kill(store.pid, 0) == 0, "secret-tool did not wait for the prompt")
        try box.unlock()
        let stored = store.finish()
        #expect(stored.status == 0, "\(stored.stderr)")
        #expect(try bus.tool(["lookup", "k", "v"]).stdoutText == secret)
        #expect(try bus.tool(["lookup", "k", "w"]).stdoutText == other)
    }

    /// Two vaults, two collections: `default` is the first; an item made in the second lands in its vault; a search
    /// spans both, and the second locked leaves the first's items found. The agent stopped and started again: the
    /// provider stays up and reconnects.
    @Test(.enabled(if: present, missing))
    func twoVaultsAreTwoCollectionsAndTheProviderOutlivesTheAgent() throws {
        let (box, _) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        let second = box.directory + "/vaults/work.vault"
        #expect(try box.vault(["init", "--vault", second], source: true).status == 0)
        try box.unlock()
        #expect(try box.vault(["unlock", "--vault", second], source: true).status == 0)
        let bus = try Provider(box, vaults: [box.vaultPath, second])
        #expect(try bus.tool(["store", "--label=home", "shared", "yes", "where", "home"], stdin: Data("H".utf8)).status == 0)
        let script = """
            import secretstorage
            conn = secretstorage.dbus_init()
            work = secretstorage.Collection(conn, '/org/freedesktop/secrets/collection/work')
            work.create_item('work', {'shared': 'yes', 'where': 'work'}, b'W')
            print(secretstorage.get_default_collection(conn).get_label())
            print(sorted(i.get_secret().decode() for i in secretstorage.search_items(conn, {'shared': 'yes'})))
            """
        let run = try bus.python(script)
        #expect(run.status == 0 && run.stdoutText == "test\n['H', 'W']\n", "\(run.stdoutText) \(run.stderr)")
        let workNames = try box.vault(["list", "--vault", second]).stdoutText.split(separator: "\n").map(String.init)
        try #require(workNames.count == 1 && workNames[0].hasPrefix("secret-service/"), "\(workNames)")
        #expect(try box.vault(["get", "--vault", second, workNames[0]]).stdoutText == "W")

        #expect(try box.vault(["lock", "--vault", second]).status == 0)
        #expect(try bus.tool(["lookup", "shared", "yes", "where", "home"]).stdoutText == "H")
        let work = try bus.python("import secretstorage; print([i.is_locked() for i in secretstorage.search_items(secretstorage.dbus_init(), {'shared': 'yes'})])")
        #expect(work.stdoutText == "[False, True]\n" || work.stdoutText == "[True, False]\n", "\(work.stderr)")

        // No agent: both locked; a lookup waits on its prompt until a new agent holds the vault.
        #expect(try box.vault(["agent", "stop"]).status == 0)
        let lookup = try AgentCLI.start("/usr/bin/secret-tool", ["lookup", "where", "home"], environment: bus.environment)
        #expect(try AgentTests.poll { bus.log.contains("waiting for 'vault unlock' of \(box.vaultPath)") }, "\(bus.log)")
        #expect(bus.isRunning, "\(bus.log)")
        try box.unlock()
        #expect(lookup.finish().stdoutText == "H", "a new agent is found: \(bus.log)")
    }
}

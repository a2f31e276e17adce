import Foundation
import Testing
import VaultTestSupport

/// `vault secret-service` against Python's clients (`keyring`'s SecretService backend, `secretstorage`, `jeepney`)
/// and `gdbus`: the signals, `--replace`, a prompt dismissed, and bad input that gets a D-Bus error and changes nothing.
@Suite(.processTimeLimit, .serialized) struct SecretServiceClientsTests {
    typealias Provider = SecretServiceCLITests.Provider

    static func boxWithProvider() throws -> (AgentBox, Provider) {
        let (box, _) = try AgentTests.boxWithEntry()
        try box.unlock()
        return (box, try Provider(box))
    }

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func pythonKeyringsSecretServiceBackendLandsInTheVault() throws {
        let (box, bus) = try Self.boxWithProvider()
        defer { box.stopAgents() }
        let secret = AgentTests.canary("keyring")
        let script = """
            import sys
            from keyring.backends import SecretService
            k = SecretService.Keyring()
            k.set_password('pypi.example.org', 'alice', sys.argv[1])
            assert k.get_password('pypi.example.org', 'alice') == sys.argv[1]
            assert k.get_password('pypi.example.org', 'bob') is None
            print('stored')
            """
        let run = try bus.python(script, [secret])
        try #require(run.status == 0 && run.stdoutText == "stored\n", "\(run.stderr)")
        let names = try box.vault(["list"]).stdoutText.split(separator: "\n").filter { $0.hasPrefix("secret-service/") }
        try #require(names.count == 1, "\(names)")
        #expect(try box.vault(["get", String(names[0])]).stdoutText == secret)
        #expect(try box.vault(["get", String(names[0]), "--field", "attribute:username"]).stdoutText == "alice")
        #expect(try box.vault(["get", String(names[0]), "--field", "attribute:service"]).stdoutText == "pypi.example.org")

        let delete = try bus.python("""
            from keyring.backends import SecretService
            k = SecretService.Keyring()
            k.delete_password('pypi.example.org', 'alice')
            assert k.get_password('pypi.example.org', 'alice') is None
            """)
        #expect(delete.status == 0, "\(delete.stderr)")
        #expect(try box.vault(["get", String(names[0])]).status != 0, "the entry is deleted")
    }

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func itemSignalsAreEmitted() throws {
        let (box, bus) = try Self.boxWithProvider()
        defer { box.stopAgents() }
        let monitor = try AgentCLI.start(
            "/usr/bin/gdbus", ["monitor", "--address", bus.address, "--dest", "org.freedesktop.secrets"], environment: bus.environment)
        defer {
            kill(monitor.pid, SIGTERM)
            _ = monitor.finish()  // reaped: a zombie child keeps swift-testing's exit-test monitor from seeing its own
        }
        #expect(try AgentTests.poll { Provider.text(monitor.files.stdout).contains("owned by") }, "gdbus monitor did not start")
        for value in ["one", "two"] {
            #expect(try bus.tool(["store", "--label=L", "a", "b"], stdin: Data(value.utf8)).status == 0)
        }
        #expect(try bus.tool(["clear", "a", "b"]).status == 0)
        let signals = { Provider.text(monitor.files.stdout) }
        #expect(try AgentTests.poll { signals().contains("org.freedesktop.Secret.Collection.ItemDeleted") }, "\(signals())")
        let path = "/org/freedesktop/secrets/collection/test"
        #expect(signals().contains("\(path): org.freedesktop.Secret.Collection.ItemCreated (objectpath '\(path)/"), "\(signals())")
        #expect(signals().contains("\(path): org.freedesktop.Secret.Collection.ItemChanged (objectpath '\(path)/"), "\(signals())")
    }

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func replaceTakesTheNameAndWithoutItTheSecondProviderSaysWhy() throws {
        let (box, bus) = try Self.boxWithProvider()
        defer { box.stopAgents() }
        let second = try AgentCLI.exec(CLI.vault, ["secret-service"], environment: bus.environment)
        #expect(second.status == 1)
        #expect(second.stderr.contains("org.freedesktop.secrets is owned by another program on this bus"), "\(second.stderr)")
        #expect(bus.isRunning)

        let first = try #require(bus.provider)
        bus.provider = try bus.start(extra: ["--replace"])
        let ended = first.finish()
        #expect(ended.status == 0, "\(ended.stderr)")
        #expect(ended.stderr.contains("another provider took org.freedesktop.secrets; stopping"), "\(ended.stderr)")
        #expect(try bus.tool(["store", "--label=L", "a", "b"], stdin: Data("x".utf8)).status == 0)
        #expect(try bus.tool(["lookup", "a", "b"]).stdoutText == "x")
    }

    /// `Introspect` and `Properties` as gdbus shows them: the service, its collection with the item's node, the item.
    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func introspectionAndPropertiesDescribeTheObjects() throws {
        let (box, bus) = try Self.boxWithProvider()
        defer { box.stopAgents() }
        #expect(try bus.tool(["store", "--label=Shown", "a", "b"], stdin: Data("x".utf8)).status == 0)
        let id = try #require(SecretServiceCLITests.ids(try bus.tool(["search", "--all", "a", "b"])).first)
        func introspect(_ path: String) throws -> String {
            try AgentCLI.exec("/usr/bin/gdbus", ["introspect", "--address", bus.address, "--dest", "org.freedesktop.secrets", "--object-path", path],
                              environment: bus.environment).stdoutText
        }
        let root = try introspect("/org/freedesktop/secrets")
        #expect(root.contains("interface org.freedesktop.Secret.Service") && root.contains("node collection"), "\(root)")
        let collection = try introspect("/org/freedesktop/secrets/collection/test")
        #expect(collection.contains("ItemCreated(o item);") && collection.contains("node \(id)"), "\(collection)")
        let item = "/org/freedesktop/secrets/collection/test/\(id)"
        #expect(try introspect(item).contains("GetSecret(in  o session,"))
        let label = try bus.gdbus(["--object-path", item, "--method", "org.freedesktop.DBus.Properties.Get", "org.freedesktop.Secret.Item", "Label"])
        #expect(label.stdoutText == "(<'Shown'>,)\n", "\(label.stdoutText) \(label.stderr)")
        let set = try bus.gdbus(["--object-path", item, "--method", "org.freedesktop.DBus.Properties.Set", "org.freedesktop.Secret.Item", "Label", "<'Renamed'>"])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try box.vault(["get", "secret-service/\(id)", "--field", "label"]).stdoutText == "Renamed")
        let locked = try bus.gdbus(["--object-path", "/org/freedesktop/secrets/collection/test", "--method", "org.freedesktop.DBus.Properties.Get",
                                    "org.freedesktop.Secret.Collection", "Locked"])
        #expect(locked.stdoutText == "(<false>,)\n", "\(locked.stdoutText) \(locked.stderr)")
    }

    /// A session lives as long as its client: one left open by a client that is gone is dropped (most never call
    /// Close); the sessions open are the nodes below /org/freedesktop/secrets/session.
    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func aClientThatLeavesTakesItsSessionsWithIt() throws {
        let (box, bus) = try Self.boxWithProvider()
        defer { box.stopAgents() }
        func sessions() throws -> [String] {
            try AgentCLI.exec("/usr/bin/gdbus", ["introspect", "--address", bus.address, "--dest", "org.freedesktop.secrets",
                                                 "--object-path", "/org/freedesktop/secrets/session"], environment: bus.environment)
                .stdoutText.split(separator: "\n").filter { $0.contains("node ") && !$0.contains("/session") }.map(String.init)
        }
        let held = try AgentCLI.start(SecretServiceCLITests.python, ["-c", Self.jeepney + "print('open', flush=True)\nimport time\ntime.sleep(30)\n"],
                                      environment: bus.environment)
        #expect(try AgentTests.poll { Provider.text(held.files.stdout) == "open\n" })
        #expect(try bus.tool(["store", "--label=a", "a", "b"], stdin: Data("x".utf8)).status == 0)
        for _ in 0..<3 { #expect(try bus.tool(["lookup", "a", "b"]).stdoutText == "x") }
        #expect(try AgentTests.poll { try sessions().count == 1 }, "\((try? sessions()) ?? [])")
        kill(held.pid, SIGTERM)
        _ = held.finish()
        #expect(try AgentTests.poll { try sessions().isEmpty }, "\((try? sessions()) ?? [])")
    }

    /// jeepney (secretstorage's D-Bus library), one connection: a session of its own, then `script`'s checks.
    static let jeepney = """
        import sys
        from jeepney import DBusAddress, new_method_call, MatchRule, DBusErrorResponse
        from jeepney.wrappers import unwrap_msg
        from jeepney.bus_messages import message_bus
        from jeepney.io.blocking import open_dbus_connection
        conn = open_dbus_connection(bus='SESSION')
        service = DBusAddress('/org/freedesktop/secrets', bus_name='org.freedesktop.secrets', interface='org.freedesktop.Secret.Service')
        default = DBusAddress('/org/freedesktop/secrets/aliases/default', bus_name='org.freedesktop.secrets', interface='org.freedesktop.Secret.Collection')
        def call(address, method, signature, *args):
            return unwrap_msg(conn.send_and_get_reply(new_method_call(address, method, signature, args)))
        def error(address, method, signature, *args):
            try:
                call(address, method, signature, *args)
            except DBusErrorResponse as e:
                return e.name
            return None
        _, session = call(service, 'OpenSession', 'sv', 'plain', ('s', ''))

        """

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func badInputGetsADBusErrorAndChangesNothing() throws {
        let (box, bus) = try Self.boxWithProvider()
        defer { box.stopAgents() }
        let before = try box.vault(["list"]).stdoutText
        let script = Self.jeepney + """
            def create(attributes, secret, sess=None):
                props = {'org.freedesktop.Secret.Item.Label': ('s', 'x'), 'org.freedesktop.Secret.Item.Attributes': ('a{ss}', attributes)}
                return error(default, 'CreateItem', 'a{sv}(oayays)b', props, (sess or session, b'', secret, 'text/plain'), False)
            results = [
                create({'k%d' % i: 'v' for i in range(2000)}, b's'),
                create({'a': 'b'}, b'x' * (64 << 20)),
                create({'a': 'b'}, b's', '/org/freedesktop/secrets/session/999'),
                create({'a' * 300: 'b'}, b's'),
                error(service, 'OpenSession', 'sv', 'dh-ietf1024-sha256-aes128-cbc-pkcs7', ('ay', b'\\x01')),
                error(service, 'OpenSession', 'sv', 'dh-ietf1024-sha256-aes128-cbc-pkcs7', ('ay', b'\\xff' * 129)),
                error(service, 'OpenSession', 'sv', 'dh-ietf1024-sha256-aes128-cbc-pkcs7', ('s', 'not bytes')),
                error(service, 'OpenSession', 'sv', 'rsa', ('s', '')),
                error(service, 'GetSecrets', 'aoo', [], '/org/freedesktop/secrets/session/999'),
                error(service, 'CreateCollection', 'a{sv}s', {}, ''),
                error(service, 'SearchItems', 's', 'wrong signature'),
            ]
            print('\\n'.join(str(r) for r in results))
            """
        let run = try bus.python(script)
        try #require(run.status == 0, "\(run.stderr)")
        var lines = run.stdoutText.split(separator: "\n").map(String.init)
        try #require(lines.count == 11, "\(run.stdoutText)")
        // 64 MiB: refused by the bus (its message limit) or by the provider (4 MiB a secret), never stored.
        #expect(["org.freedesktop.DBus.Error.LimitsExceeded", "org.freedesktop.DBus.Error.InvalidArgs"].contains(lines.remove(at: 1)))
        #expect(lines == [
            "org.freedesktop.DBus.Error.InvalidArgs",  // 2000 attributes
            "org.freedesktop.Secret.Error.NoSession",
            "org.freedesktop.DBus.Error.InvalidArgs",  // an attribute name longer than a field name
            "org.freedesktop.DBus.Error.InvalidArgs",  // DH public value 1
            "org.freedesktop.DBus.Error.InvalidArgs",  // longer than the prime
            "org.freedesktop.DBus.Error.InvalidArgs",  // not bytes
            "org.freedesktop.DBus.Error.NotSupported",
            "org.freedesktop.Secret.Error.NoSession",
            "org.freedesktop.DBus.Error.NotSupported",
            "org.freedesktop.DBus.Error.InvalidArgs",
        ], "\(run.stdoutText)")
        #expect(try box.vault(["list"]).stdoutText == before, "bad input changed the vault")
        #expect(bus.isRunning, "\(bus.log)")
    }

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func aPromptIsDismissedAndAnotherCompletesOnVaultUnlock() throws {
        let (box, bus) = try Self.boxWithProvider()
        defer { box.stopAgents() }
        #expect(try box.vault(["lock"]).status == 0)
        let script = Self.jeepney + """
            def prompt(dismiss):
                unlocked, path = call(service, 'Unlock', 'ao', ['/org/freedesktop/secrets/aliases/default'])
                assert unlocked == [] and path.startswith('/org/freedesktop/secrets/prompt/'), (unlocked, path)
                rule = MatchRule(type='signal', interface='org.freedesktop.Secret.Prompt', member='Completed', path=path)
                call(message_bus, 'AddMatch', 's', rule.serialise())
                with conn.filter(rule) as queue:
                    address = DBusAddress(path, bus_name='org.freedesktop.secrets', interface='org.freedesktop.Secret.Prompt')
                    call(address, 'Dismiss' if dismiss else 'Prompt', '' if dismiss else 's', *([] if dismiss else ['']))
                    print('waiting', flush=True)
                    signal = conn.recv_until_filtered(queue, timeout=20)
                    print(signal.body, flush=True)
            prompt(True)
            prompt(False)
            """
        let running = try AgentCLI.start(SecretServiceCLITests.python, ["-c", script], environment: bus.environment)
        #expect(try AgentTests.poll { Provider.text(running.files.stdout).components(separatedBy: "waiting").count == 3 },
                "\(Provider.text(running.files.stdout)) \(Provider.text(running.files.stderr))")
        try box.unlock()
        let ended = running.finish()
        #expect(ended.status == 0, "\(ended.stderr)")
        #expect(ended.stdoutText == "waiting\n(True, ('ao', []))\nwaiting\n(False, ('ao', ['/org/freedesktop/secrets/aliases/default']))\n")
    }

    /// packaging/dbus/org.freedesktop.secrets.service as installed (its @BINDIR@ this build's): a bus whose service
    /// directory holds it starts the provider on the first client's call, which gets its answer.
    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func theActivationFileStartsTheProviderOnTheFirstCall() throws {
        let (box, _) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        try box.unlock()
        let services = box.directory + "/services"
        try FileManager.default.createDirectory(atPath: services, withIntermediateDirectories: true)
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("packaging/dbus/org.freedesktop.secrets.service.in")
        let file = try String(contentsOf: source, encoding: .utf8).replacingOccurrences(of: "@BINDIR@", with: CLI.binDirectory.path)
        try file.write(toFile: services + "/org.freedesktop.secrets.service", atomically: true, encoding: .utf8)
        let address = "unix:path=\(box.directory)/activation_bus"
        let config = box.directory + "/bus.conf"
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig><type>session</type><listen>\(address)</listen><servicedir>\(services)</servicedir>
            <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
            """.write(toFile: config, atomically: true, encoding: .utf8)
        // The bus hands its own environment to what it starts: the box's vault and agent, and the bus's address.
        let environment = box.environment.merging(["DBUS_SESSION_BUS_ADDRESS": address]) { $1 }
        let daemon = try AgentCLI.start("/usr/bin/dbus-daemon", ["--config-file=\(config)", "--nofork", "--nopidfile"], environment: environment, timeout: 120)
        defer {
            kill(daemon.pid, SIGTERM)
            _ = daemon.finish()
        }
        try #require(AgentTests.poll { AgentFiles.lstatMode(box.directory + "/activation_bus") != nil }, "dbus-daemon made no socket")
        let secret = AgentTests.canary("activated")
        let store = try AgentCLI.exec("/usr/bin/secret-tool", ["store", "--label=a", "k", "v"], stdin: Data(secret.utf8), environment: environment)
        #expect(store.status == 0, "\(store.stderr) \(Provider.text(daemon.files.stderr))")
        #expect(try AgentCLI.exec("/usr/bin/secret-tool", ["lookup", "k", "v"], environment: environment).stdoutText == secret)
        #expect(try box.vault(["list"]).stdoutText.contains("secret-service/"))
        // The provider the bus started ends with the bus (its connection lost), in the defer above.
    }
}

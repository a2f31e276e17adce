import Foundation
import Testing
import VaultTestSupport

/// A locked vault through the Secret Service (issue 37): its items listed as locked from what the provider saw while
/// it was unlocked, their secrets refused, and libsecret's lookup going Unlock → Prompt → `vault unlock` → secret.
@Suite(.processTimeLimit, .serialized) struct SecretServiceLockedTests {
    typealias Provider = SecretServiceCLITests.Provider
    static let collection = "/org/freedesktop/secrets/collection/test"

    /// The box's vault unlocked, a provider, one item `k=v` stored by secret-tool, its object path.
    static func boxWithItem(_ secret: String) throws -> (AgentBox, Provider, String) {
        let (box, bus) = try SecretServiceClientsTests.boxWithProvider()
        #expect(try bus.tool(["store", "--label=Locked item", "k", "v", "n", "1"], stdin: Data(secret.utf8)).status == 0)
        let id = try #require(SecretServiceCLITests.ids(try bus.tool(["search", "--all", "k", "v"])).first)
        return (box, bus, collection + "/" + id)
    }

    /// What a jeepney client sees of `path` and the collection (one line each).
    static let look = SecretServiceClientsTests.jeepney + """
        path = sys.argv[1]
        item = DBusAddress(path, bus_name='org.freedesktop.secrets', interface='org.freedesktop.Secret.Item')
        def get(object, interface, name):
            address = DBusAddress(object, bus_name='org.freedesktop.secrets', interface='org.freedesktop.DBus.Properties')
            return call(address, 'Get', 'ss', interface, name)[0][1]
        print(call(service, 'SearchItems', 'a{ss}', {'k': 'v'}))
        print(call(service, 'SearchItems', 'a{ss}', {'k': 'other'}))
        print(call(default, 'SearchItems', 'a{ss}', {'n': '1'}))
        print(get(default.object_path, 'org.freedesktop.Secret.Collection', 'Items'), get(default.object_path, 'org.freedesktop.Secret.Collection', 'Locked'))
        print(get(path, 'org.freedesktop.Secret.Item', 'Locked'), get(path, 'org.freedesktop.Secret.Item', 'Label'),
              sorted(get(path, 'org.freedesktop.Secret.Item', 'Attributes').items()), get(path, 'org.freedesktop.Secret.Item', 'Modified') > 0)
        print(error(service, 'GetSecrets', 'aoo', [path], session), error(item, 'GetSecret', 'o', session))

        """

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func aLockedVaultListsItsItemsAsLockedAndRefusesTheirSecrets() throws {
        let secret = AgentTests.canary("listed")
        let (box, bus, path) = try Self.boxWithItem(secret)
        defer { box.stopAgents() }
        let open = try bus.python(Self.look, [path])
        #expect(open.stdoutText == """
            (['\(path)'], [])
            ([], [])
            (['\(path)'],)
            ['\(path)'] False
            False Locked item [('k', 'v'), ('n', '1')] True
            None None

            """, "\(open.stdoutText) \(open.stderr)")

        #expect(try box.vault(["lock"]).status == 0)
        let locked = try bus.python(Self.look, [path])
        #expect(locked.stdoutText == """
            ([], ['\(path)'])
            ([], [])
            (['\(path)'],)
            ['\(path)'] True
            True Locked item [('k', 'v'), ('n', '1')] True
            org.freedesktop.Secret.Error.IsLocked org.freedesktop.Secret.Error.IsLocked

            """, "\(locked.stdoutText) \(locked.stderr)")
        #expect(!locked.stdoutText.contains(secret) && !bus.log.contains(secret))
        #expect(bus.isRunning, "\(bus.log)")
    }

    /// libsecret's `secret-tool lookup` on a locked vault: the item is found locked, so it asks Unlock, runs the
    /// prompt and waits; `vault unlock` in another terminal completes it, and the secret is printed.
    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func lookupOnALockedVaultWaitsForTheUnlockThenGivesTheSecret() throws {
        let secret = AgentTests.canary("lookup")
        let (box, bus, _) = try Self.boxWithItem(secret)
        defer { box.stopAgents() }
        #expect(try box.vault(["lock"]).status == 0)
        let lookup = try AgentCLI.start("/usr/bin/secret-tool", ["lookup", "k", "v"], environment: bus.environment)
        #expect(try AgentTests.poll { bus.log.contains("waiting for 'vault unlock'") }, "\(bus.log)")
        #expect(kill(lookup.pid, 0) == 0, "secret-tool did not wait for the prompt")
        try box.unlock()
        let found = lookup.finish()
        #expect(found.status == 0 && found.stdoutText == secret, "\(found.stderr) \(bus.log)")
    }

    /// A provider started while the vault is locked has seen nothing: it lists no item until the first unlock,
    /// after which a lock keeps them listed (as locked).
    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func aProviderStartedWhileLockedKnowsNoItemUntilTheFirstUnlock() throws {
        let (box, bus, path) = try Self.boxWithItem(AgentTests.canary("later"))
        defer { box.stopAgents() }
        #expect(try box.vault(["lock"]).status == 0)
        let first = try #require(bus.provider)
        bus.provider = try bus.start(extra: ["--replace"])
        _ = first.finish()
        let search = Self.look.components(separatedBy: "path = sys.argv[1]")[0] + "print(call(service, 'SearchItems', 'a{ss}', {'k': 'v'}))\n"
        #expect(try bus.python(search).stdoutText == "([], [])\n")
        try box.unlock()
        #expect(try AgentTests.poll { try bus.python(search).stdoutText == "(['\(path)'], [])\n" })
        #expect(try box.vault(["lock"]).status == 0)
        #expect(try AgentTests.poll { try bus.python(search).stdoutText == "([], ['\(path)'])\n" }, "\(bus.log)")
    }
}

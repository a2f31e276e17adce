import Foundation
import Testing
import VaultTestSupport

/// python/vault_keyring: Python keyring's backend on the agent's socket (no D-Bus), through keyring's own API
/// (`PYTHON_KEYRING_BACKEND`), landing in the same entries as keyring's SecretService backend through
/// `vault secret-service`: each finds what the other stored.
@Suite(.processTimeLimit, .serialized) struct VaultKeyringTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("python/vault_keyring").path

    static func keyring(_ box: AgentBox, _ script: String, _ arguments: [String] = [], extra: [String: String] = [:]) throws -> AgentRun {
        let environment = box.environment.merging(
            ["PYTHONPATH": package, "PYTHON_KEYRING_BACKEND": "vault_keyring.backend.VaultKeyring"].merging(extra) { $1 }) { $1 }
        return try AgentCLI.exec(SecretServiceCLITests.python, ["-c", "import sys, keyring\n" + script] + arguments, environment: environment)
    }

    /// The backend opens the vault `vault` opens: VAULT_PATH, else the one `vault git setup` recorded (a private
    /// file only), else the default.
    @Test func theBackendsVaultIsTheOneVaultResolves() throws {
        let box = try AgentBox()
        let config = box.directory + "/config"
        try FileManager.default.createDirectory(atPath: config + "/vault", withIntermediateDirectories: true)
        let record = config + "/vault/default-vault"
        FileManager.default.createFile(atPath: record, contents: Data("\(box.directory)/clone/team.vault\n".utf8), attributes: [.posixPermissions: 0o600])
        func resolved(_ environment: [String: String]) throws -> String {
            let run = try AgentCLI.exec("/usr/bin/python3", ["-c", "from vault_keyring import agent; print(agent.vault_path())"],
                                        environment: ["PYTHONPATH": Self.package, "XDG_CONFIG_HOME": config, "XDG_DATA_HOME": box.directory + "/data"].merging(environment) { $1 })
            #expect(run.status == 0, "\(run.stderr)")
            return run.stdoutText
        }
        #expect(try resolved([:]) == "\(box.directory)/clone/team.vault\n")
        #expect(try resolved(["VAULT_PATH": box.vaultPath]) == box.vaultPath + "\n")
        chmod(record, 0o644)
        #expect(try resolved([:]) == "\(box.directory)/data/vault/default.vault\n")
    }

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func setGetDeleteLandInTheEntriesTheSecretServiceBackendUses() throws {
        let (box, bus) = try SecretServiceClientsTests.boxWithProvider()
        defer { box.stopAgents() }
        let secret = AgentTests.canary("direct")
        let set = try Self.keyring(box, """
            assert type(keyring.get_keyring()).__name__ == 'VaultKeyring', keyring.get_keyring()
            keyring.set_password('git.example.org', 'carol', sys.argv[1])
            print(keyring.get_password('git.example.org', 'carol'))
            print(keyring.get_password('git.example.org', 'dave'))
            """, [secret])
        #expect(set.status == 0 && set.stdoutText == "\(secret)\nNone\n", "\(set.stderr)")
        let names = try box.vault(["list"]).stdoutText.split(separator: "\n").filter { $0.hasPrefix("secret-service/") }.map(String.init)
        try #require(names.count == 1)
        #expect(try box.vault(["get", names[0]]).stdoutText == secret)

        // keyring's SecretService backend through the provider finds it, replaces it, and the direct backend sees that.
        let other = AgentTests.canary("via-dbus")
        let dbus = try bus.python("""
            import sys
            from keyring.backends import SecretService
            k = SecretService.Keyring()
            print(k.get_password('git.example.org', 'carol'))
            k.set_password('git.example.org', 'carol', sys.argv[1])
            """, [other])
        #expect(dbus.status == 0 && dbus.stdoutText == "\(secret)\n", "\(dbus.stderr)")
        #expect(try Self.keyring(box, "print(keyring.get_password('git.example.org', 'carol'))").stdoutText == "\(other)\n")
        #expect(try box.vault(["list"]).stdoutText.split(separator: "\n").filter { $0.hasPrefix("secret-service/") }.map(String.init) == names,
                "one entry, not two")

        let delete = try Self.keyring(box, """
            keyring.delete_password('git.example.org', 'carol')
            print(keyring.get_password('git.example.org', 'carol'))
            try:
                keyring.delete_password('git.example.org', 'carol')
            except keyring.errors.PasswordDeleteError as error:
                print('no such password')
            """)
        #expect(delete.status == 0 && delete.stdoutText == "None\nno such password\n", "\(delete.stderr)")
        #expect(try box.vault(["get", names[0]]).status != 0)
    }

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func aLockedVaultOrNoAgentIsKeyringLocked() throws {
        let (box, _) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        let script = """
            try:
                keyring.set_password('s', 'u', 'p')
            except keyring.errors.KeyringLocked as error:
                print('locked:', error)
            """
        let noAgent = try Self.keyring(box, script)
        #expect(noAgent.status == 0 && noAgent.stdoutText.hasPrefix("locked: no agent answers on \(box.socketPath)"), "\(noAgent.stdoutText) \(noAgent.stderr)")
        try box.unlock()
        #expect(try box.vault(["lock"]).status == 0)
        let locked = try Self.keyring(box, script)
        #expect(locked.status == 0 && locked.stdoutText == "locked: the vault \(box.vaultPath) is locked: run 'vault unlock'\n", "\(locked.stdoutText) \(locked.stderr)")
        #expect(try box.vault(["list"], source: true).stdoutText == "k\n", "nothing was written")
    }
}

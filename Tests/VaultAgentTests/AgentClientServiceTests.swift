import Foundation
import Testing
@testable import VaultAgent
import VaultCore

/// A client (``AgentClient``, ``AgentVault``) and the agent's service across a real socket in this process: what
/// the client sends is what the service answers, errors arrive as the library's own, and the timeouts run on the
/// agent's clock (moved by hand).
@Suite struct AgentClientServiceTests {
    let fixture = AgentFixture()

    func unlock(_ client: AgentClient, _ path: String, idle: Int = 60, max: Int = 120) throws {
        try client.unlock(
            path: path, passphrase: SecureBytes(string: AgentFixture.passphrase), idleSeconds: idle, maxSeconds: max,
            allowInsecureKDFForTesting: true)
    }

    @Test func aClientUnlocksReadsWritesAndLocksThroughTheSocket() throws {
        let path = try fixture.makeVault(entries: [("k", "v")])
        let agent = try InProcessAgent(fixture)
        let client = try agent.client()
        #expect(try client.vault(at: path) == nil)
        try unlock(client, path)
        let vault = try #require(try client.vault(at: path))
        #expect(try vault.getString("k") == "v")
        try vault.put("w", forKey: "n")
        #expect(try vault.keys() == ["k", "n"])
        #expect(try vault.remove("k"))
        #expect(try vault.listing().map(\.name) == ["n"])
        #expect(try client.status().vaults == [AgentClient.Status.Vault(path: path, idleSecondsLeft: 60, maxSecondsLeft: 120)])
        #expect(try client.lock(path: path))
        #expect(try client.vault(at: path) == nil)
        #expect(throws: AgentError.locked(path: path)) { try vault.getString("n") }
        agent.stop()
        #expect(!AgentFiles.exists(agent.socketPath), "its own socket is removed when it stops")
    }

    @Test func timeoutsRunOnTheAgentsClock() throws {
        let path = try fixture.makeVault(entries: [("k", "v")])
        let agent = try InProcessAgent(fixture)
        let client = try agent.client()
        try unlock(client, path, idle: 60, max: 120)
        fixture.clock.advance(by: 59)
        let vault = try #require(try client.vault(at: path))
        #expect(try vault.getString("k") == "v")  // activity at 59
        fixture.clock.advance(by: 59)
        #expect(try client.status().vaults.map(\.idleSecondsLeft) == [1])
        #expect(try client.status().vaults.map(\.maxSecondsLeft) == [2])
        fixture.clock.advance(by: 2)
        #expect(try client.vault(at: path) == nil, "120 s after the unlock, whatever the activity")
        #expect(try client.status().vaults.isEmpty)
    }

    @Test func theLibrarysErrorsArriveAsThemselvesNamingTheVaultAsTheCallerDid() throws {
        try fixture.makeVault(entries: [("k", "v")])
        let spelled = fixture.directory.path + "//./test.vault"
        let agent = try InProcessAgent(fixture)
        let client = try agent.client()
        try unlock(client, spelled)
        let vault = try #require(try client.vault(at: spelled))
        var changes = SecureKeyValueStore.Changes()
        changes.require("k", exists: false)
        #expect(throws: VaultError.entryExists(key: "k", path: spelled)) { try vault.write(changes) }
        #expect(throws: VaultError.wrongPassphrase(path: spelled)) {
            try client.unlock(path: spelled, passphrase: SecureBytes(string: "wrong"), idleSeconds: 60, maxSeconds: 60, allowInsecureKDFForTesting: true)
        }
    }

    @Test func anyOtherFailureArrivesAsTheAgentPresentsIt() throws {
        let agent = try InProcessAgent(fixture)
        let client = try agent.client()
        let path = try fixture.makeVault(entries: [("k", "v")])
        let refused = AgentFailure(code: "error", exitCode: 1, message: "the agent refused the request: idle and max must be 1 second to 366 days")
        // An unlock whose terms the agent refuses: not one of the library's errors, so it arrives as presented.
        #expect(throws: AgentError.remote(refused)) {
            try client.unlock(path: path, passphrase: SecureBytes(string: AgentFixture.passphrase), idleSeconds: 0, maxSeconds: 60, allowInsecureKDFForTesting: true)
        }
    }

    @Test func anEmptyInProcessAgentEndsAfterItsQuietTimeOnItsClock() throws {
        let path = try fixture.makeVault(entries: [("k", "v")])
        let agent = try InProcessAgent(fixture, exitWhenEmptyAfter: 60)
        do {
            let client = try agent.client()
            try unlock(client, path)
            #expect(try client.lockAll() == 1)
        }
        // The client gone (its connection closed) at this time on the clock: the quiet time starts.
        #expect(agent.waitUntilNoConnection())
        fixture.clock.advance(by: 59)
        #expect(!agent.ended(within: 0.3), "59 s of quiet is not 60")
        fixture.clock.advance(by: 1)
        #expect(agent.ended(within: 10))
        #expect(!AgentFiles.exists(agent.socketPath))
    }
}

/// Files as the tests look at them.
enum AgentFiles {
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }
}

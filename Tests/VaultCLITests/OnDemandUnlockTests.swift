import Foundation
import Testing
import VaultTestSupport

/// Issue 33 §4: an unlock that a verb makes on demand (asking on a terminal) keeps the limits the user chose with
/// `vault unlock --idle --max` for that vault, never the wider 15 minutes / 8 hours.
@Suite(.processTimeLimit) struct OnDemandUnlockTests {
    /// After `vault unlock --idle 3s --max 1m` locked the vault, the next prompt on a terminal unlocks it with 3 s and
    /// 1 min again: through a running agent, and through an agent the prompt starts (which says so). The limits are
    /// kept in the state directory by vault id, two numbers and nothing else.
    @Test func anOnDemandUnlockKeepsTheLimitsTheUserChose() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        #expect(try box.around(["put", "k"], stdin: Data("v".utf8)).status == 0)
        try box.unlock(["--idle", "3s", "--max", "1m"])
        func lockedByIdleness() {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, (try? box.status())??.vaults.isEmpty == false { usleep(200_000) }
        }
        lockedByIdleness()
        #expect(try box.status()?.vaults.isEmpty == true, "locked after 3 s without use")

        // The agent still runs: the prompt unlocks the vault in it, with the user's limits.
        let prompt = PseudoTerminal.Step(marker: "Vault passphrase for", keys: box.passphrase + "\n")
        let again = try PseudoTerminal.run(CLI.vault, ["get", "k"], playing: [prompt], environment: box.environment, seconds: 30)
        #expect(again.status == 0 && again.stdoutText.hasSuffix("\nv\n[echo on]\n"), "\(again.stdoutText)")
        let held = try #require(try box.status()?.vaults.first)
        #expect(held.idleSecondsLeft <= 3 && held.maxSecondsLeft <= 60, "\(held)")

        // No agent: the prompt starts one, unlocks with the user's limits and says which.
        #expect(try box.vault(["agent", "stop"]).status == 0)
        var environment = box.environment
        environment["VAULT_AGENT"] = "auto"
        let started = try PseudoTerminal.run(CLI.vault, ["get", "k"], playing: [prompt], environment: environment, seconds: 30)
        #expect(started.status == 0, "\(started.stdoutText)")
        #expect(started.stdoutText.contains("vault: unlocked in the agent: no command asks again for 3s without use, 1m at most; 'vault lock' locks now (VAULT_AGENT=off: never start one)\n"), "\(started.stdoutText)")
        let restarted = try #require(try box.status()?.vaults.first)
        #expect(restarted.idleSecondsLeft <= 3 && restarted.maxSecondsLeft <= 60, "\(restarted)")

        let state = box.directory + "/state/vault"
        let records = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasSuffix(".unlock") }
        #expect(records.count == 1)
        #expect(try String(contentsOfFile: state + "/" + records[0], encoding: .utf8) == "vault-unlock 1\nidle 3\nmax 60\n")
    }
}

import Foundation
import Testing
import VaultTestSupport

/// Issue 22: an agent does not outlive its socket, and one that holds nothing ends (docs/AGENT.md, "When the agent
/// ends"). Real agent processes; every wait is a bounded poll.
@Suite(.processTimeLimit, .serialized) struct AgentLifetimeCLITests {
    /// Polls until `pid` is gone; the seconds it took, or `nil` after `timeout`.
    static func secondsUntilGone(_ pid: pid_t, timeout: Double = 10) -> Double? {
        let start = monotonicNow()
        return AgentProcesses.waitUntilGone(pid, timeout: timeout) ? monotonicNow() - start : nil
    }

    @Test func anAgentWhoseSocketFileIsRemovedEndsWithinSeconds() throws {
        let box = try AgentBox()
        try box.initVault()
        try box.unlock()
        let pid = try #require(try box.agentPID())
        box.remember(pid)
        #expect(unlink(box.socketPath) == 0)
        let seconds = Self.secondsUntilGone(pid)
        #expect(seconds != nil, "the agent outlived its socket")
        // It looks once a second; a loaded machine gets some slack.
        #expect((seconds ?? 99) < 5, "the agent took \(seconds ?? -1) s to notice")
        #expect(!AgentFiles.exists(box.socketPath))
    }

    @Test func anAgentWhoseSocketIsReplacedByAnotherAgentsEndsAndTheOtherServes() throws {
        let box = try AgentBox()
        try box.initVault()
        _ = try box.around(["put", "k"], stdin: Data("value".utf8))
        try box.unlock()
        let first = try #require(try box.agentPID())
        box.remember(first)
        // Stopped while its socket is replaced, so that when it looks again another agent's socket is there (not
        // nothing): the case where it must neither stay nor remove what is there.
        #expect(kill(first, SIGSTOP) == 0)
        #expect(unlink(box.socketPath) == 0)
        try box.unlock()
        let second = try #require(try box.agentPID())
        box.remember(second)
        #expect(second != first)
        #expect(kill(first, SIGCONT) == 0)
        #expect(Self.secondsUntilGone(first) != nil, "the first agent outlived its socket")
        #expect(AgentFiles.lstatMode(box.socketPath).map { $0 & S_IFMT == S_IFSOCK } == true, "the first agent removed the second's socket")
        #expect(try box.agentPID() == second)
        let get = try box.vault(["get", "k"])
        #expect(get.status == 0 && get.stdoutText == "value", "\(get.stderr)")
    }

    @Test func anAgentTheUnlockStartedIsToldToEndWhenItHoldsNothing() throws {
        let box = try AgentBox()
        try box.initVault()
        try box.unlock()
        let pid = try #require(try box.agentPID())
        box.remember(pid)
        let arguments = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")).split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        #expect(Array(arguments.dropFirst()) == ["agent", "run", "--exit-when-empty", "60s"])
    }

    @Test func anAgentThatHoldsNothingEndsAfterItsQuietTimeAndNotBefore() throws {
        let box = try AgentBox()
        try box.initVault()
        let agent = try AgentCLI.start(CLI.vault, ["agent", "run", "--exit-when-empty", "1s"], environment: box.environment)
        box.remember(agent.pid)
        var listening = false
        for _ in 0..<500 where !listening {
            listening = AgentFiles.exists(box.socketPath)
            if !listening { usleep(10_000) }
        }
        try #require(listening, "the agent never listened")
        // Unlocked for 2 s without use: it holds something, so it stays past its 1 s of quiet time.
        try box.unlock(["--idle", "2s"])
        #expect(try box.agentPID() == agent.pid)
        var lockedAt: Double?
        let deadline = monotonicNow() + 10
        while lockedAt == nil, monotonicNow() < deadline {
            guard let status = try box.status() else { break }  // it must answer as long as a vault is unlocked
            if status.vaults.isEmpty { lockedAt = monotonicNow() } else { usleep(100_000) }
        }
        try #require(lockedAt != nil, "the vault never locked, or the agent ended while holding it")
        let run = agent.finish()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.hasSuffix("vault agent: held nothing for 1 s; stopping\nvault agent: stopping; forgot 0 key(s)\n"), "\(run.stderr)")
        #expect(monotonicNow() - lockedAt! < 5, "it ended \(monotonicNow() - lockedAt!) s after the vault locked")
        #expect(!AgentFiles.exists(box.socketPath))
    }
}

import Foundation
import Testing
import VaultTestSupport

/// The agent locks every vault when logind says the machine is about to sleep or a session's screen is locked
/// (issue 38 §2): a private bus the test starts (`dbus-daemon`) stands for the system bus, and a stub logind (Debian's
/// python3-dbus) owns `org.freedesktop.login1` and emits `PrepareForSleep` and a session's `Lock`, as logind does.
@Suite(.processTimeLimit, .serialized) struct SleepLockTests {
    static let python = "/usr/bin/python3"
    static var present: Bool {
        (FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-daemon") && FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-send")
            && (try? AgentCLI.exec(python, ["-c", "import dbus"], environment: [:]).status) == 0)
            || ProcessInfo.processInfo.environment["CI"] == "true"
    }

    /// Emits one signal as logind would (owning its name), or, with `owning: false`, as any other client could.
    static let stub = """
        import sys, dbus, dbus.lowlevel
        bus = dbus.bus.BusConnection(sys.argv[1])
        if sys.argv[3] == 'owning':
            assert bus.request_name('org.freedesktop.login1', dbus.bus.NAME_FLAG_DO_NOT_QUEUE) == dbus.bus.REQUEST_NAME_REPLY_PRIMARY_OWNER
        what = sys.argv[2]
        if what in ('sleep', 'wake'):
            message = dbus.lowlevel.SignalMessage('/org/freedesktop/login1', 'org.freedesktop.login1.Manager', 'PrepareForSleep')
            message.append(what == 'sleep', signature='b')
        else:
            message = dbus.lowlevel.SignalMessage('/org/freedesktop/login1/session/_31', 'org.freedesktop.login1.Session', 'Lock')
        bus.send_message(message)
        bus.flush()
        """

    /// A private bus on a socket in the box; stopped at the end.
    final class Bus {
        let address: String
        let daemon: AgentCLI.Running

        init(in box: AgentBox) throws {
            let path = box.directory + "/system_bus_socket"
            address = "unix:path=" + path
            daemon = try AgentCLI.start(
                "/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--address=\(address)"], environment: [:], timeout: 120)
            try #require(AgentTests.poll { AgentFiles.lstatMode(path) != nil }, "dbus-daemon made no socket")
        }

        func emit(_ what: String, owning: Bool = true) throws {
            let result = try AgentCLI.exec(SleepLockTests.python, ["-c", SleepLockTests.stub, address, what, owning ? "owning" : "not"], environment: [:])
            try #require(result.status == 0, "the stub logind failed: \(result.stderr)")
        }

        deinit {
            kill(daemon.pid, SIGTERM)
            _ = daemon.finish()
        }
    }

    static func held(_ box: AgentBox) throws -> Int { try box.status()?.vaults.count ?? -1 }

    @Test(.enabled(if: present, "dbus-daemon or python3-dbus is missing: run scripts/install-deps --test"))
    func sleepAndScreenLockFromLogindLockEveryVaultAndNothingElseDoes() throws {
        let (box, value) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        let bus = try Bus(in: box)
        let unlock = try box.vault(["unlock"], source: true, environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        try #require(unlock.status == 0, "\(unlock.stderr)")
        try #require(try Self.held(box) == 1)

        // Not logind (a client that does not own the name), and waking up: nothing locks.
        try bus.emit("sleep", owning: false)
        try bus.emit("lock", owning: false)
        try bus.emit("wake")
        usleep(300_000)
        #expect(try Self.held(box) == 1, "a signal that is not logind's going to sleep locked the vault")
        #expect(try box.vault(["get", "k"]).stdout == Data(value.utf8))

        // logind: the machine is going to sleep.
        try bus.emit("sleep")
        #expect(try AgentTests.poll { try Self.held(box) == 0 }, "PrepareForSleep(true) did not lock the vault")
        AgentTests.expectLocked(try box.vault(["get", "k"]), "get after sleep")

        // logind: a session's screen was locked.
        try box.unlock()
        try bus.emit("lock")
        #expect(try AgentTests.poll { try Self.held(box) == 0 }, "a session's Lock did not lock the vault")
    }

    @Test(.enabled(if: present, "dbus-daemon or python3-dbus is missing: run scripts/install-deps --test"))
    func theSettingTurnsItOff() throws {
        let (box, _) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        let bus = try Bus(in: box)
        let unlock = try box.vault(
            ["unlock"], source: true, environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address, "VAULT_LOCK_ON_SLEEP": "0"])
        try #require(unlock.status == 0, "\(unlock.stderr)")
        try bus.emit("sleep")
        usleep(500_000)
        #expect(try Self.held(box) == 1, "VAULT_LOCK_ON_SLEEP=0 and the vault locked on sleep")
    }

    /// A bus named but not there: the agent says it cannot watch it, and serves as before.
    @Test func aSystemBusThatIsNotThereIsSaidAndNothingElseChanges() throws {
        let (box, _) = try AgentTests.boxWithEntry()
        defer { box.stopAgents() }
        let running = try AgentCLI.start(
            CLI.vault, ["agent", "run", "--exit-when-empty", "1s"],
            environment: box.environment.merging(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(box.directory)/no-bus"]) { $1 }, timeout: 30)
        box.remember(running.pid)
        let ended = running.finish()
        #expect(ended.status == 0, "\(ended.stderr)")
        #expect(ended.stderr.contains("vault agent: cannot watch the system bus for sleep and screen lock (cannot connect to \(box.directory)/no-bus: No such file or directory); vaults lock on their timeouts only"),
            "\(ended.stderr)")
        #expect(ended.stderr.contains("held nothing for 1 s; stopping"))
    }
}

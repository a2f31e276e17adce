import Foundation
import Testing
@testable import VaultAgent
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// When an agent ends by itself: its socket path no longer leads to it (``SocketWatch``), or it has held nothing for
/// a while (``EmptyExit``). Real sockets in a private directory; time moves by hand.
@Suite struct AgentLifetimeTests {
    let directory = AgentTestDirectory()
    let clock = TestClock()

    /// A Unix socket bound at `path` (not listening: a file of type socket is all the watch looks at); its descriptor.
    func bindSocket(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        var address = try AgentSocket.socketAddress(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0, "bind: errno \(errno)")
        return fd
    }

    @Test func theWatchLooksOncePerIntervalAndSeesARemovedSocket() throws {
        let path = directory.file("agent.sock")
        let fd = try bindSocket(path)
        defer { close(fd) }
        var watch = try #require(SocketWatch(path: path, clock: clock))
        let seen1 = watch.stillLeadsHere()
        #expect(seen1)
        #expect(unlink(path) == 0)
        #expect(!watch.leadsHere())
        clock.advance(by: 0.999)
        let seen2 = watch.stillLeadsHere()
        #expect(seen2, "not looked at again within the interval")
        clock.advance(by: 0.001)
        let seen3 = watch.stillLeadsHere()
        #expect(!seen3)
        // Gone for good, whatever comes back at that path.
        let again = try bindSocket(path)
        defer { close(again) }
        clock.advance(by: 1)
        let seen4 = watch.stillLeadsHere()
        #expect(!seen4)
    }

    @Test func aSocketOfAnotherAgentRenamedIntoPlaceIsNotOurs() throws {
        let path = directory.file("agent.sock"), other = directory.file("other.sock")
        let ours = try bindSocket(path), theirs = try bindSocket(other)
        defer { close(ours); close(theirs) }
        var watch = try #require(SocketWatch(path: path, clock: clock))
        #expect(rename(other, path) == 0)
        clock.advance(by: 1)
        let seen5 = watch.stillLeadsHere()
        #expect(!seen5)
        #expect(SocketWatch.identity(of: path) != nil, "the other socket is there, and is not ours")
    }

    @Test func anyOtherFileOrAMissingDirectoryIsNotOurs() throws {
        let path = directory.file("run/agent.sock")
        try FileManager.default.createDirectory(atPath: directory.file("run"), withIntermediateDirectories: false)
        let fd = try bindSocket(path)
        defer { close(fd) }
        var watch = try #require(SocketWatch(path: path, clock: clock))
        // A regular file in its place.
        #expect(unlink(path) == 0)
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        #expect(!watch.leadsHere())
        // The directory itself removed (a logout removes /run/user/UID).
        try FileManager.default.removeItem(atPath: directory.file("run"))
        clock.advance(by: 5)
        let seen6 = watch.stillLeadsHere()
        #expect(!seen6)
        #expect(SocketWatch(path: path, clock: clock) == nil, "nothing there: nothing to watch")
    }

    @Test func anEmptyAgentEndsOnlyWithNothingHeldNoClientAndTheWholeQuietTime() {
        let exit = EmptyExit(seconds: 60)
        #expect(!exit.shouldExit(now: 159.9, holdsNothing: true, connections: 0, lastActivity: 100))
        #expect(exit.shouldExit(now: 160, holdsNothing: true, connections: 0, lastActivity: 100))
        #expect(!exit.shouldExit(now: 1000, holdsNothing: false, connections: 0, lastActivity: 100))
        #expect(!exit.shouldExit(now: 1000, holdsNothing: true, connections: 1, lastActivity: 100))
    }

    @Test func theRingSaysSinceWhenItHoldsNothing() throws {
        let fixture = AgentFixture()
        let path = try fixture.makeVault(entries: [("k", "v")])
        let made = fixture.ring.lastChange
        fixture.clock.advance(by: 5)
        try #require(status(try fixture.unlock(path, idle: 10)) == .ok)
        #expect(fixture.ring.lastChange == made + 5)
        fixture.clock.advance(by: 30)
        #expect(fixture.ring.lastChange == made + 5, "a vault held changes nothing while it is")
        #expect(fixture.ring.holdsNothing, "expired at 10 s")
        #expect(fixture.ring.lastChange == made + 15, "when it expired, not when the sweep found it")
    }

    /// The listener itself, in this process, on the test clock: its socket removed and a second passed on its
    /// clock, it returns at its next look (the poll wakes it within a quarter of a second), having locked what it held.
    @Test(.timeLimit(.minutes(1))) func aListenerWhoseSocketIsRemovedReturnsAndLocksEverything() throws {
        let fixture = AgentFixture()
        let path = try fixture.makeVault(entries: [("k", "v")])
        try #require(status(try fixture.unlock(path)) == .ok)
        let socketPath = fixture.directory.file("run/agent.sock")
        let listener = try AgentListener(socketPath: socketPath, service: fixture.service, exitWhenEmptyAfter: nil, log: { _ in })
        let done = DispatchSemaphore(value: 0)
        startDetachedThread {
            try? listener.run()
            done.signal()
        }
        var client: AgentClient?
        for _ in 0..<500 where client == nil {
            client = try? AgentClient.connect(socketPath: socketPath, timeoutSeconds: 1)
            if client == nil { usleep(10_000) }
        }
        let connected = try #require(client, "the listener never answered")
        #expect(try connected.vault(at: path)?.getString("k") == "v")
        #expect(unlink(socketPath) == 0)
        fixture.clock.advance(by: 1)
        #expect(done.wait(timeout: .now() + 10) == .success, "the listener outlived its socket")
        #expect(fixture.ring.holdsNothing)
    }
}

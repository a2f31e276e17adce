import Foundation
import Testing
@testable import VaultAgent
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The listener is generic over the protocol it serves (issue 34 §3): two sockets, two protocols, one key ring.
@Suite struct AgentListenerProtocolTests {
    /// A protocol of its own framing: one byte in, the number of vaults the ring holds as a line out.
    struct HeldCount: AgentSocketProtocol {
        let ring: KeyRing

        func receive(on fd: Int32, budget: AgentWire.FrameBudget) throws -> UInt8? {
            var byte: UInt8 = 0
            return read(fd, &byte, 1) == 1 ? byte : nil
        }

        func answer(_ request: UInt8, on _: Void) -> (reply: [UInt8], endsConnection: Bool) {
            (Array("\(ring.status().count)\n".utf8), false)
        }

        func send(_ reply: [UInt8], on fd: Int32) throws {
            _ = reply.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
    }

    /// Runs `listener` on a thread of its own; the closure returned stops it and waits (10 s at most) for its end.
    static func start<Handler>(_ listener: AgentListener<Handler>) -> () -> Void {
        let done = DispatchSemaphore(value: 0)
        startDetachedThread {
            try? listener.run()
            done.signal()
        }
        return {
            listener.stop()
            _ = done.wait(timeout: .now() + 10)
        }
    }

    /// A connection to the listener at `socket`, once it listens (5 s at most).
    static func connect(to socket: String) throws -> Int32 {
        for _ in 0..<500 {
            if let fd = try? AgentSocket.connect(to: socket, timeoutSeconds: 1) { return fd }
            usleep(10_000)
        }
        throw AgentError.protocolError("the listener at \(socket) never answered")
    }

    @Test(.timeLimit(.minutes(1))) func twoProtocolsOnTwoSocketsReadOneKeyRing() throws {
        let fixture = AgentFixture()
        let path = try fixture.makeVault(entries: [("k", "v")])
        let vaultAgent = try InProcessAgent(fixture)
        defer { vaultAgent.stop() }
        let otherSocket = fixture.directory.file("run/held.sock")
        let stop = Self.start(try AgentListener(socketPath: otherSocket, service: HeldCount(ring: fixture.ring), exitWhenEmptyAfter: nil, log: { _ in }))
        defer { stop() }
        let connection = try Self.connect(to: otherSocket)
        defer { close(connection) }
        func held() -> String {
            var request: UInt8 = 1
            _ = write(connection, &request, 1)
            var buffer = [UInt8](repeating: 0, count: 16)
            let n = read(connection, &buffer, buffer.count)
            return String(decoding: buffer.prefix(Swift.max(0, n)), as: UTF8.self)
        }
        #expect(held() == "0\n")
        let client = try vaultAgent.client()
        try client.unlock(path: path, passphrase: SecureBytes(string: AgentFixture.passphrase), idleSeconds: 60, maxSeconds: 60,
                          allowInsecureKDFForTesting: true)
        #expect(held() == "1\n", "the vault unlocked through one protocol is held for the other")
        #expect(try client.lock(path: path))
        #expect(held() == "0\n")
    }

    /// A protocol that answers each byte with the serving thread's kernel id.
    struct ServingThread: AgentSocketProtocol {
        let ring: KeyRing

        func receive(on fd: Int32, budget: AgentWire.FrameBudget) throws -> UInt8? {
            var byte: UInt8 = 0
            return read(fd, &byte, 1) == 1 ? byte : nil
        }

        func answer(_ request: UInt8, on _: Void) -> (reply: [UInt8], endsConnection: Bool) {
            // The kernel's thread id (/proc/thread-self is PID/task/TID): unlike pthread_self, never the same
            // for a new thread that took over an ended one's cached stack.
            var link = [CChar](repeating: 0, count: 64)
            let n = readlink("/proc/thread-self", &link, link.count - 1)
            return (Array(link.prefix(Swift.max(0, n)).map { UInt8(bitPattern: $0) }) + [10], false)
        }

        func send(_ reply: [UInt8], on fd: Int32) throws {
            _ = reply.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
    }

    /// A thread that served a connection serves a later one (``ConnectionWorkers``) rather than a new thread
    /// being made for each; two clients at once are served side by side all the same.
    @Test(.timeLimit(.minutes(1))) func aConnectionIsServedByAThreadThatServedAnEarlierOne() throws {
        let fixture = AgentFixture()
        let socket = fixture.directory.file("run/thread.sock")
        let stop = Self.start(try AgentListener(socketPath: socket, service: ServingThread(ring: fixture.ring), exitWhenEmptyAfter: nil, log: { _ in }))
        defer { stop() }
        func connect() throws -> Int32 { try Self.connect(to: socket) }
        func servingThread(_ fd: Int32) -> String {
            var request: UInt8 = 1
            _ = write(fd, &request, 1)
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = read(fd, &buffer, buffer.count)
            return String(decoding: buffer.prefix(Swift.max(0, n)), as: UTF8.self)
        }
        // One connection after another: once the first thread waits again, a later connection is its.
        var seen: Set<String> = []
        var reused = false
        for _ in 0..<200 where !reused {
            let fd = try connect()
            let thread = servingThread(fd)
            close(fd)
            reused = !seen.insert(thread).inserted
            if !reused { usleep(1_000) }
        }
        #expect(reused, "every connection had a new thread (\(seen.count) threads)")
        // Two at once: two threads, each answering its own client.
        let (a, b) = (try connect(), try connect())
        defer { close(a); close(b) }
        let (first, second) = (servingThread(a), servingThread(b))
        #expect(first != second && !first.isEmpty && !second.isEmpty)
        #expect(servingThread(a) == first && servingThread(b) == second)
    }
}

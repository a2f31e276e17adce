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

    @Test(.timeLimit(.minutes(1))) func twoProtocolsOnTwoSocketsReadOneKeyRing() throws {
        let fixture = AgentFixture()
        let path = try fixture.makeVault(entries: [("k", "v")])
        let vaultAgent = try InProcessAgent(fixture)
        defer { vaultAgent.stop() }
        let otherSocket = fixture.directory.file("run/held.sock")
        let other = try AgentListener(socketPath: otherSocket, service: HeldCount(ring: fixture.ring), exitWhenEmptyAfter: nil, log: { _ in })
        let done = DispatchSemaphore(value: 0)
        startDetachedThread {
            try? other.run()
            done.signal()
        }
        defer {
            other.stop()
            _ = done.wait(timeout: .now() + 10)
        }
        var fd: Int32?
        for _ in 0..<500 where fd == nil {
            fd = try? AgentSocket.connect(to: otherSocket, timeoutSeconds: 1)
            if fd == nil { usleep(10_000) }
        }
        let connection = try #require(fd, "the second listener never answered")
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
}

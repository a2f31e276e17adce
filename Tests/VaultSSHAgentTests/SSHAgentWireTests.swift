import Foundation
import Testing
import VaultAgent
@testable import VaultSSHAgent

/// The framing on a real socket pair: a frame over 256 KiB, an empty or truncated one close the connection.
struct SSHAgentWireTests {
    func pair() -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    func write(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    @Test func aFrameRoundTripsAndTheEndOfTheStreamIsNil() throws {
        let (a, b) = pair()
        defer { close(a); close(b) }
        try SSHAgentWire.send([11], on: a)
        #expect(try SSHAgentWire.receive(on: b, budget: nil) == [11])
        shutdown(a, Int32(SHUT_WR))
        #expect(try SSHAgentWire.receive(on: b, budget: nil) == nil)
    }

    @Test func anOversizeFrameIsRefusedFromItsHeader() throws {
        let (a, b) = pair()
        defer { close(a); close(b) }
        write(a, [0, 4, 0, 1])
        #expect(throws: SSHAgentWire.FrameError.tooLong(256 * 1024 + 1)) { try SSHAgentWire.receive(on: b, budget: nil) }
    }

    @Test func emptyAndTruncatedFramesAreRefused() throws {
        let (a, b) = pair()
        defer { close(a); close(b) }
        write(a, [0, 0, 0, 0])
        #expect(throws: SSHAgentWire.FrameError.empty) { try SSHAgentWire.receive(on: b, budget: nil) }
        write(a, [0, 0, 0, 9, 11, 0])
        shutdown(a, Int32(SHUT_WR))
        #expect(throws: SSHAgentWire.FrameError.truncated) { try SSHAgentWire.receive(on: b, budget: nil) }
    }

    @Test func aFrameBeyondTheBudgetIsRefused() throws {
        let (a, b) = pair()
        defer { close(a); close(b) }
        try SSHAgentWire.send([UInt8](repeating: 1, count: 100), on: a)
        #expect(throws: SSHAgentWire.FrameError.overBudget) { try SSHAgentWire.receive(on: b, budget: AgentWire.FrameBudget(byteCount: 50)) }
    }
}

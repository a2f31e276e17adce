import Foundation
import Testing
@testable import VaultAgent
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The agent's framing (docs/AGENT.md, "Wire protocol" and "Bounds"): what a payload may be, and what a frame on
/// a stream may announce. Streams are socket pairs in this process.
@Suite struct AgentWireTests {
    func payload(_ bytes: [UInt8]) throws -> AgentWire.Message { try AgentWire.Message(payload: SecureBytes(bytes)) }

    /// A connected pair of Unix stream sockets.
    func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    @Test func aPayloadIsVersionKindAndFieldsAndNothingElse() throws {
        let message = try payload([AgentWire.version, 6, 1, 0, 0, 0, 1, UInt8(ascii: "/"), 2, 0, 0, 0, 0])
        #expect(message.kind == 6 && message.fields.map(\.tag) == [1, 2])
        #expect(message.string(.path) == "/" && message.string(.name) == "")
        #expect(throws: AgentError.protocolError("a message shorter than its header")) { try payload([AgentWire.version]) }
        #expect(throws: AgentError.protocolError("a truncated field")) { try payload([AgentWire.version, 6, 1, 0, 0, 0]) }
        #expect(throws: AgentError.protocolError("a truncated field")) { try payload([AgentWire.version, 6, 1, 0, 0, 0, 2, 0]) }
        // Another version's fields are not read at all: the answer is a bare error in its terms.
        #expect(try payload([AgentWire.version + 1, 6, 1, 0, 0]).fields.isEmpty)
    }

    @Test func aPayloadOfMoreFieldsThanTheLimitIsRefused() throws {
        #expect(AgentWire.maximumFieldCount == 1_048_576)
        // Empty fields of tag 0 (no tag of ours, still a field): all zero bytes after the header. (A million of them
        // take seconds to parse in a debug build: the limit's logic is checked on a small one.)
        func fields(_ count: Int) throws -> AgentWire.Message {
            var bytes = [UInt8](repeating: 0, count: 2 + 5 * count)
            (bytes[0], bytes[1]) = (AgentWire.version, 6)
            return try AgentWire.Message(payload: SecureBytes(bytes), fieldLimit: 1000)
        }
        #expect(try fields(1000).fields.count == 1000)
        #expect(throws: AgentError.protocolError("a message of more than 1000 fields")) { try fields(1001) }
    }

    @Test func aFrameCrossesAStreamWholeAndAnOversizedOneIsRefusedUnread() throws {
        let (a, b) = try socketPair()
        defer { close(a); close(b) }
        let writer = AgentWire.Writer(kind: AgentOperation.get.rawValue)
        writer.field(.name, "k")
        writer.field(.value, SecureBytes(string: "v"))
        try AgentWire.send(writer, on: a)
        let received = try #require(try AgentWire.receive(on: b))
        #expect(received.payload == writer.buffer.secureBytes())
        // A header announcing one byte more than a frame may hold: refused before anything is read or held.
        let count = AgentWire.maximumPayloadByteCount + 1
        let header: [UInt8] = [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
        #expect(header.withUnsafeBytes { Posix.writeAll(a, $0) } == 0)
        #expect(throws: AgentError.protocolError("a frame of \(count) bytes")) { try AgentWire.receive(on: b) }
        // The end of the stream before a frame is no frame; inside one, an error.
        #expect([UInt8]([0, 0]).withUnsafeBytes { Posix.writeAll(a, $0) } == 0)
        shutdown(a, Int32(SHUT_WR))
        #expect(throws: AgentError.protocolError("the connection closed inside a frame")) { try AgentWire.receive(on: b) }
        #expect(try AgentWire.receive(on: b) == nil)
    }

    @Test func framesBeingReadCountAgainstTheAgentsBudget() throws {
        let (a, b) = try socketPair()
        defer { close(a); close(b) }
        let budget = AgentWire.FrameBudget(byteCount: 10)
        let writer = AgentWire.Writer(kind: AgentOperation.get.rawValue)
        writer.field(.name, "a name of more than ten bytes")
        try AgentWire.send(writer, on: a)
        #expect(throws: AgentError.protocolError("the agent holds too many unread bytes")) { try AgentWire.receive(on: b, budget: budget) }
        #expect(budget.take(10), "what a refused frame took is given back")
    }
}

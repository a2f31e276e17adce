import VaultAgent
import VaultCore
import VaultSSH
#if canImport(Glibc)
import Glibc
#endif

/// The ssh-agent protocol's framing and message numbers (RFC 9987 / draft-miller-ssh-agent, OpenSSH's
/// PROTOCOL.agent): a `uint32` length and that many bytes, the first the message type.
package enum SSHAgentWire {
    /// The largest frame read; a longer one closes the connection (OpenSSH's agent uses the same 256 KiB).
    package static let maxFrame = 256 * 1024

    package static let failure: UInt8 = 5
    package static let success: UInt8 = 6
    package static let requestIdentities: UInt8 = 11
    package static let identitiesAnswer: UInt8 = 12
    package static let signRequest: UInt8 = 13
    package static let signResponse: UInt8 = 14
    package static let addIdentity: UInt8 = 17
    package static let removeIdentity: UInt8 = 18
    package static let removeAllIdentities: UInt8 = 19
    package static let addSmartcardKey: UInt8 = 20
    package static let removeSmartcardKey: UInt8 = 21
    package static let lock: UInt8 = 22
    package static let unlock: UInt8 = 23
    package static let addIdentityConstrained: UInt8 = 25
    package static let addSmartcardKeyConstrained: UInt8 = 26
    package static let extensionRequest: UInt8 = 27
    package static let extensionFailure: UInt8 = 28
    package static let extensionResponse: UInt8 = 29

    /// Why a connection is closed without an answer.
    package enum FrameError: Error, Equatable {
        case tooLong(UInt32)
        case empty
        case truncated
        case overBudget
    }

    /// The next frame's body on `fd`, `nil` at a clean end of the stream (no byte of a new frame).
    package static func receive(on fd: Int32, budget: AgentWire.FrameBudget?) throws -> [UInt8]? {
        var header = [UInt8](repeating: 0, count: 4)
        let got = try readFully(fd, &header)
        if got == 0 { return nil }
        guard got == 4 else { throw FrameError.truncated }
        let length = header.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard length > 0 else { throw FrameError.empty }
        guard length <= maxFrame else { throw FrameError.tooLong(length) }
        if let budget {
            guard budget.take(Int(length)) else { throw FrameError.overBudget }
        }
        defer { budget?.release(Int(length)) }
        var body = [UInt8](repeating: 0, count: Int(length))
        guard try readFully(fd, &body) == body.count else { throw FrameError.truncated }
        return body
    }

    /// Sends one frame holding `body`.
    package static func send(_ body: [UInt8], on fd: Int32) throws {
        let count = UInt32(body.count)
        let frame = [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)] + body
        var sent = 0
        while sent < frame.count {
            let written = frame.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                throw VaultError.io(operation: "cannot answer on the ssh-agent socket", path: "", errno: errno)
            }
            sent += written
        }
    }

    private static func readFully(_ fd: Int32, _ buffer: inout [UInt8]) throws -> Int {
        var got = 0
        while got < buffer.count {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, $0.count - got) }
            if count < 0 {
                if errno == EINTR { continue }
                throw VaultError.io(operation: "cannot read the ssh-agent socket", path: "", errno: errno)
            }
            if count == 0 { break }
            got += count
        }
        return got
    }
}

import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The ssh-agent socket's last signatures, as `vault agent status` shows them: asked with the `signatures@vault`
/// extension, which the ssh-agent socket (VaultSSHAgent's service) answers with one line each, never a secret:
/// time, key, fingerprint, host when bound, forwarded or not, SSHSIG namespace. No swift-crypto: `vault` asks.
public enum SSHSignatures {
    public static let extensionName = "signatures@vault"
    static let extensionRequest: UInt8 = 27
    static let extensionResponse: UInt8 = 29

    /// The lines, oldest first; `nil` when no ssh-agent socket answers at `socketPath`.
    public static func last(socketPath: String = AgentSocket.sshAgentPath) -> [String]? {
        guard let fd = try? AgentSocket.connect(to: socketPath, timeoutSeconds: 2) else { return nil }
        defer { close(fd) }
        let name = Array(extensionName.utf8)
        let body = [extensionRequest] + bigEndian(UInt32(name.count)) + name
        let frame = bigEndian(UInt32(body.count)) + body
        guard frame.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == frame.count,
              let header = read(fd, 4)
        else { return nil }
        let length = Int(header.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard length > 0, length <= 256 * 1024, let answer = read(fd, length), answer.first == extensionResponse else { return nil }
        var offset = 1
        func string() -> [UInt8]? {
            guard offset + 4 <= answer.count else { return nil }
            let count = Int(answer[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            offset += 4
            guard count <= answer.count - offset else { return nil }
            defer { offset += count }
            return Array(answer[offset..<offset + count])
        }
        guard string() == name else { return nil }
        var lines: [String] = []
        while offset < answer.count {
            guard let line = string() else { return nil }
            lines.append(String(decoding: line, as: UTF8.self))
        }
        return lines
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func read(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, count - got) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            got += n
        }
        return buffer
    }
}

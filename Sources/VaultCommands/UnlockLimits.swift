import FoundationEssentials
import Glibc
import VaultCore

/// How long the agent keeps a vault unlocked: the limits the user chose for it with `vault unlock --idle --max`
/// (issue 33 §4), remembered in the state directory (`<vault id>.unlock`: two numbers, no secret) and used when a
/// verb unlocks that vault on demand on a terminal; 15 minutes without use and 8 hours at most when none were chosen.
struct UnlockLimits: Equatable {
    var idleSeconds: Int
    var maxSeconds: Int

    static let standard = UnlockLimits(idleSeconds: 15 * 60, maxSeconds: 8 * 3600)

    /// "15m without use, 8h at most".
    var description: String { "\(Unlock.span(idleSeconds)) without use, \(Unlock.span(maxSeconds)) at most" }

    /// The record of the vault at `vault`, named by its vault id (read from the file's fixed header: a file that is
    /// not version 2 or 3 has none, and keeps the standard limits).
    static func recordPath(forVaultAt vault: String) -> String? {
        let fd = open(vault, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // magic (8), version (2), header length (4), vault id (16).
        guard let start = try? Posix.readAll(fd, limit: 30, path: vault), start.count == 30, DocumentHeader.isVersion2(start) else { return nil }
        return RollbackProtection.defaultStateDirectory + "/\(Posix.hex(Array(start[14..<30]))).unlock"
    }

    /// The limits remembered for the vault at `vault`, or ``standard``.
    static func remembered(forVaultAt vault: String) -> UnlockLimits {
        guard let path = recordPath(forVaultAt: vault) else { return standard }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return standard }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, Posix.distrust(ofFile: info, accepting: .regular) == nil,
              let bytes = try? Posix.readAll(fd, limit: 256, path: path)
        else { return standard }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
        func number(_ key: String) -> Int? {
            lines.first { $0.hasPrefix(key + " ") }.flatMap { Int($0.dropFirst(key.count + 1)) }.flatMap { (1...Duration.longestSeconds).contains($0) ? $0 : nil }
        }
        guard lines.first == "vault-unlock 1", let idle = number("idle"), let max = number("max") else { return standard }
        return UnlockLimits(idleSeconds: idle, maxSeconds: max)
    }

    /// Remembers these limits for the vault at `vault` (best effort: a vault whose id cannot be read, or a state
    /// directory that cannot be written, keeps the standard limits for on-demand unlocks).
    func remember(forVaultAt vault: String) {
        guard let path = Self.recordPath(forVaultAt: vault) else { return }
        try? FileManager.default.createDirectory(atPath: RollbackProtection.defaultStateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let text = "vault-unlock 1\nidle \(idleSeconds)\nmax \(maxSeconds)\n"
        let written = Array(text.utf8).withUnsafeBytes { Posix.writeAll(fd, $0) } == 0
        close(fd)
        if !written || rename(temporary, path) != 0 { unlink(temporary) }
    }
}

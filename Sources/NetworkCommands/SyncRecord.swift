import ArgumentParser
import Foundation
import VaultAuth
import VaultCommands
import VaultCore
import VaultSodium
import VaultSync
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

/// What the last sync of a vault with a remote saw: the object's ETag and the local file's version then, in the
/// state directory (`<vault id>.sync-<hash of the local path and the remote>`). With both unchanged, a sync is one
/// conditional GET. A record tells only that nothing changed; anything else is read and merged.
struct SyncRecord {
    var etag: String
    var localVersion: String

    static func path(for localBytes: [UInt8], path local: String, remote: String) -> String? {
        // Only the vault id is read here (the KDF's bounds are checked where the vault is opened).
        guard let header = try? DocumentHeader.parse(localBytes, label: "", policy: .insecureForTesting) else { return nil }
        let name = Array((local + "\n" + remote).utf8).withUnsafeBytes { Posix.hex(Array(Sodium.blake2b256($0).prefix(8))) }
        return RollbackProtection.defaultStateDirectory + "/\(header.vaultID).sync-\(name)"
    }

    static func read(for localBytes: [UInt8], path local: String, remote: String) -> SyncRecord? {
        guard let path = path(for: localBytes, path: local, remote: remote), let data = FileManager.default.contents(atPath: path),
              let text = String(data: data, encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 3, lines[0] == "vault-sync 1", lines[1].hasPrefix("etag "), lines[2].hasPrefix("local ") else { return nil }
        return SyncRecord(etag: String(lines[1].dropFirst(5)), localVersion: String(lines[2].dropFirst(6)))
    }

    func write(for localBytes: [UInt8], path local: String, remote: String) {
        guard let path = Self.path(for: localBytes, path: local, remote: remote) else { return }
        try? FileManager.default.createDirectory(atPath: RollbackProtection.defaultStateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let text = "vault-sync 1\netag \(etag)\nlocal \(localVersion)\n"
        _ = Array(text.utf8).withUnsafeBytes { Posix.writeAll(fd, $0) }
    }

    static func remove(for localBytes: [UInt8], path local: String, remote: String) {
        if let path = path(for: localBytes, path: local, remote: remote) { unlink(path) }
    }
}

import FoundationEssentials
import VaultCore
import VaultSodium
#if canImport(Glibc)
import Glibc
#endif

/// What the last sync of a vault with a copy saw: the copy's version (an S3 ETag) and the local file's version then,
/// in the state directory (`<vault id>.sync-<hash of the local path and the copy's record key>`). With both
/// unchanged, a sync is one conditional read. A record tells only that nothing changed; anything else is read and
/// merged.
///
/// The key is the copy's ``VaultCopy/recordKey``: for S3 the endpoint and region with `s3://BUCKET/KEY`, so that a
/// record of one store never speaks for another that has a bucket of the same name. A record written before (keyed
/// by the label alone, ``legacy``) is still read for its version (a conditional read: a 304 means that version, at
/// whatever store), never as a claim that the object existed (`recreate`), and the next record replaces it.
struct SyncRecord {
    var etag: String
    var localVersion: String
    /// Read from a record keyed by the store's label alone (written by an earlier version).
    var legacy = false

    init(etag: StorageVersion, localBytes: [UInt8]) {
        self.etag = etag.value
        self.localVersion = LocalFileStorage.version(of: localBytes).value
    }

    init(etag: String, localVersion: String) {
        self.etag = etag
        self.localVersion = localVersion
    }

    /// Where records are kept, and for which vault file.
    struct Place {
        let directory: String
        let local: String

        func path(for localBytes: [UInt8], key: String) -> String? {
            // Only the vault id is read here (the KDF's bounds are checked where the vault is opened).
            guard let header = try? DocumentHeader.parse(localBytes, label: "", policy: .insecureForTesting) else { return nil }
            let name = Array((local + "\n" + key).utf8).withUnsafeBytes { Posix.hex(Array(Sodium.blake2b256($0).prefix(8))) }
            return directory + "/\(header.vaultID).sync-\(name)"
        }

        /// The keys of `copy`'s record: its own, and the label alone when that differs (an earlier version's).
        func keys(_ copy: any VaultCopy) -> (current: String, legacy: String?) {
            (copy.recordKey, copy.recordKey == copy.label ? nil : copy.label)
        }

        func read(for localBytes: [UInt8], copy: any VaultCopy) -> SyncRecord? {
            let (current, legacy) = keys(copy)
            if let record = read(for: localBytes, key: current) { return record }
            guard let legacy, var record = read(for: localBytes, key: legacy) else { return nil }
            record.legacy = true
            return record
        }

        func read(for localBytes: [UInt8], key: String) -> SyncRecord? {
            guard let path = path(for: localBytes, key: key), let data = FileManager.default.contents(atPath: path),
                  let text = String(data: data, encoding: .utf8) else { return nil }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            guard lines.count >= 3, lines[0] == "vault-sync 1", lines[1].hasPrefix("etag "), lines[2].hasPrefix("local ") else { return nil }
            return SyncRecord(etag: String(lines[1].dropFirst(5)), localVersion: String(lines[2].dropFirst(6)))
        }

        func write(_ record: SyncRecord, for localBytes: [UInt8], copy: any VaultCopy) {
            let (current, legacy) = keys(copy)
            guard let path = path(for: localBytes, key: current) else { return }
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return }
            defer { close(fd) }
            let text = "vault-sync 1\netag \(record.etag)\nlocal \(record.localVersion)\n"
            _ = Array(text.utf8).withUnsafeBytes { Posix.writeAll(fd, $0) }
            if let legacy, let old = self.path(for: localBytes, key: legacy) { unlink(old) }
        }

        func remove(for localBytes: [UInt8], copy: any VaultCopy) {
            let (current, legacy) = keys(copy)
            for key in [current] + (legacy.map { [$0] } ?? []) {
                if let path = path(for: localBytes, key: key) { unlink(path) }
            }
        }
    }
}

import FoundationEssentials
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The remote a vault syncs with when `vault sync` names none: set by its first successful sync with a remote or by
/// `vault remote set`, with the S3 endpoint and region given then, and whether plain http was allowed (still only ever
/// to a loopback address: the CLI checks each URL as it checks one given on the command line). One file per vault, by its id, in the state
/// directory (`<vault id>.remote`, beside the record of each copy's last sync); no secret in it (credentials are
/// read at each sync), mode 0600, replaced atomically.
public struct RemoteRecord: Equatable, Sendable {
    public var remote: String
    public var endpoint: String?
    public var region: String?
    /// `--allow-insecure-http` was given with it: `vault sync` alone allows plain http to a loopback address again.
    public var allowInsecureHTTP: Bool

    public init(remote: String, endpoint: String? = nil, region: String? = nil, allowInsecureHTTP: Bool = false) {
        self.remote = remote
        self.endpoint = endpoint
        self.region = region
        self.allowInsecureHTTP = allowInsecureHTTP
    }

    /// The record's path for the vault file at `local`; nil when there is no vault there (or it has no header).
    public static func path(vault local: String, stateDirectory: String = RollbackProtection.defaultStateDirectory) -> String? {
        guard let bytes = FileManager.default.contents(atPath: local).map(Array.init),
              let header = try? DocumentHeader.parse(bytes, label: "", policy: .insecureForTesting) else { return nil }
        return stateDirectory + "/\(header.vaultID).remote"
    }

    public static func read(vault local: String, stateDirectory: String = RollbackProtection.defaultStateDirectory) -> RemoteRecord? {
        guard let path = path(vault: local, stateDirectory: stateDirectory), let data = FileManager.default.contents(atPath: path),
              let text = String(data: data, encoding: .utf8) else { return nil }
        let lines = text.split(separator: "\n").map(String.init)
        guard lines.first == "vault-remote 1", let remote = lines.first(where: { $0.hasPrefix("remote ") })?.dropFirst(7) else { return nil }
        func value(_ key: String) -> String? { lines.first { $0.hasPrefix(key + " ") }.map { String($0.dropFirst(key.count + 1)) } }
        return RemoteRecord(remote: String(remote), endpoint: value("endpoint"), region: value("region"),
                            allowInsecureHTTP: lines.contains("allow-insecure-http"))
    }

    /// Writes the record of the vault at `local` (a temporary file of mode 0600, then renamed over the old one).
    public func write(vault local: String, stateDirectory directory: String = RollbackProtection.defaultStateDirectory) throws {
        guard let path = Self.path(vault: local, stateDirectory: directory) else { throw VaultError.vaultNotFound(path: local) }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw VaultError.io(operation: "creating", path: temporary, errno: errno) }
        var text = "vault-remote 1\nremote \(remote)\n"
        if let endpoint { text += "endpoint \(endpoint)\n" }
        if let region { text += "region \(region)\n" }
        if allowInsecureHTTP { text += "allow-insecure-http\n" }
        let failure = Array(text.utf8).withUnsafeBytes { Posix.writeAll(fd, $0) }
        let synced = failure == 0 && fsync(fd) == 0
        close(fd)
        guard synced, rename(temporary, path) == 0 else {
            let error = failure != 0 ? failure : errno
            unlink(temporary)
            throw VaultError.io(operation: "writing", path: path, errno: error)
        }
    }
}

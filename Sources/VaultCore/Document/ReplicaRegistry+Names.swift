#if canImport(Glibc)
import Glibc
#endif

extension ReplicaRegistry {
    /// The name a new replica of this user takes (``ReplicaName``): `user@host`, the login name of the effective user
    /// and the host name (either missing: `uid N`, `localhost`), cut to 64 bytes.
    public static let defaultName: String = {
        var user = "uid \(geteuid())"
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name, name.pointee != 0 {
            user = String(cString: name)
        }
        var host = [CChar](repeating: 0, count: 256)
        let hostName = gethostname(&host, host.count - 1) == 0 ? String(cString: host) : ""
        var name = user + "@" + (hostName.isEmpty ? "localhost" : hostName)
        name.unicodeScalars.removeAll { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
        while name.utf8.count > ReplicaName.maximumByteCount { name.removeLast() }
        return name
    }()

    /// The name this user's replica of `vaultID` goes by: the one `vault replica name` set (`<vault id>.name` in the
    /// state directory), else ``defaultName``.
    public static func name(for vaultID: DocumentID, stateDirectory: String?) -> String {
        guard let directory = stateDirectory,
              let bytes = try? VaultFile.read(path: directory + "/" + vaultID.description + ".name"),
              let name = String(validating: bytes, as: UTF8.self), ReplicaName.isValid(name) else { return defaultName }
        return name
    }

    /// Sets the name this user's replica of `vaultID` goes by (written whole to a temporary file, mode 0600, then
    /// renamed over `<vault id>.name`); the vault takes it at its next write.
    ///
    /// - Throws: ``VaultError/invalidEntryName(reason:)`` for a name that is not 1 to 64 bytes without control
    ///   characters; ``VaultError/io(operation:path:errno:)``.
    public static func setName(_ name: String, for vaultID: DocumentID, stateDirectory: String) throws {
        guard ReplicaName.isValid(name) else {
            throw VaultError.invalidEntryName(reason: "a replica's name is 1 to \(ReplicaName.maximumByteCount) bytes of UTF-8 without control characters")
        }
        try VaultFile.createDirectory(for: stateDirectory + "/x")
        let path = stateDirectory + "/" + vaultID.description + ".name"
        let temporary = stateDirectory + "/." + vaultID.description + "." + ReplicaID.random().description + ".tmp"
        let fd = Posix.retryingEINTR { Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot create", path: temporary, errno: errno) }
        let code = Array(name.utf8).withUnsafeBytes { Posix.writeAll(fd, $0) }
        let synced = code == 0 && fsync(fd) == 0
        let failure = code != 0 ? code : errno
        Glibc.close(fd)
        guard synced, rename(temporary, path) == 0 else {
            let failed = synced ? errno : failure
            unlink(temporary)
            throw VaultError.io(operation: "cannot write", path: path, errno: failed)
        }
    }
}

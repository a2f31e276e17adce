import CVaultSystem
import Glibc
import VaultCore

/// An in-memory file (`memfd_create`: never on disk) holding a secret, for a child that wants a path
/// (`vault run --file`): sealed against writes, resizing and new seals, its offset at 0, and inherited by
/// children (no close-on-exec), where `/dev/fd/N` opens it.
public enum InMemoryFile {
    /// The descriptor of a new in-memory file named `name` (shown in `/proc/PID/fd`) holding `contents`.
    public static func make(name: String, contents: SecureBytes) throws -> Int32 {
        let fd = contents.withUnsafeBytes { vault_secret_memfd(name, $0.baseAddress, UInt($0.count)) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot create an in-memory file", path: name, errno: errno) }
        return fd
    }
}

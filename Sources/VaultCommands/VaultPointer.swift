import FoundationEssentials
import Glibc
import Synchronization
import VaultCore
import VaultSyncCore
import VaultTerminal

/// This machine's vault when it is no longer at the default path (issue 35 §4): `vault git setup` records here the
/// path of the default vault it moved into a clone, or of the vault a fresh clone holds that it adopted, so that
/// every verb finds it with neither `--vault` nor `VAULT_PATH` (which both come first). One line, the absolute
/// path, in `$XDG_CONFIG_HOME/vault/default-vault` (else `~/.config/vault/`), mode 0600, replaced atomically.
package enum VaultPointer {
    static var path: String { IdentityCommand.directory + "/default-vault" }

    /// The record as last read or written by this process, by the record's path (a verb resolves its vault's
    /// path several times).
    private static let cache = Mutex<(file: String, value: String?)?>(nil)

    /// The recorded vault path, or nil: no record, or one that is not a private regular file of this user's (it
    /// would choose which vault a passphrase is typed for; said on stderr, and the default path is used).
    static func read() -> String? {
        let file = path
        if let cached = cache.withLock({ $0 }), cached.file == file { return cached.value }
        let value = readFile(file)
        cache.withLock { $0 = (file, value) }
        return value
    }

    private static func readFile(_ file: String) -> String? {
        let fd = Posix.retryingEINTR { open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else {
            if errno != ENOENT && errno != ENOTDIR { warn(file, "cannot be read (\(String(cString: strerror(errno))))") }
            return nil
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        guard Posix.distrust(ofFile: info, accepting: .regular) == nil else {
            warn(file, "it is not a private file of yours (run: chmod 600 '\(TerminalText.escaped(file))')")
            return nil
        }
        guard let bytes = try? Posix.readAll(fd, limit: 4097, path: file), bytes.count <= 4096, !bytes.contains(0),
              let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first,
              line.hasPrefix("/")
        else {
            warn(file, "it does not hold one absolute path")
            return nil
        }
        return String(line)
    }

    private static func warn(_ file: String, _ reason: String) {
        writeToStderr("vault: warning: ignoring '\(TerminalText.escaped(file))' (where 'vault git setup' records this machine's vault): \(reason)\n")
    }

    /// Records `vault` (absolute) as this machine's vault.
    static func write(_ vault: String) throws {
        try FileManager.default.createDirectory(atPath: IdentityCommand.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try Array((vault + "\n").utf8).withUnsafeBytes { try OutputFile.replace(path, with: $0) }
        cache.withLock { $0 = (path, vault) }
    }

    /// The default vault path, where no option, variable or record names another.
    static var defaultVault: String { SecureKeyValueStore.defaultDirectory + "/default.vault" }
}

extension GitVaultFile {
    /// The vaults of the git work tree that holds `directory` (relative to its top, sorted), with the top: every
    /// `*.vault` file git tracks or would track; of several, those the repository's attributes merge as vaults, when
    /// that leaves some. Nil when `directory` is not in a work tree.
    static func cloneVaults(from directory: String) -> (top: String, vaults: [String])? {
        let probe = Git(directory: directory)
        guard let top = (try? probe.output(["rev-parse", "--show-toplevel"]))?.trimmingCharacters(in: .newlines), top.hasPrefix("/") else { return nil }
        let git = Git(directory: top)
        guard let listed = try? git.run(["ls-files", "-z", "--cached", "--others", "--exclude-standard"]), listed.status == 0 else { return (top, []) }
        let files = Set(listed.output.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.filter { $0.hasSuffix(".vault") })
        var vaults = files.filter { FileManager.default.fileExists(atPath: top + "/" + $0) }.sorted()
        if vaults.count > 1, let attributes = try? git.run(["check-attr", "-z", "merge", "--"] + vaults), attributes.status == 0 {
            // NUL-separated triples: path, attribute, value.
            let fields = attributes.output.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            let merged = stride(from: 0, to: fields.count - 2, by: 3).filter { fields[$0 + 2] == "vault" }.map { fields[$0] }
            if !merged.isEmpty { vaults = merged.sorted() }
        }
        return (top, vaults)
    }

    /// `vaults` as a message lists them.
    static func listed(_ vaults: [String]) -> String { vaults.map { "'\(TerminalText.escaped($0))'" }.joined(separator: ", ") }
}

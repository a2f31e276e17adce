import FoundationEssentials
import Glibc
import VaultCore
import VaultSyncCore
import VaultTerminal

/// `vault git setup --vault PATH` for a vault outside any repository: moved into the clone the command runs in.
enum VaultMove {
    /// Moves `vault` to the top of the git work tree that holds `directory`, under its own file name, by one
    /// rename(2) under the vault's lock (no writer in between; a lock held elsewhere is refused); returns the work
    /// tree's top and the vault's path relative to it.
    ///
    /// - Throws: ``GitRawError`` (of the vault's directory) when `directory` is not in a repository either; ``CLIError`` when the name is taken there, or
    ///   the work tree is on another file system (with the commands that do it by hand), or the vault is in use.
    /// `beforeMoving` runs under the lock, once nothing but the rename itself can refuse the move.
    static func intoRepository(_ vault: String, from directory: String, beforeMoving: () -> Void = {}) throws -> (top: String, relative: String) {
        // Neither the vault's directory nor this one in a repository: said of the vault, with how to get one.
        let vaultDirectory = URL(fileURLWithPath: vault).deletingLastPathComponent().path
        let top = (try? Git(directory: directory).output(["rev-parse", "--show-toplevel"]))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard !top.isEmpty else { throw GitRawError(.notARepository, directory: vaultDirectory) }
        let name = URL(fileURLWithPath: vault).lastPathComponent
        let target = top + "/" + name
        let shownVault = TerminalText.escaped(vault), shownTarget = TerminalText.escaped(target)
        var info = stat()
        guard lstat(vault, &info) == 0 else { throw VaultError.vaultNotFound(path: vault) }
        guard lstat(target, &info) != 0 else {
            throw CLIError.message("cannot move the vault into '\(TerminalText.escaped(top))': '\(shownTarget)' exists", exitCode: Exit.exists)
        }
        let lock = open(vault + ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard lock >= 0 else { throw VaultError.io(operation: "locking", path: vault, errno: errno) }
        defer { close(lock) }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            throw CLIError.message("cannot move '\(shownVault)': it is in use (another vault command holds its lock); try again", exitCode: Exit.busy)
        }
        beforeMoving()
        guard rename(vault, target) == 0 else {
            let code = errno
            guard code == EXDEV else { throw VaultError.io(operation: "moving", path: vault, errno: code) }
            throw CLIError.message(
                "cannot move '\(shownVault)' into '\(TerminalText.escaped(top))': another file system; move it by hand: mv '\(shownVault)' '\(shownTarget)', then run 'vault git setup --vault \(shownTarget)'",
                exitCode: Exit.failure)
        }
        unlink(vault + ".lock")
        // The directory entries: both durable before git sees the file.
        for path in [URL(fileURLWithPath: vault).deletingLastPathComponent().path, top] {
            let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if fd >= 0 {
                fsync(fd)
                close(fd)
            }
        }
        return (top, name)
    }
}

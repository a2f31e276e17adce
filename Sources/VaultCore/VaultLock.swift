#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on `<vault>.lock`, held from creation until ``release()`` or deinit.
///
/// Writers take it across read-modify-write; readers never need it (writes replace the file by rename).
/// The kernel drops the lock when its holder dies, so a killed writer never leaves the vault locked.
final class VaultLock {
    private var fd: Int32

    init(vaultPath path: String, timeoutSeconds: Double) throws {
        let lockPath = path + ".lock"
        let dirfd = try VaultFile.openDirectory(of: path)
        defer { close(dirfd) }
        let name = VaultFile.split(lockPath).name
        var fd = Posix.retryingEINTR {
            openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        }
        if fd < 0 && errno == EACCES {
            // A lock file of ours left without write permission (created under umask 0277, say): flock needs
            // no write access, so open it read-only; its mode is repaired below.
            fd = Posix.retryingEINTR { openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        }
        guard fd >= 0 else {
            let code = errno
            if code == ELOOP {
                throw VaultError.unsafePermissions(
                    path: lockPath, reason: "the lock file is a symbolic link",
                    hint: "remove '\(lockPath)'; vault recreates it")
            }
            if code == EISDIR {
                throw VaultError.unsafePermissions(
                    path: lockPath, reason: "the lock file is a directory",
                    hint: "remove '\(lockPath)' (it is not vault's); vault recreates it")
            }
            throw VaultError.io(operation: "cannot open lock file", path: lockPath, errno: code)
        }
        self.fd = fd
        do {
            try VaultFile.checkOwnFile(fd, path: lockPath, what: "lock file")
            try Self.repairMode(fd, path: lockPath)
        } catch {
            close(fd)
            throw error
        }
        let deadline = Posix.monotonicSeconds() + timeoutSeconds
        var pause: UInt32 = 2_000
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            guard code == EWOULDBLOCK else {
                close(fd)
                throw VaultError.io(operation: "cannot lock", path: lockPath, errno: code)
            }
            if Posix.monotonicSeconds() >= deadline {
                close(fd)
                throw VaultError.busy(path: path, timeoutSeconds: timeoutSeconds)
            }
            usleep(pause)
            pause = min(pause * 2, 50_000)
        }
    }

    /// Sets the lock file's mode to exactly 0600: `open`'s mode is masked by the umask (0277 gives 0400), and
    /// a lock file of ours with a wrong owner mode is repaired. Called after ``VaultFile/checkOwnFile``, so
    /// the file is a regular file of ours with no permission for group or others (those stay refused).
    private static func repairMode(_ fd: Int32, path: String) throws {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw VaultError.io(operation: "cannot stat", path: path, errno: errno) }
        if info.st_mode & 0o7777 != 0o600 && fchmod(fd, 0o600) != 0 {
            throw VaultError.io(operation: "cannot set permissions of", path: path, errno: errno)
        }
    }

    func release() {
        if fd >= 0 {
            close(fd)  // closing the only descriptor releases the flock
            fd = -1
        }
    }

    deinit { release() }
}

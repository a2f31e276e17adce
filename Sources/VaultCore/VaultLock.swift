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
        let fd = Posix.retryingEINTR {
            openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        }
        guard fd >= 0 else {
            let code = errno
            if code == ELOOP {
                throw VaultError.unsafePermissions(
                    path: lockPath, reason: "the lock file is a symbolic link",
                    hint: "remove '\(lockPath)'; vault recreates it")
            }
            throw VaultError.io(operation: "cannot open lock file", path: lockPath, errno: code)
        }
        self.fd = fd
        do {
            try VaultFile.checkOwnFile(fd, path: lockPath, what: "lock file")
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

    func release() {
        if fd >= 0 {
            close(fd)  // closing the only descriptor releases the flock
            fd = -1
        }
    }

    deinit { release() }
}

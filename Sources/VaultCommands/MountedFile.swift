import FoundationEssentials
import Synchronization
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// `vault run --mount PATH`: a file that exists only while the command runs and is never on disk. PATH is a FIFO
/// (mode 0600, made here; an existing PATH is refused); every open of it for reading gets the whole contents, as
/// many times as the command (or the tools it starts) reads it; at the command's exit the FIFO is removed.
///
/// A FIFO cannot tell a reader that has its copy from the next one: after a copy is drained and the FIFO closed,
/// the server pauses (``pauseBetweenReaders``) so that the reader sees its end of file before the next open; a reader
/// slower than that to read its end of file would get a second copy.
final class MountedFile: Sendable {
    let path: String
    private let contents: SecureBytes
    private let stopped = Mutex(false)
    /// The FIFO made here (device and inode): whatever else is at PATH later is neither written nor removed.
    private let identity: (dev_t, ino_t)

    /// Makes the FIFO at `path` and starts serving `contents` on it.
    ///
    /// - Throws: a CLI error naming `path` when it exists (exit 7) or cannot be made (exit 1).
    init(path: String, contents: SecureBytes) throws {
        self.path = path
        self.contents = contents
        var made = mkfifo(path, 0o600) == 0
        if !made, errno == EEXIST, Self.replaceStale(path) {
            writeToStderr("vault: note: --mount: '\(path)' was a FIFO of yours that nothing served (left by a vault run that was killed): replaced\n")
            made = mkfifo(path, 0o600) == 0
        }
        guard made else {
            let code = errno
            if code == EEXIST {
                throw CLIError.message("--mount: '\(path)' exists; it is made (as a FIFO) and removed by vault run", exitCode: Exit.exists)
            }
            throw VaultError.io(operation: "cannot make the FIFO", path: path, errno: code)
        }
        var fifo = stat()
        guard lstat(path, &fifo) == 0, (fifo.st_mode & S_IFMT) == S_IFIFO else {
            throw VaultError.io(operation: "cannot make the FIFO", path: path, errno: errno == 0 ? EEXIST : errno)
        }
        identity = (fifo.st_dev, fifo.st_ino)
        // mkfifo's mode went through the umask: 0600 exactly (opened without blocking and without following a link).
        let own = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        if own >= 0 {
            if isOurs(own) { fchmod(own, 0o600) }
            close(own)
        }
        // The server thread takes no signal: the ones vault passes on to the command are waited for on this thread.
        var all = sigset_t(), previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_BLOCK, &all, &previous)
        startDetachedThread { [self] in serve() }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }

    private var stopping: Bool { stopped.withLock { $0 } }

    /// One reader at a time: an open for writing waits for the next reader, then the whole contents, then the end.
    private func serve() {
        while !stopping {
            // Never through a link, and only into the FIFO made here: a file put in its place (a tool that rewrote
            // .env, another user in a shared directory) ends the serving, and gets nothing.
            let fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            if stopping || !isOurs(fd) {
                close(fd)
                return
            }
            // A reader that goes away early ends its copy (EPIPE; SIGPIPE is ignored while the command runs).
            if contents.withUnsafeBytes({ Posix.writeAll(fd, $0) }) == 0 {
                // Until the reader has taken every byte (FIONREAD counts what is still in the pipe)...
                var left: Int32 = 0
                while !stopping, ioctl(fd, UInt(FIONREAD), &left) == 0, left > 0 { usleep(2_000) }
            }
            close(fd)
            // ...then the end of the file, which it sees only while no writer has the FIFO open: an open for the next
            // reader right away would find this one still there and give it a second copy. A new reader meanwhile
            // waits in its open() until the next round.
            usleep(Self.pauseBetweenReaders)
        }
    }

    /// Removes the FIFO at `path` when it is stale: a FIFO (not a link) of this user's that no writer serves (a
    /// `vault run --mount` killed by SIGKILL left it; its readers wait forever). A live server waits in its open for
    /// a reader, or between two readers for ``pauseBetweenReaders``: opened here for reading, it writes within
    /// ``staleAfterMilliseconds``, and its copy is read to its end and dropped (the FIFO is then not stale). Readers
    /// waiting on a stale FIFO are given its end of file. True when it was removed.
    static func replaceStale(_ path: String) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFIFO, status.st_uid == geteuid() else { return false }
        let reader = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard reader >= 0 else { return false }
        defer { close(reader) }
        var opened = stat()
        guard fstat(reader, &opened) == 0, opened.st_dev == status.st_dev, opened.st_ino == status.st_ino else { return false }
        var descriptor = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
        if Posix.retryingEINTR({ poll(&descriptor, 1, staleAfterMilliseconds) }) != 0 {
            // A writer came (or one is there): drain its copy to its end, into memory that is wiped.
            _ = fcntl(reader, F_SETFL, 0)
            let sink = SecretBuffer()
            while case .success(let count) = sink.append(upTo: 65_536, { buffer in
                Posix.valueOrErrno { read(reader, buffer.baseAddress, buffer.count) }
            }), count > 0 {
                sink.wipe()
            }
            sink.wipe()
            return false
        }
        // Readers blocked in their open get an end of file now, instead of waiting for a writer that never comes.
        let writer = open(path, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        if writer >= 0 { close(writer) }
        var now = stat()
        guard lstat(path, &now) == 0, now.st_dev == status.st_dev, now.st_ino == status.st_ino else { return false }
        return unlink(path) == 0
    }

    /// How long (ms) a FIFO opened for reading waits for a writer before it counts as stale (``replaceStale(_:)``).
    static let staleAfterMilliseconds: Int32 = 300

    /// How long (µs) the reader that got a copy has to see its end of file before the FIFO is opened for the next.
    static let pauseBetweenReaders: UInt32 = 100_000

    /// Whether `fd` is the FIFO made here.
    private func isOurs(_ fd: Int32) -> Bool {
        var status = stat()
        return fstat(fd, &status) == 0 && isOurs(status)
    }

    /// Whether `status` describes the FIFO made here.
    private func isOurs(_ status: stat) -> Bool {
        (status.st_mode & S_IFMT) == S_IFIFO && status.st_dev == identity.0 && status.st_ino == identity.1
    }

    /// Stops serving and removes the FIFO. A reader that opened it already gets its copy; a writer blocked on a
    /// reader that never reads is left to end with the process.
    func remove() {
        stopped.withLock { $0 = true }
        // The server may wait in open() for a reader: be that reader, without blocking.
        let unblock = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        // Removed only if it is still the FIFO made here.
        var status = stat()
        if lstat(path, &status) == 0, isOurs(status) {
            unlink(path)
        }
        if unblock >= 0 { close(unblock) }
    }

    /// `NAME=...` lines, as dotenv loaders read them: in single quotes (taken literally by python-dotenv and
    /// Node's dotenv) when the value has no `'`, `\`, newline or carriage return; else in double quotes with `\`,
    /// `"`, newline and carriage return escaped (`\\`, `\"`, `\n`, `\r`). A loader that expands `${NAME}` (python-dotenv
    /// does, inside any quotes) expands it in a value too: the help says so.
    static func dotenv(_ variables: [(name: String, value: SecureBytes)]) -> SecureBytes {
        func literal(_ value: SecureBytes) -> Bool {
            value.withUnsafeBytes { !$0.contains { [0x27, 0x5C, 0x0A, 0x0D].contains($0) } }
        }
        func escapedCount(_ value: SecureBytes) -> Int {
            value.withUnsafeBytes { bytes in bytes.reduce(0) { $0 + ([0x5C, 0x22, 0x0A, 0x0D].contains($1) ? 2 : 1) } }
        }
        let total = variables.reduce(0) { $0 + $1.name.utf8.count + 4 + (literal($1.value) ? $1.value.count : escapedCount($1.value)) }
        return SecureBytes(capacity: total) { out in
            for (name, value) in variables {
                out.append(name)
                out.append(UInt8(ascii: "="))
                let single = literal(value)
                let quote = single ? UInt8(ascii: "'") : UInt8(ascii: "\"")
                out.append(quote)
                value.withUnsafeBytes { bytes in
                    for byte in bytes {
                        switch byte {
                        case _ where single: out.append(byte)
                        case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
                        case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
                        case 0x5C, 0x22: out.append(0x5C); out.append(byte)
                        default: out.append(byte)
                        }
                    }
                }
                out.append(quote)
                out.append(0x0A)
            }
        }
    }
}

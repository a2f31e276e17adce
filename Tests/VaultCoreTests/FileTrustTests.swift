import Foundation
import VaultTestSupport
import Testing

@testable import VaultCore

#if canImport(Glibc)
import Glibc
#endif

/// The one trust rule for the files that hold or feed our secrets (`Posix.distrust(ofFile:accepting:allowRoot:)`),
/// on real files: each refusal, and what each kind of file is allowed. Its callers' words are tested with them
/// (VaultFileTests, SecretInputFileTests, AgentSocketTests).
@Suite("File trust rule")
struct FileTrustTests {
    let directory = TemporaryDirectory()

    func lstatOf(_ path: String) -> stat {
        var info = stat()
        #expect(lstat(path, &info) == 0, "lstat \(path): errno \(errno)")
        return info
    }

    func regularFile(mode: mode_t) -> String {
        let path = directory.file("file-\(String(mode, radix: 8))")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
        #expect(chmod(path, mode) == 0)
        return path
    }

    @Test("a regular file of ours with no permission for group or others is trusted", arguments: [0o600, 0o400, 0o700, 0o000] as [mode_t])
    func privateRegularFile(mode: mode_t) {
        #expect(Posix.distrust(ofFile: lstatOf(regularFile(mode: mode)), accepting: .regular) == nil)
    }

    @Test("a regular file with any permission for group or others is refused, with its mode", arguments: [
        0o644, 0o640, 0o604, 0o660, 0o606, 0o601, 0o610, 0o4755,
    ] as [mode_t])
    func looseRegularFile(mode: mode_t) {
        let info = lstatOf(regularFile(mode: mode))
        #expect(Posix.distrust(ofFile: info, accepting: .regular) == .accessibleByOthers(mode: mode))
        #expect(Posix.distrust(ofFile: info, accepting: [.regular, .pipe], allowRoot: true) == .accessibleByOthers(mode: mode))
    }

    @Test("a file of another user is refused, root's only where the caller allows root", .enabled(if: geteuid() == 0, "needs root to chown"))
    func owner() {
        let path = regularFile(mode: 0o600)
        #expect(chown(path, 12345, 12345) == 0)
        #expect(Posix.distrust(ofFile: lstatOf(path), accepting: .regular) == .ownedBy(12345))
        #expect(Posix.distrust(ofFile: lstatOf(path), accepting: .regular, allowRoot: true) == .ownedBy(12345))
        // Ownership is checked before the mode: a foreign file says whose it is.
        #expect(chmod(path, 0o644) == 0)
        #expect(Posix.distrust(ofFile: lstatOf(path), accepting: .regular) == .ownedBy(12345))
        // Running as root, root's file is ours either way (the allowRoot case for a user is the one above).
        #expect(chown(path, 0, 0) == 0)
        #expect(chmod(path, 0o600) == 0)
        #expect(Posix.distrust(ofFile: lstatOf(path), accepting: .regular, allowRoot: true) == nil)
    }

    @Test("a symbolic link is refused, whatever it points to")
    func symbolicLink() {
        let target = regularFile(mode: 0o600)
        let link = directory.file("link")
        #expect(symlink(target, link) == 0)
        #expect(Posix.distrust(ofFile: lstatOf(link), accepting: [.regular, .pipe, .socket], allowRoot: true) == .symbolicLink)
    }

    @Test("what is not a regular file is refused unless the caller accepts its kind")
    func notARegularFile() {
        let sub = directory.file("sub")
        #expect(mkdir(sub, 0o700) == 0)
        let info = lstatOf(sub)
        #expect(Posix.distrust(ofFile: info, accepting: [.regular, .pipe, .socket]) == .notAccepted(mode: info.st_mode))
        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let fifoInfo = lstatOf(fifo)
        #expect(Posix.distrust(ofFile: fifoInfo, accepting: .regular) == .notAccepted(mode: fifoInfo.st_mode))
        #expect(Posix.distrust(ofFile: fifoInfo, accepting: [.regular, .pipe]) == nil)
        var device = stat()
        #expect(stat("/dev/null", &device) == 0)
        #expect(Posix.distrust(ofFile: device, accepting: [.regular, .pipe], allowRoot: true) == .notAccepted(mode: device.st_mode))
    }

    @Test("a pipe may be read by others but not written by them", arguments: [0o644, 0o604, 0o640, 0o600] as [mode_t])
    func readablePipe(mode: mode_t) {
        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0 && chmod(fifo, mode) == 0)
        #expect(Posix.distrust(ofFile: lstatOf(fifo), accepting: .pipe) == nil)
    }

    @Test("a pipe writable by group or others is refused, with its mode", arguments: [0o620, 0o602, 0o666] as [mode_t])
    func writablePipe(mode: mode_t) {
        let fifo = directory.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0 && chmod(fifo, mode) == 0)
        #expect(Posix.distrust(ofFile: lstatOf(fifo), accepting: .pipe) == .writableByOthers(mode: mode))
    }

    @Test("a socket of ours is trusted whatever its mode; it must be accepted by the caller")
    func socketFile() throws {
        let path = directory.file("s")
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        #expect(chmod(path, 0o777) == 0)
        let info = lstatOf(path)
        #expect(Posix.distrust(ofFile: info, accepting: .socket) == nil)
        #expect(Posix.distrust(ofFile: info, accepting: .regular) == .notAccepted(mode: info.st_mode))
    }

    @Test("each kind of file has its name in messages")
    func kinds() throws {
        #expect(Posix.kind(of: S_IFREG | 0o600) == "a regular file")
        #expect(Posix.kind(of: S_IFDIR | 0o700) == "a directory")
        #expect(Posix.kind(of: S_IFLNK | 0o777) == "a symbolic link")
        #expect(Posix.kind(of: S_IFIFO) == "a FIFO")
        #expect(Posix.kind(of: S_IFCHR) == "a character device")
        #expect(Posix.kind(of: S_IFBLK) == "a block device")
        #expect(Posix.kind(of: S_IFSOCK) == "a socket")
    }
}

import Foundation
import Testing
@testable import VaultCore

@Suite struct PosixTests {
    /// A regular file, a FIFO (what a shell's `<(…)` gives) and the bounds: read to the end, up to `limit` bytes.
    @Test func readFileReadsFilesAndFIFOsToTheirEndWithinTheLimit() throws {
        let temporary = TemporaryDirectory()
        let directory = temporary.path
        let file = directory + "/plain"
        FileManager.default.createFile(atPath: file, contents: Data("A=k1\n".utf8))
        #expect(try Posix.readFile(file, limit: 5) == Array("A=k1\n".utf8))
        #expect(throws: VaultError.io(operation: "cannot read", path: file, errno: EFBIG)) { try Posix.readFile(file, limit: 4) }

        let fifo = directory + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let payload = [UInt8](repeating: 0x41, count: 200_000)  // more than one pipe buffer
        let writer = Thread {
            // O_RDWR: never blocks in open (a reader that failed before opening would leave this thread waiting).
            let fd = open(fifo, O_RDWR)
            _ = payload.withUnsafeBytes { Posix.writeAll(fd, $0) }
            close(fd)
        }
        writer.start()
        #expect(try Posix.readFile(fifo, limit: 1 << 20) == payload)

        #expect(throws: VaultError.io(operation: "cannot read", path: directory, errno: EISDIR)) { try Posix.readFile(directory, limit: 10) }
        #expect(throws: VaultError.io(operation: "cannot read", path: directory + "/none", errno: ENOENT)) {
            try Posix.readFile(directory + "/none", limit: 10)
        }
    }

    /// An operation that says "cannot" is not followed by "failed"; a path-less one has no empty quotes.
    @Test func anIOErrorSaysItsFailureOnce() {
        #expect(VaultError.io(operation: "cannot read", path: "/x", errno: ENOENT).description == "cannot read '/x': No such file or directory")
        #expect(VaultError.io(operation: "opening", path: "/x", errno: EACCES).description == "opening '/x' failed: Permission denied")
        #expect(VaultError.io(operation: "cannot read the ssh-agent socket", path: "", errno: EPIPE).description
            == "cannot read the ssh-agent socket: Broken pipe")
    }
}

import Foundation
import Testing

/// `vault inject -o OUT` where OUT is not a regular file (issue 24 §1): a FIFO or a character device is written
/// through and stays what it was; a symbolic link, a directory or a socket is refused and left alone.
@Suite(.processTimeLimit) struct InjectTargetTests {
    let box: Sandbox
    let template: String

    init() throws {
        box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "k"], stdin: Data("s3cret".utf8)).status == 0)
        template = box.directory + "/t.tpl"
        try box.write("token={{ vault \"k\" }}\n", to: template)
    }

    func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
    }

    @Test func aFIFOIsWrittenThroughAndStaysAFIFO() throws {
        let fifo = box.directory + "/out.fifo", copy = box.directory + "/copy"
        #expect(mkfifo(fifo, 0o600) == 0)
        // The reader, then vault as the writer, in one shell: the FIFO carries the output to the copy.
        let script = "cat \"$1\" > \"$2\" & \"$VAULT\" inject -i \"$3\" -o \"$1\" --passphrase-file \"$4\"; status=$?; wait; exit $status"
        let result = try CLI.exec(
            "/bin/sh", ["-c", script, "sh", fifo, copy, template, box.passphraseFile],
            environment: box.environment.merging(["VAULT": CLI.vault]) { $1 })
        #expect(result.status == 0, "\(result.stderr)")
        #expect(mode(fifo) == S_IFIFO)
        #expect(try String(contentsOfFile: copy, encoding: .utf8) == "token=s3cret\n")
    }

    @Test func aCharacterDeviceIsWrittenThrough() throws {
        guard geteuid() == 0 else { return }  // mknod needs root; as root, /dev/null was what got replaced
        let device = box.directory + "/null"
        #expect(mknod(device, S_IFCHR | 0o600, dev_t((1 << 8) | 3)) == 0)  // major 1, minor 3: what /dev/null is
        let result = try box.vault(["inject", "-i", template, "-o", device])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(mode(device) == S_IFCHR)
    }

    @Test func aSymbolicLinkADirectoryAndASocketAreRefusedAndLeftAlone() throws {
        let target = box.directory + "/target", link = box.directory + "/link"
        try box.write("keep\n", to: target)
        #expect(symlink(target, link) == 0)
        let linked = try box.vault(["inject", "-i", template, "-o", link])
        #expect(linked.status == 1)
        #expect(linked.stderr == """
            vault: cannot write '\(link)': it is a symbolic link, not a regular file
            hint: give the path the link points to, or leave out -o to write to stdout

            """)
        #expect(mode(link) == S_IFLNK)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "keep\n")

        let directory = try box.vault(["inject", "-i", template, "-o", box.directory])
        #expect(directory.status == 1)
        #expect(directory.stderr.hasPrefix("vault: cannot write '\(box.directory)': it is a directory, not a regular file\n"))

        let socketPath = box.directory + "/s.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in raw.copyBytes(from: Array(socketPath.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        let socketResult = try box.vault(["inject", "-i", template, "-o", socketPath])
        #expect(socketResult.status == 1)
        #expect(mode(socketPath) == S_IFSOCK)
        #expect(try FileManager.default.contentsOfDirectory(atPath: box.directory).filter { $0.hasSuffix(".tmp") } == [])
    }
}

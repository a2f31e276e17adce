import Foundation
import VaultTestSupport
import Testing
import VaultCore
@testable import VaultTerminal

#if canImport(Glibc)
import Glibc
#endif

/// Passphrase and identity files (`--passphrase-file`, `--identity`, `VAULT_IDENTITY`) under the files' trust rule,
/// each refusal in their own words (the CLI tests check the exit code, 4, on a few of them).
@Suite("Secret input files")
final class SecretInputFileTests {
    let temporary = TemporaryDirectory(prefix: "vault-terminal-tests")
    var directory: String { temporary.path }

    func file(_ name: String, _ contents: String = "correct horse\nsecond line\n", mode: mode_t = 0o600) -> String {
        let path = directory + "/" + name
        #expect(FileManager.default.createFile(atPath: path, contents: Data(contents.utf8)))
        #expect(chmod(path, mode) == 0)
        return path
    }

    func readError(_ body: () throws -> SecureBytes) -> VaultError? {
        do {
            _ = try body()
            return nil
        } catch let error as VaultError {
            return error
        } catch {
            Issue.record("not a VaultError: \(error)")
            return nil
        }
    }

    @Test("a private passphrase file gives its first line; an identity file all of it")
    func privateFiles() throws {
        let path = file("pass")
        #expect(try SecretInput.readFirstLine(ofFile: path).stringValue == "correct horse")
        #expect(try SecretInput.readIdentityFile(path).stringValue == "correct horse\nsecond line\n")
    }

    @Test("a passphrase or identity file with permissions for group or others is refused", arguments: [0o644, 0o640, 0o604, 0o660] as [mode_t])
    func looseMode(mode: mode_t) {
        let path = file("loose", mode: mode)
        let octal = "0" + String(mode, radix: 8)
        #expect(readError { try SecretInput.readFirstLine(ofFile: path) } == .unsafePermissions(
            path: path, reason: "the passphrase file is accessible by group or others (mode \(octal))", hint: "run: chmod 600 '\(path)'"))
        #expect(readError { try SecretInput.readIdentityFile(path) } == .unsafePermissions(
            path: path, reason: "the identity file is accessible by group or others (mode \(octal))", hint: "run: chmod 600 '\(path)'"))
    }

    @Test("a passphrase or identity file of another user is refused", .enabled(if: geteuid() == 0, "needs root to chown"))
    func foreignOwner() {
        let path = file("foreign")
        #expect(chown(path, 65534, 65534) == 0)
        #expect(readError { try SecretInput.readFirstLine(ofFile: path) } == .unsafePermissions(
            path: path, reason: "the passphrase file is owned by another user (uid 65534)", hint: "use a passphrase file of your own"))
        #expect(readError { try SecretInput.readIdentityFile(path) } == .unsafePermissions(
            path: path, reason: "the identity file is owned by another user (uid 65534)", hint: "use an identity file of your own"))
    }

    @Test("a pipe that group or others may write is refused; one they may only read is accepted")
    func pipes() throws {
        let fifo = directory + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0 && chmod(fifo, 0o666) == 0)
        #expect(readError { try SecretInput.readFirstLine(ofFile: fifo) } == .unsafePermissions(
            path: fifo, reason: "the passphrase pipe is writable by group or others (mode 0666)", hint: "run: chmod go-w '\(fifo)'"))
        #expect(chmod(fifo, 0o644) == 0)
        // The writer keeps its end open until the line is read: the reader's second (blocking) open needs a writer.
        let read = DispatchSemaphore(value: 0)
        let writer = Thread {
            let fd = open(fifo, O_WRONLY)
            _ = "from the pipe\n".withCString { write(fd, $0, 14) }
            read.wait()
            close(fd)
        }
        writer.start()
        defer { read.signal() }
        #expect(try SecretInput.readFirstLine(ofFile: fifo).stringValue == "from the pipe")
    }

    @Test("a symbolic link is followed (bash's /dev/fd/N is one) and what it leads to is checked")
    func symbolicLinks() throws {
        let good = file("good")
        let goodLink = directory + "/good-link"
        #expect(symlink(good, goodLink) == 0)
        #expect(try SecretInput.readFirstLine(ofFile: goodLink).stringValue == "correct horse")
        let loose = file("loose", mode: 0o644)
        let looseLink = directory + "/loose-link"
        #expect(symlink(loose, looseLink) == 0)
        #expect(readError { try SecretInput.readFirstLine(ofFile: looseLink) } == .unsafePermissions(
            path: looseLink, reason: "the passphrase file is accessible by group or others (mode 0644)",
            hint: "run: chmod 600 '\(looseLink)'"))
    }

    @Test("what is neither a regular file nor a pipe is refused as unsafe, saying what it is")
    func notAFile() {
        let sub = directory + "/sub"
        #expect(mkdir(sub, 0o700) == 0)
        let hint = "give the path of a regular file of yours (chmod 600 it) or of a pipe"
        #expect(readError { try SecretInput.readFirstLine(ofFile: sub) } == .unsafePermissions(
            path: sub, reason: "the passphrase file is a directory, not a regular file or a pipe", hint: hint))
        #expect(readError { try SecretInput.readIdentityFile(sub) } == .unsafePermissions(
            path: sub, reason: "the identity file is a directory, not a regular file or a pipe", hint: hint))
        #expect(readError { try SecretInput.readFirstLine(ofFile: "/dev/null") } == .unsafePermissions(
            path: "/dev/null", reason: "the passphrase file is a character device, not a regular file or a pipe", hint: hint))
    }
}

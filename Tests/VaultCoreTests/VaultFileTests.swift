import Foundation
import VaultTestSupport
import Testing

@testable import VaultCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Permissions, symlinks, atomic replacement and the lock.
@Suite("Vault files")
struct VaultFileTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("test.vault") }
    var lockPath: String { path + ".lock" }

    // MARK: Modes

    @Test("new vault and lock files are 0600 and new directories 0700 under umask 000")
    func modesUnderPermissiveUmask() throws {
        let previous = umask(0)
        defer { umask(previous) }
        let nested = directory.file("a/b/test.vault")
        let store = testStore(nested)
        try store.open(with: testPassphrase)
        #expect(permissions(directory.file("a")) == 0o700)
        #expect(permissions(directory.file("a/b")) == 0o700)
        #expect(permissions(nested) == 0o600)
        #expect(permissions(nested + ".lock") == 0o600)
        try store.put("v", forKey: "k")  // a replacement keeps the mode
        #expect(permissions(nested) == 0o600)
        try store.changeEncryptionKey(with: otherPassphrase)
        #expect(permissions(nested) == 0o600)
    }

    @Test("a vault readable or writable by group or others is refused with a chmod hint", arguments: [
        0o644, 0o640, 0o604, 0o660, 0o606, 0o601, 0o610,
    ] as [mode_t])
    func looseVaultMode(mode: mode_t) throws {
        try makeVault(path)
        #expect(chmod(path, mode) == 0)
        let error = openError(path)
        #expect(
            error
                == .unsafePermissions(
                    path: path, reason: "the vault is accessible by group or others (mode 0\(String(mode, radix: 8)))",
                    hint: "run: chmod 600 '\(path)'"))
    }

    @Test("modes without group or other bits are accepted", arguments: [0o600, 0o400, 0o700] as [mode_t])
    func privateVaultMode(mode: mode_t) throws {
        try makeVault(path)
        #expect(chmod(path, mode) == 0)
        #expect(openError(path) == nil)
    }

    @Test("a lock file accessible to others is refused when writing")
    func looseLockMode() throws {
        try makeVault(path)
        let store = testStore(path)
        try store.open(with: testPassphrase)
        #expect(chmod(lockPath, 0o644) == 0)
        #expect(throws: VaultError.unsafePermissions(
            path: lockPath, reason: "the lock file is accessible by group or others (mode 0644)",
            hint: "run: chmod 600 '\(lockPath)'")
        ) {
            try store.put("v", forKey: "k")
        }
    }

    @Test("a directory writable by group or others is refused", arguments: [0o770, 0o730, 0o702, 0o777, 0o1777] as [mode_t])
    func looseDirectory(mode: mode_t) throws {
        try makeVault(path)
        #expect(chmod(directory.path, mode) == 0)
        defer { chmod(directory.path, 0o700) }
        let expected = VaultError.unsafePermissions(
            path: directory.path,
            reason: "the vault's directory is writable by group or others (mode 0\(String(mode, radix: 8)))",
            hint: "run: chmod go-w '\(directory.path)'  (or keep the vault in a private directory)")
        #expect(openError(path) == expected)
        // Nor is a vault created there.
        let other = directory.file("new.vault")
        #expect(throws: expected) { try testStore(other).open(with: testPassphrase) }
        #expect(!FileManager.default.fileExists(atPath: other))
    }

    @Test("a directory readable by others is accepted (only write access is refused)")
    func readableDirectory() throws {
        try makeVault(path)
        #expect(chmod(directory.path, 0o755) == 0)
        #expect(openError(path) == nil)
    }

    @Test("a vault or directory owned by another user is refused", .enabled(if: geteuid() == 0, "needs root to chown"))
    func foreignOwner() throws {
        try makeVault(path)
        #expect(chown(path, 12345, 12345) == 0)
        #expect(
            openError(path)
                == .unsafePermissions(
                    path: path, reason: "the vault is owned by another user (uid 12345)",
                    hint: "only the vault's owner may use it"))
        #expect(chown(path, geteuid(), getegid()) == 0)
        #expect(openError(path) == nil)

        let sub = directory.file("sub")
        #expect(mkdir(sub, 0o700) == 0)
        #expect(chown(sub, 12345, 12345) == 0)
        #expect(
            openError(sub + "/x.vault")
                == .unsafePermissions(
                    path: sub, reason: "the vault's directory is owned by another user (uid 12345)",
                    hint: "keep the vault in a directory of your own"))
    }

    // MARK: Symlinks and other file types

    @Test("a vault reached through a symlink is refused, and nothing is created through a dangling one")
    func symlinkedVault() throws {
        try makeVault(path, entries: [("k", "v")])
        let link = directory.file("link.vault")
        #expect(symlink(path, link) == 0)
        let expected = VaultError.unsafePermissions(
            path: link, reason: "the vault is a symbolic link (or not a regular file)",
            hint: "pass the real path instead of a link")
        #expect(openError(link) == expected)
        #expect(throws: expected) { try testStore(link).open(with: testPassphrase) }

        let dangling = directory.file("dangling.vault")
        let target = directory.file("target.vault")
        #expect(symlink(target, dangling) == 0)
        #expect(throws: VaultError.unsafePermissions(
            path: dangling, reason: "the vault is a symbolic link (or not a regular file)",
            hint: "pass the real path instead of a link")
        ) {
            try testStore(dangling).open(with: testPassphrase)
        }
        #expect(throws: VaultError.vaultAlreadyExists(path: dangling)) { try testStore(dangling).create(with: testPassphrase) }
        #expect(!FileManager.default.fileExists(atPath: target))
    }

    @Test("a vault whose directory is a symlink is refused")
    func symlinkedDirectory() throws {
        let real = directory.file("real")
        #expect(mkdir(real, 0o700) == 0)
        try makeVault(real + "/test.vault")
        let link = directory.file("link")
        #expect(symlink(real, link) == 0)
        let error = openError(link + "/test.vault")
        guard case .unsafePermissions(link, "the vault's directory is a symbolic link", _)? = error else {
            Issue.record("unexpected: \(String(describing: error))")
            return
        }
        // Named with slashes doubled before the file: still the link, still refused (a trailing slash would make
        // lstat and O_NOFOLLOW resolve it).
        let doubled = openError(link + "//test.vault")
        guard case .unsafePermissions(link, "the vault's directory is a symbolic link", _)? = doubled else {
            Issue.record("unexpected: \(String(describing: doubled))")
            return
        }
    }

    @Test("a symbolic link above the vault's directory is followed (SECURITY.md: only the file, the lock and their directory are checked)")
    func symlinkedAncestor() throws {
        let real = directory.file("real")
        #expect(mkdir(real, 0o700) == 0)
        #expect(mkdir(real + "/sub", 0o700) == 0)
        try makeVault(real + "/sub/test.vault", entries: [("k", "v")])
        let link = directory.file("link")
        #expect(symlink(real, link) == 0)
        let store = testStore(link + "/sub/test.vault")
        try store.open(with: testPassphrase, createIfMissing: false)
        defer { store.close() }
        #expect(try store.getString("k") == "v")
    }

    @Test("a symlinked lock file is refused, and its target is left alone")
    func symlinkedLock() throws {
        try makeVault(path)
        let store = testStore(path)
        try store.open(with: testPassphrase)
        let target = directory.file("elsewhere")
        #expect(unlink(lockPath) == 0)
        #expect(symlink(target, lockPath) == 0)
        let expected = VaultError.unsafePermissions(
            path: lockPath, reason: "the lock file is a symbolic link", hint: "remove '\(lockPath)'; vault recreates it")
        #expect(throws: expected) { try store.put("v", forKey: "k") }
        #expect(!FileManager.default.fileExists(atPath: target))
        // Creating a new vault next to a planted lock link is refused the same way.
        let fresh = directory.file("fresh.vault")
        #expect(symlink(target, fresh + ".lock") == 0)
        #expect(throws: VaultError.unsafePermissions(
            path: fresh + ".lock", reason: "the lock file is a symbolic link",
            hint: "remove '\(fresh).lock'; vault recreates it")
        ) {
            try testStore(fresh).open(with: testPassphrase)
        }
        #expect(!FileManager.default.fileExists(atPath: target))
        #expect(!FileManager.default.fileExists(atPath: fresh))
    }

    @Test("a FIFO or a directory at the vault path is refused without hanging")
    func notARegularFile() throws {
        #expect(mkfifo(path, 0o600) == 0)
        let expected = VaultError.unsafePermissions(
            path: path, reason: "the vault is not a regular file", hint: "move it away and try again")
        #expect(openError(path) == expected)
        #expect(unlink(path) == 0)
        #expect(mkdir(path, 0o700) == 0)
        #expect(openError(path) == expected)
    }

    // MARK: Atomic replacement

    @Test("stray temporary files .NAME.<16 hex>.tmp are removed by the next write, nothing else is")
    func strayTemporaryFiles() throws {
        try makeVault(path)
        let stray = [".test.vault.0123456789abcdef.tmp", ".test.vault.fedcba9876543210.tmp"]
        let unrelated = [
            ".test.vault.short.tmp", ".other.vault.0123456789abcdef.tmp", "test.vault.0123456789abcdef.tmp",
            ".test.vault.0123456789abcdef.tmpx",
            // The right length but not 16 lowercase hexadecimal digits (issue 11, item 11): not ours.
            ".test.vault.my-notes-backup1.tmp", ".test.vault.0123456789ABCDEF.tmp", ".test.vault.0123456789abcdeg.tmp",
        ]
        for name in stray + unrelated { try writeBytes([1, 2, 3], to: directory.file(name)) }
        let store = testStore(path)
        try store.open(with: testPassphrase)
        #expect(directory.listing() == (stray + unrelated + ["test.vault", "test.vault.lock"]).sorted())  // reading removes nothing
        try store.put("v", forKey: "k")
        #expect(directory.listing() == (unrelated + ["test.vault", "test.vault.lock"]).sorted())
    }

    @Test("a write leaves exactly the vault and its lock file, and replaces the file (new inode)")
    func replacement() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        var before = stat()
        #expect(stat(path, &before) == 0)
        try store.put("v", forKey: "k")
        var after = stat()
        #expect(stat(path, &after) == 0)
        #expect(before.st_ino != after.st_ino)
        #expect(directory.listing() == ["test.vault", "test.vault.lock"])
    }

    // MARK: The lock

    @Test("a writer that cannot get the lock within the timeout fails with busy and writes nothing")
    func lockTimeout() throws {
        try makeVault(path, entries: [("k", "v")])  // creates the lock file with mode 0600
        let store = testStore(path, lockTimeoutSeconds: 0.3)
        try store.open(with: testPassphrase)
        let before = try readBytes(path)

        // flock(1) holds the lock itself (-o: its child `cat` does not) until cat sees the end of its input.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        holder.arguments = ["-x", "-o", lockPath, "cat"]
        let input = Pipe()
        holder.standardInput = input
        holder.standardOutput = FileHandle.nullDevice
        try holder.run()
        func release() {
            try? input.fileHandleForWriting.close()
            holder.waitForExit()
        }
        defer { release() }
        try #require(waitUntilLocked(lockPath))

        #expect(throws: VaultError.busy(path: path, timeoutSeconds: 0.3)) { try store.put("w", forKey: "k") }
        #expect(try readBytes(path) == before)
        #expect(throws: VaultError.busy(path: path, timeoutSeconds: 0.3)) { try store.changeEncryptionKey(with: otherPassphrase) }
        #expect(try store.getString("k") == "v")  // reading needs no lock
        #expect(openError(path) == nil)

        release()
        #expect(holder.terminationStatus == 0)
        try store.put("w", forKey: "k")
        #expect(try store.getString("k") == "w")
    }

    /// Waits (up to 10 s) until another process holds an exclusive lock on `lockPath`.
    private func waitUntilLocked(_ lockPath: String) -> Bool {
        for _ in 0..<1000 {
            let fd = open(lockPath, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { return false }
            let locked = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK
            close(fd)  // releases our lock if we got it
            if locked { return true }
            usleep(10_000)
        }
        return false
    }

    @Test("the lock is released after each write: stores take turns")
    func lockReleased() throws {
        try makeVault(path)
        let first = testStore(path, lockTimeoutSeconds: 0.5)
        let second = testStore(path, lockTimeoutSeconds: 0.5)
        try first.open(with: testPassphrase)
        try second.open(with: testPassphrase)
        for index in 0..<5 {
            try first.put("\(index)", forKey: "first")
            try second.put("\(index)", forKey: "second")
        }
        // And nobody holds it now.
        let fd = open(lockPath, O_RDWR | O_CLOEXEC)
        #expect(fd >= 0)
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        close(fd)
    }

    @Test("concurrent writers on several threads lose no update")
    func concurrentWriters() async throws {
        try makeVault(path)
        let path = self.path
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    let store = testStore(path)
                    try store.open(with: testPassphrase)
                    for index in 0..<10 { try store.put("\(writer)", forKey: "w\(writer)-\(index)") }
                }
            }
            try await group.waitForAll()
        }
        let store = testStore(path)
        try store.open(with: testPassphrase)
        #expect(try store.count == 40)
        #expect(store.generation == 41)
    }

    // MARK: Paths

    @Test("split(_:) separates directory and name")
    func split() {
        for (path, directory, name) in [
            ("/a/b/c.vault", "/a/b", "c.vault"), ("/c.vault", "/", "c.vault"), ("c.vault", ".", "c.vault"),
            ("a/c.vault", "a", "c.vault"), ("/a//c.vault", "/a", "c.vault"), ("//c.vault", "/", "c.vault"), ("a///c.vault", "a", "c.vault"),
        ] {
            let parts = VaultFile.split(path)
            #expect(parts.directory == directory)
            #expect(parts.name == name)
        }
    }
}

import Foundation
import Testing

@testable import VaultCore

/// Rollback protection: an older copy of a vault put back in its place is refused.
@Suite("Rollback protection")
struct RollbackTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("vaults/r.vault") }
    var stateDirectory: String { directory.file("state/vault") }

    func options(accept: Bool = false, protected: Bool = true) -> SecureKeyValueStore.Options {
        var options = SecureKeyValueStore.Options.insecureForTesting
        if protected { options.rollbackProtection = RollbackProtection(stateDirectory: stateDirectory) }
        options.acceptRollback = accept
        return options
    }

    func store(accept: Bool = false, protected: Bool = true) -> SecureKeyValueStore {
        SecureKeyValueStore(path: path, options: options(accept: accept, protected: protected))
    }

    /// A vault at generation 4 and a copy of it at generation 2.
    func vaultWithOldCopy() throws -> [UInt8] {
        let s = store()
        try s.open(with: testPassphrase)           // generation 1
        try s.put("one", forKey: "k")               // 2
        let old = try readBytes(path)
        try s.put("two", forKey: "k")               // 3
        try s.put("three", forKey: "k")             // 4
        s.close()
        return old
    }

    @Test func olderCopyIsRefusedAndLeftUntouched() throws {
        let old = try vaultWithOldCopy()
        try writeBytes(old, to: path)
        let s = store()
        #expect(throws: VaultError.rollbackDetected(path: path, seenGeneration: 4, fileGeneration: 2)) {
            try s.open(with: testPassphrase, createIfMissing: false)
        }
        #expect(!s.isOpen)
        #expect(try readBytes(path) == old)
        #expect(VaultError.rollbackDetected(path: path, seenGeneration: 4, fileGeneration: 2).description
            == "refusing to open vault '\(path)': it is older than the last version seen (generation 2, but 4 was seen): an older copy may have been put back")
        // Its hint is the CLI's: ErrorPresentationTests.
    }

    @Test func acceptingARollbackLowersTheRecord() throws {
        let old = try vaultWithOldCopy()
        try writeBytes(old, to: path)
        let accepting = store(accept: true)
        try accepting.open(with: testPassphrase, createIfMissing: false)
        #expect(try accepting.getString("k") == "one")
        accepting.close()
        // Accepted once: it opens without the option now, and later writes are tracked again.
        let plain = store()
        try plain.open(with: testPassphrase, createIfMissing: false)
        try plain.put("four", forKey: "k")  // generation 3
        plain.close()
        try writeBytes(old, to: path)
        #expect(openError(path, options: options()) == .rollbackDetected(path: path, seenGeneration: 3, fileGeneration: 2))
    }

    @Test func withoutProtectionTheLibraryOpensAnOlderCopy() throws {
        let old = try vaultWithOldCopy()
        try writeBytes(old, to: path)
        #expect(openError(path, options: options(protected: false)) == nil)
        #expect(SecureKeyValueStore.Options().rollbackProtection == nil)  // the library's default is off
    }

    @Test func rollbackAcrossAPassphraseChangeIsDetected() throws {
        let s = store()
        try s.open(with: testPassphrase)
        try s.put("v", forKey: "k")
        let old = try readBytes(path)  // generation 2, old passphrase
        try s.changeEncryptionKey(with: otherPassphrase)  // 3
        s.close()
        try writeBytes(old, to: path)
        // The attacker's copy opens with the old passphrase: same data key, same vault id, older generation.
        #expect(openError(path, passphrase: testPassphrase, options: options())
            == .rollbackDetected(path: path, seenGeneration: 3, fileGeneration: 2))
    }

    @Test func aDifferentVaultAtThePathIsNotARollback() throws {
        _ = try vaultWithOldCopy()
        unlink(path)
        let fresh = store()
        try fresh.create(with: testPassphrase)  // a new vault, generation 1: recorded as is
        fresh.close()
        #expect(openError(path, options: options()) == nil)
    }

    @Test func reloadSeesARollback() throws {
        let old = try vaultWithOldCopy()
        let s = store()
        try s.open(with: testPassphrase, createIfMissing: false)
        try writeBytes(old, to: path)
        #expect(throws: VaultError.rollbackDetected(path: path, seenGeneration: 4, fileGeneration: 2)) { try s.reload() }
        #expect(throws: VaultError.rollbackDetected(path: path, seenGeneration: 4, fileGeneration: 2)) {
            try s.put("x", forKey: "y")
        }
        #expect(try readBytes(path) == old)  // a writer does not build on the rolled-back file
    }

    @Test func stateFilesArePrivateAndHoldNoSecret() throws {
        let previous = umask(0)
        defer { umask(previous) }
        _ = try vaultWithOldCopy()
        #expect(permissions(stateDirectory) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: stateDirectory)
        #expect(files.count == 1)
        let record = stateDirectory + "/" + files[0]
        #expect(permissions(record) == 0o600)
        let text = try String(contentsOfFile: record, encoding: .utf8)
        #expect(text.hasPrefix("vault-rollback 1\npath "))
        #expect(text.hasSuffix("generation 4\n"))
        #expect(!text.contains("three") && !text.contains("correct horse"))
    }

    @Test func anUnwritableStateDirectoryNeverStopsAVaultFromOpening() throws {
        _ = try vaultWithOldCopy()
        var options = options()
        options.rollbackProtection = RollbackProtection(stateDirectory: "/proc/no-such-dir/vault")
        #expect(openError(path, options: options) == nil)
    }
}

import Foundation
import Testing
import VaultCore

/// ``SecureKeyValueStore``, the library's front door, over every format version (issue 34 §1): it creates the
/// current format, opens versions 1 to 3, keeps a file's version when it writes, and answers fields and history
/// without a downcast (a version-1 vault with ``VaultError/needsVersion2(path:)``).
@Suite("SecureKeyValueStore: the front door of every format version")
struct FrontDoorTests {
    static let passphrase = SecureBytes(string: "correct horse battery staple")

    @Test func itCreatesTheCurrentFormatAndReadsFieldsAndHistory() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("new.vault")
        let store = SecureKeyValueStore(path: path, options: .insecureForTesting)
        try store.open(with: Self.passphrase)  // created: none was there
        #expect(store.formatVersion == 3)
        #expect(try store.inspect().formatVersion == 3)
        try store.update { try $0.put("hunter2", forKey: "github") }
        try store.apply([.setField(entry: "github", field: "username", value: SecureBytes(string: "alice"), secret: false)])
        store.close()

        let again = SecureKeyValueStore(path: path, options: .insecureForTesting)
        try again.open(with: Self.passphrase, createIfMissing: false)
        defer { again.close() }
        #expect(try again.getString("github") == "hunter2")
        #expect(try again.record(of: "github")?.field("username")?.value.stringValue == "alice")
        #expect(try again.records(of: "github", .all)?.count == 2)
        try again.requireFields()
        #expect(try again.keys() == ["github"])
    }

    @Test func aVersionOneVaultStaysVersionOneWhenWrittenAndAnswersFieldsWithNeedsVersion2() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("old.vault")
        let made = SecureKeyValueStore(path: path, options: .insecureForTesting)
        try made.create(with: Self.passphrase, formatVersion: 1)
        made.close()

        let store = SecureKeyValueStore(path: path, options: .insecureForTesting)
        try store.open(with: Self.passphrase)
        defer { store.close() }
        #expect(store.formatVersion == 1)
        try store.update { try $0.put("v", forKey: "k") }
        #expect(try store.getString("k") == "v")
        #expect(try store.inspect().formatVersion == 1)
        #expect(throws: VaultError.needsVersion2(path: path)) { try store.requireFields() }
        #expect(throws: VaultError.needsVersion2(path: path)) { try store.record(of: "k") }
        #expect(throws: VaultError.needsVersion2(path: path)) {
            try store.apply([.setField(entry: "k", field: "username", value: SecureBytes(string: "alice"), secret: false)])
        }
        #expect(throws: VaultError.needsVersion2(path: path)) { try store.deletedEntries() }
        #expect(try store.getString("k") == "v")
        // What version 1 can hold, in the document's terms (the agent's one write): the password is the value.
        try store.apply([.setField(entry: "n", field: "password", value: SecureBytes(string: "new")), .rename(from: "k", to: "m", replacing: true)])
        #expect(try store.keys() == ["m", "n"] && store.getString("m") == "v" && store.getString("n") == "new")
        try store.apply([.deleteAll])
        #expect(try store.keys().isEmpty && store.inspect().formatVersion == 1)
    }

    @Test func itOpensAVersionTwoVaultAndAClosedStoreIsNotOpen() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("two.vault")
        _ = try VaultOpener.create(path: path, passphrase: Self.passphrase, options: .insecureForTesting, formatVersion: 2)
        let store = SecureKeyValueStore(path: path, options: .insecureForTesting)
        #expect(throws: VaultError.notOpen) { try store.keys() }
        try store.open(with: Self.passphrase, createIfMissing: false)
        #expect(store.formatVersion == 2)
        try store.put("v", forKey: "k")
        #expect(try store.inspect().formatVersion == 2)
        store.close()
        #expect(!store.isOpen)
        #expect(throws: VaultError.notOpen) { try store.getBytes("k") }
    }

    @Test func aMissingVaultIsNotCreatedWhenAskedNotTo() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("none.vault")
        let store = SecureKeyValueStore(path: path, options: .insecureForTesting)
        #expect(throws: VaultError.vaultNotFound(path: path)) { try store.open(with: Self.passphrase, createIfMissing: false) }
        #expect(!store.exists)
    }
}

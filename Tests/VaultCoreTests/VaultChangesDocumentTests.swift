import Foundation
import Testing
@testable import VaultCore

/// A batch of format version 1's terms and document changes, each in the other's terms
/// (Sources/VaultCore/VaultChanges+Document.swift): what a version-1 vault takes of a document batch means there what
/// it means on a document, and what it cannot mean the same is refused, writing nothing.
@Suite struct VaultChangesDocumentTests {
    static let passphrase = SecureBytes(string: "correct horse")

    /// A version-1 vault holding `a` = "1" and `b` = "2".
    func formatOne() throws -> (TemporaryDirectory, SecureKeyValueStore) {
        let directory = TemporaryDirectory()
        let store = SecureKeyValueStore(path: directory.file("one.vault"), options: .insecureForTesting)
        try store.create(with: Self.passphrase, formatVersion: 1)
        try store.update { try $0.put("1", forKey: "a"); try $0.put("2", forKey: "b") }
        return (directory, store)
    }

    func set(_ name: String, _ value: String) -> DocumentChange { .setField(entry: name, field: "password", value: SecureBytes(string: value)) }

    @Test func requirementsComeFirstEvenBeforeARemoveOfEverything() throws {
        var changes = VaultChanges()
        changes.removeAll()
        changes.require("a", exists: true)
        try changes.put("3", forKey: "c")
        let document = try changes.documentChanges()
        #expect(document.count == 3)
        guard document.count == 3, case .require("a", true) = document[0], case .deleteAll = document[1], case .setField("c", "password", _, nil) = document[2] else {
            Issue.record("\(document)")
            return
        }
        let (directory, store) = try formatOne()
        defer { store.close(); _ = directory }
        try store.apply(document)
        #expect(try store.keys() == ["c"])
    }

    @Test func aRenameOrCopyToItselfChangesNothing() throws {
        let (directory, store) = try formatOne()
        defer { store.close(); _ = directory }
        try store.apply([.rename(from: "a", to: "a", replacing: true), .copy(from: "b", to: "b", replacing: true)])
        #expect(try store.keys() == ["a", "b"] && store.getString("a") == "1")
    }

    /// Version 1's copies read the file as it was before the batch, a document's as the batch left it: a copy or
    /// rename of what the batch changed before would mean another thing, so it is refused and nothing is written.
    @Test func aCopyOfWhatTheBatchChangedIsRefused() throws {
        let (directory, store) = try formatOne()
        defer { store.close(); _ = directory }
        let refused: [[DocumentChange]] = [
            [set("a", "new"), .copy(from: "a", to: "c", replacing: true)],
            [.rename(from: "a", to: "c", replacing: true), .rename(from: "c", to: "d", replacing: true)],
            [.delete(entry: "a", ifPresent: true), .copy(from: "a", to: "c", replacing: true)],
            [.deleteAll, .copy(from: "b", to: "c", replacing: true)],
            [set("c", "3"), .require(entry: "c", exists: true)],
            [.rename(from: "a", to: "c", replacing: false)],
            [.setField(entry: "c", field: "password", value: SecureBytes(string: "3"), secret: false)],
        ]
        for batch in refused {
            #expect(throws: VaultError.needsVersion2(path: store.path), "\(batch)") { try store.apply(batch) }
        }
        #expect(try store.keys() == ["a", "b"] && store.getString("a") == "1" && store.getString("b") == "2")
        // What version 1 says the same way: a copy of an untouched entry, then changes of others.
        try store.apply([.copy(from: "a", to: "c", replacing: true), set("a", "new"), .rename(from: "b", to: "d", replacing: true)])
        #expect(try store.keys() == ["a", "c", "d"] && store.getString("c") == "1" && store.getString("a") == "new" && store.getString("d") == "2")
    }
}

import Foundation
import Testing
@testable import VaultCore

/// Many values in one batch or one answer are slices of one guarded region (``SecureBytes/slice(_:)``), not a region
/// each: each region is three kernel mappings or more, and a process has at most 65,530 (`vm.max_map_count`). A
/// batch of 30,000 puts on the vault `vault init` makes, and a search over 30,000 entries, aborted the process before.
@Suite struct ManyValuesTests {
    static let count = 30_000

    @Test func aSliceSharesItsRegionAndKeepsItAlive() {
        var whole: SecureBytes? = SecureBytes(string: "0123456789")
        let slice = whole!.slice(2..<6)
        let inner = slice.slice(1..<3)
        whole = nil  // the slices keep the region
        #expect(slice == SecureBytes(string: "2345") && slice.count == 4)
        #expect(inner == SecureBytes(string: "34"))
        #expect(SecureBytes(string: "x").slice(1..<1).count == 0)
        #expect("\(slice)" == "SecureBytes(4 bytes, redacted)")
    }

    @Test func oneBatchOfManyPutsOnTheCurrentFormat() throws {
        let directory = TemporaryDirectory()
        let store = SecureKeyValueStore(path: directory.file("many.vault"), options: .insecureForTesting)
        try store.create(with: SecureBytes(string: "pw"))
        defer { store.close() }
        #expect(store.formatVersion == Int(DocumentFormat.currentVersion))
        try store.update { changes in
            for index in 0..<Self.count { try changes.put("value-\(index)", forKey: "entry-\(index)") }
        }
        #expect(try store.keys().count == Self.count)
        #expect(try store.getString("entry-29999") == "value-29999")
    }

    @Test func aSearchOverManyEntries() throws {
        var bytes: [UInt8] = []
        let versions = (0..<Self.count).map { index -> DocumentVersion in
            let start = bytes.count
            bytes += Array("https://host-\(index).example".utf8)
            return DocumentVersion(fields: [DocumentField(name: "url", isSecret: false, value: start..<bytes.count)])
        }
        let values = SecureBytes(bytes)
        let (document, _) = try VaultDocument.create(passphrase: SecureBytes(string: "pw"), parameters: .insecureForTesting, label: "t")
        try document.apply(versions.enumerated().map { .insert(entry: "e\($0.offset)", current: $0.element, values: values) },
                           replica: ReplicaID(rawValue: 1), clock: SettableClock(1_764_000_000_000))
        let found = document.search(prefix: "", required: [])
        #expect(found.count == Self.count)
        let last = try #require(found.first { $0.name == "e29999" })
        #expect(last.fields.map(\.name) == ["url"] && last.fields[0].value == SecureBytes(string: "https://host-29999.example"))
    }
}

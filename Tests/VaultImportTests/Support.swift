import Foundation
import Testing
import VaultCore
@testable import VaultImport

extension PortableVersion {
    /// Field `name` as text, or nil.
    func text(_ name: String) -> String? {
        field(name).map { String(decoding: $0.unprotectedBytes, as: UTF8.self) }
    }

    var names: [String] { fields.map(\.name) }
}

extension PortableEntry {
    var name: String { EntryNaming.name(of: path, prefix: nil) }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The error `body` throws, as an ``ImportError`` (a test fails when it throws nothing or something else).
func importError(_ body: () throws -> Void) -> ImportError? {
    do {
        try body()
        Issue.record("no error thrown")
        return nil
    } catch let error as ImportError {
        return error
    } catch {
        Issue.record("not an ImportError: \(error)")
        return nil
    }
}

/// A field of a vault entry, as an export reads it.
func field(_ name: String, _ text: String, secret: Bool = false) -> EntryRecord.Field {
    EntryRecord.Field(name: name, isSecret: secret, value: SecureBytes(string: text))
}

/// An entry of a vault as an export reads it: its versions, current first, each with its fields and time.
func versions(_ name: String, _ list: [(fields: [EntryRecord.Field], modified: UInt64)], created: UInt64 = 1_000, conflicts: Set<Int> = [],
              id: DocumentID = .random()) -> [EntryRecord] {
    let replica = ReplicaID(rawValue: 1)
    return list.enumerated().map { index, version in
        EntryRecord(id: id, name: name, version: index, created: HybridTimestamp(milliseconds: created, counter: 0, replica: replica),
                    modified: HybridTimestamp(milliseconds: version.modified, counter: 0, replica: replica),
                    conflict: conflicts.contains(index), fields: version.fields)
    }
}

/// An export's source of `entries` (names sorted as a vault lists them).
func exportSource(_ entries: [[EntryRecord]]) -> ExportSource {
    let byName = Dictionary(uniqueKeysWithValues: entries.map { ($0[0].name, $0) })
    return ExportSource(names: byName.keys.sorted()) { byName[$0] ?? [] }
}

import VaultSodium

/// Reading a document: names, entries, histories and copies of values in guarded memory.
extension VaultDocument {
    /// The names of the live entries, sorted.
    public var names: [String] {
        if let sorted = sortedNames.withLock({ $0 }) { return sorted }
        let sorted = idsByName.keys.sorted()
        sortedNames.withLock { $0 = sorted }
        return sorted
    }

    /// The number of live entries.
    public var count: Int { entries.count }

    /// What a reader sees of an entry: its id, name, fields (names and flags, in order), times and the number of
    /// earlier versions. Values come through ``value(of:in:version:)``.
    public struct EntryInfo: Equatable, Sendable {
        public let id: DocumentID
        public let name: String
        public let fields: [(name: String, isSecret: Bool)]
        public let created: HybridTimestamp
        public let modified: HybridTimestamp
        public let versionCount: Int

        public static func == (a: EntryInfo, b: EntryInfo) -> Bool {
            a.id == b.id && a.name == b.name && a.fields.elementsEqual(b.fields, by: { $0 == $1 })
                && a.created == b.created && a.modified == b.modified && a.versionCount == b.versionCount
        }
    }

    /// The live entry `name`, or `nil`.
    public func entry(_ name: String) -> EntryInfo? {
        guard let id = idsByName[name], let entry = entries[id] else { return nil }
        return EntryInfo(
            id: entry.id, name: entry.name, fields: entry.fields.map { ($0.name, $0.isSecret) },
            created: entry.created, modified: entry.modified, versionCount: entry.history.count)
    }

    /// What an earlier version of an entry holds: its time, whether a merge marked it a conflict, its fields.
    public struct VersionInfo: Equatable, Sendable {
        public let number: Int
        public let modified: HybridTimestamp
        public let conflict: Bool
        public let fieldNames: [String]
    }

    /// `name`'s earlier versions, newest first, numbered from 1 (what ``value(of:in:version:)`` takes).
    public func history(of name: String) -> [VersionInfo]? {
        guard let id = idsByName[name], let entry = entries[id] else { return nil }
        return entry.history.enumerated().map { index, version in
            VersionInfo(number: index + 1, modified: version.modified, conflict: version.conflict, fieldNames: version.fields.map(\.name))
        }
    }

    /// A copy of field `field` of `entry` (of its earlier version `version`, 1 the newest, when given), in guarded
    /// memory; `nil` when there is no such entry, version or field.
    public func value(of field: String, in entry: String, version: Int? = nil) -> SecureBytes? {
        guard let found = fields(of: entry, version: version)?.first(where: { $0.name == field }) else { return nil }
        return copy(found.value)
    }

    /// The fields of `entry` (of its earlier version `version`, 1 the newest), or `nil`.
    func fields(of entry: String, version: Int?) -> [Field]? {
        guard let id = idsByName[entry], let record = entries[id] else { return nil }
        guard let version else { return record.fields }
        guard version >= 1, version <= record.history.count else { return nil }
        return record.history[version - 1].fields
    }

    /// The versions `which` of entry `name` with their fields' values (copies in guarded memory), newest first;
    /// `nil` when there is no such entry.
    ///
    /// - Throws: ``VaultError/noSuchVersion(key:version:)`` for a version the entry does not have.
    public func records(of name: String, _ which: EntryVersions = .current) throws -> [EntryRecord]? {
        guard let id = idsByName[name], let entry = entries[id] else { return nil }
        func record(_ number: Int, _ fields: [Field], _ modified: HybridTimestamp, _ conflict: Bool) -> EntryRecord {
            EntryRecord(
                id: entry.id, name: entry.name, version: number, created: entry.created, modified: modified,
                conflict: conflict, fields: fields.map { .init(name: $0.name, isSecret: $0.isSecret, value: copy($0.value)) },
                modifiedBy: self.name(of: modified.replica))
        }
        switch which {
        case .current:
            return [record(0, entry.fields, entry.modified, false)]
        case .version(let number):
            if number == 0 { return [record(0, entry.fields, entry.modified, false)] }
            guard number >= 1, number <= entry.history.count else { throw VaultError.noSuchVersion(key: name, version: number) }
            let version = entry.history[number - 1]
            return [record(number, version.fields, version.modified, version.conflict)]
        case .all:
            return [record(0, entry.fields, entry.modified, false)]
                + entry.history.enumerated().map { record($0 + 1, $1.fields, $1.modified, $1.conflict) }
        }
    }

    /// Whether field `field` of `entry` (of its earlier version `version`, when given) is secret; `false` when there
    /// is no such field.
    public func fieldIsSecret(_ field: String, in entry: String, version: Int? = nil) -> Bool {
        fields(of: entry, version: version)?.first(where: { $0.name == field })?.isSecret ?? false
    }

    /// The live entries whose names start with `prefix` and whose non-secret fields include every one of
    /// `required` (same name, same bytes), sorted by name: each one's current version with its non-secret fields
    /// only (copied into one guarded region: every value a slice of it, so that a search of a vault of 100,000
    /// entries is not 100,000 regions). One pass over the entries, nothing decrypted: the Secret Service's attribute
    /// search (docs/SECRET-SERVICE.md) and `vault find`. A secret field is never compared, so a search cannot probe a
    /// secret.
    public func search(prefix: String, required: [(field: String, value: [UInt8])]) -> [EntryRecord] {
        let found = names.filter { $0.hasPrefix(prefix) }.compactMap { name -> (entry: Entry, visible: [Field])? in
            guard let id = idsByName[name], let entry = entries[id] else { return nil }
            let visible = entry.fields.filter { !$0.isSecret }
            let matches = required.allSatisfy { wanted in
                visible.contains { field in
                    field.name == wanted.field && values.withUnsafeBytes { all in all[field.value].elementsEqual(wanted.value) }
                }
            }
            return matches ? (entry, visible) : nil
        }
        let total = found.reduce(0) { sum, match in match.visible.reduce(sum) { $0 + $1.value.count } }
        let region = values.withUnsafeBytes { all in
            SecureBytes(capacity: total) { out in
                for match in found { for field in match.visible { out.append(UnsafeRawBufferPointer(rebasing: all[field.value])) } }
            }
        }
        var offset = 0
        return found.map { match in
            EntryRecord(
                id: match.entry.id, name: match.entry.name, version: 0, created: match.entry.created, modified: match.entry.modified,
                conflict: false, fields: match.visible.map { field in
                    defer { offset += field.value.count }
                    return .init(name: field.name, isSecret: false, value: region.slice(offset..<offset + field.value.count))
                })
        }
    }

    func copy(_ range: Range<Int>) -> SecureBytes {
        values.withUnsafeBytes { all in
            SecureBytes(count: range.count) { out in
                if range.count > 0 { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: all[range])) }
            }
        }
    }

    func bytesEqual(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        guard a.count == b.count else { return false }
        return values.withUnsafeBytes { all in
            Sodium.constantTimeEqual(UnsafeRawBufferPointer(rebasing: all[a]), UnsafeRawBufferPointer(rebasing: all[b]))
        }
    }
}

/// Changing a document: a batch of changes as one new version per entry (``VaultDocument/apply(_:replica:clock:)``),
/// the history's caps, and the rule for field names.
extension VaultDocument {
    /// Applies `changes` as one batch made by `replica` at wall time from `clock`: one new timestamp for the
    /// batch, later than every one `replica` issued before (and than every one this document holds). Checks every
    /// change first; on any error nothing changes.
    ///
    /// - Throws: ``VaultError/noSuchEntry(key:path:)``, ``VaultError/entryExists(key:path:)``,
    ///   ``VaultError/invalidEntryName(reason:)``, ``VaultError/invalidFieldName(_:)``,
    ///   ``VaultError/valueTooLarge(key:byteCount:)``, ``VaultError/noSuchVersion(key:version:)``.
    public func apply(_ changes: [DocumentChange], replica: ReplicaID, clock: any WallClock) throws {
        ownValues()
        let wall = clock.milliseconds()
        var batch = Batch(self, replica: replica, now: try batchTime(of: changes, replica: replica, wall: wall))
        for change in changes { try batch.apply(change) }
        batch.stampTouched()
        // What a seal encodes anew: the entries this batch changed, with the parts they had at the last seal.
        var changed = self.changed
        if changed != nil {
            for id in batch.touched.union(batch.replaced) where changed!.index(forKey: id) == nil {
                changed!.updateValue(batch.before[id]?.identity, forKey: id)
            }
        }
        self.entries = batch.entries
        self.changed = changed
        self.idsByName = batch.idsByName
        self.tombstones = batch.tombstones
        self.deletions = batch.deletions
        replicas[replica] = batch.now
        settle(replica: replica, now: wall)
    }

    /// The one timestamp of a batch made by `replica` at wall time `wall`: later than this replica's own and every
    /// clock seen, except one more than a day ahead of the wall clock (a machine set to 2099 must not drag every
    /// replica's clock along; its entries are kept as they are).
    private func batchTime(of changes: [DocumentChange], replica: ReplicaID, wall: UInt64) throws -> HybridTimestamp {
        let seen = replicas.values.filter { $0.milliseconds <= wall &+ Self.maximumClockLead }
        // And later than every entry the batch names: a new version (or a deletion) must come after the one it
        // replaces, even when that one came from a replica whose clock is far ahead (else the next merge would
        // undo this change).
        var named: [HybridTimestamp] = []
        for change in changes {
            let names: [String]
            switch change {
            case let .setField(entry, _, _, _), let .removeField(entry, _), let .delete(entry, _), let .restore(entry, _),
                 let .require(entry, _), let .requireField(entry, _, _), let .insert(entry, _, _, _, _):
                names = [entry]
            case let .restoreDeleted(entry):
                // After the deletion it undoes (and the version it brings back).
                named += deletions.values.compactMap { $0.kept?.name == entry ? $0.kept?.version.modified : nil }
                named += tombstones.compactMap { deletions[$0.key]?.kept?.name == entry ? $0.value : nil }
                names = [entry]
            case let .rename(from, to, _), let .copy(from, to, _): names = [from, to]
            case .deleteAll: names = Array(idsByName.keys)
            }
            named += names.compactMap { idsByName[$0].flatMap { entries[$0]?.modified } }
        }
        let latest = ([replicas[replica], named.max()] + seen.map(Optional.some)).compactMap { $0 }.max()
        return try HybridTimestamp.next(after: latest, replica: replica, now: wall)
    }

    /// `history` within the caps: at most ``maximumHistoryVersions`` versions and ``maximumHistoryByteCount``
    /// bytes of field names and values, oldest dropped first.
    func capped(_ history: [Version]) -> [Version] {
        var kept: [Version] = []
        var bytes = 0
        for version in history.prefix(Self.maximumHistoryVersions) {
            let size = version.fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.count }
            guard bytes + size <= Self.maximumHistoryByteCount else { break }
            bytes += size
            kept.append(version)
        }
        return kept
    }

    /// Checks a field's name: 1 to 255 bytes, no control characters.
    ///
    /// - Throws: ``VaultError/invalidFieldName(_:)``.
    public static func validate(field: String) throws {
        let count = field.utf8.count
        guard count >= 1, count <= maximumFieldNameByteCount else {
            throw VaultError.invalidFieldName("a field name has 1 to \(maximumFieldNameByteCount) bytes")
        }
        guard !field.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw VaultError.invalidFieldName("a field name has no control characters")
        }
    }
}

/// A batch of changes being applied (``VaultDocument/apply(_:replica:clock:)``): a working copy of what changes,
/// one change at a time, each kind as ``DocumentChange`` describes it. The document's arena only grows: a failed
/// batch leaves unused bytes there, no state.
private struct Batch {
    typealias Entry = VaultDocument.Entry
    typealias Field = VaultDocument.Field
    typealias Version = VaultDocument.Version

    let document: VaultDocument
    let replica: ReplicaID
    /// The batch's one timestamp.
    let now: HybridTimestamp
    /// The entries before the batch.
    let before: VaultDocument.Entries
    var entries: VaultDocument.Entries
    var idsByName: [String: DocumentID]
    var tombstones: [DocumentID: HybridTimestamp]
    var deletions: [DocumentID: VaultDocument.Deletion]
    /// The entries given a new version (stamped `now` at the end), and those deleted or made whole besides.
    var touched: Set<DocumentID> = []
    var replaced: Set<DocumentID> = []

    init(_ document: VaultDocument, replica: ReplicaID, now: HybridTimestamp) {
        self.document = document
        self.replica = replica
        self.now = now
        before = document.entries
        entries = document.entries
        idsByName = document.idsByName
        tombstones = document.tombstones
        deletions = document.deletions
    }

    mutating func apply(_ change: DocumentChange) throws {
        switch change {
        case let .setField(name, field, value, secret): try setField(field, of: name, to: value, secret: secret)
        case let .removeField(name, field): try removeField(field, of: name)
        case let .delete(name, ifPresent):
            if ifPresent, idsByName[name] == nil { return }
            bury(try existing(name), name)
        case let .rename(from, to, replacing): try rename(from, to: to, replacing: replacing)
        case let .copy(from, to, replacing): try copy(from, to: to, replacing: replacing)
        case let .require(name, exists):
            if (idsByName[name] != nil) != exists {
                throw exists ? VaultError.noSuchEntry(key: name, path: document.label) : VaultError.entryExists(key: name, path: document.label)
            }
        case let .requireField(name, field, exists): try requireField(field, of: name, exists: exists)
        case .deleteAll:
            for (name, id) in idsByName { bury(id, name) }
        case let .restore(name, version): try restore(name, version: version)
        case let .restoreDeleted(name): try restoreDeleted(name)
        case let .insert(name, current, history, created, given):
            try insert(name, current: current, history: history, created: created, values: given)
        }
    }

    /// Every entry given a new version: stamped with the batch's time, its history within the caps.
    mutating func stampTouched() {
        for id in touched where entries[id] != nil {
            entries[id]!.modified = now
            entries[id]!.history = document.capped(entries[id]!.history)
        }
    }

    func existing(_ name: String) throws -> DocumentID {
        guard let id = idsByName[name] else { throw VaultError.noSuchEntry(key: name, path: document.label) }
        return id
    }

    func checkFree(_ name: String) throws {
        try SecureKeyValueStore.validate(key: name)
        if idsByName[name] != nil { throw VaultError.entryExists(key: name, path: document.label) }
    }

    /// Deletes entry `id` (named `name`): a tombstone that says which version it deleted; in version 3 it keeps
    /// that version for ``VaultDocument/deletedRetention`` (``VaultDocument/trashed(_:name:deleted:)``), for
    /// `vault restore --deleted`.
    mutating func bury(_ id: DocumentID, _ name: String) {
        guard let entry = entries[id] else { return }
        replaced.insert(id)
        if document.formatVersion >= 3 { deletions[id] = VaultDocument.trashed(entry, name: name, deleted: now) }
        entries[id] = nil
        idsByName[name] = nil
        tombstones[id] = now
    }

    /// The entry as it was before this batch goes into its history, once per batch.
    mutating func touch(_ id: DocumentID) {
        guard !touched.contains(id) else { return }
        touched.insert(id)
        guard let old = before[id], var entry = entries[id] else { return }
        entry.history.insert(Version(fields: old.fields, modified: old.modified, conflict: false), at: 0)
        entries[id] = entry
    }

    mutating func setField(_ field: String, of name: String, to value: SecureBytes, secret: Bool?) throws {
        try VaultDocument.validate(field: field)
        guard value.count <= VaultFormat.maximumValueByteCount else {
            throw VaultError.valueTooLarge(key: name, byteCount: value.count)
        }
        let range = value.withUnsafeBytes { document.values.append($0) }
        if let id = idsByName[name] {
            touch(id)
            var entry = entries[id]!
            if let index = entry.fields.firstIndex(where: { $0.name == field }) {
                entry.fields[index].value = range
                if let secret { entry.fields[index].isSecret = secret }
            } else {
                guard entry.fields.count < VaultDocument.maximumFieldCount else {
                    throw VaultError.invalidFieldName("an entry has at most \(VaultDocument.maximumFieldCount) fields")
                }
                entry.fields.append(Field(name: field, value: range, isSecret: secret ?? VaultDocument.isSecretByDefault(field)))
            }
            entries[id] = entry
        } else {
            try checkFree(name)
            let id = DocumentID.random()
            touched.insert(id)
            entries[id] = Entry(
                id: id, name: name, fields: [Field(name: field, value: range, isSecret: secret ?? VaultDocument.isSecretByDefault(field))],
                created: now, modified: now, history: [])
            idsByName[name] = id
        }
    }

    mutating func removeField(_ field: String, of name: String) throws {
        let id = try existing(name)
        guard entries[id]!.fields.contains(where: { $0.name == field }) else { return }
        touch(id)
        entries[id]!.fields.removeAll { $0.name == field }
    }

    mutating func rename(_ from: String, to: String, replacing: Bool) throws {
        let id = try existing(from)
        guard from != to else { return }
        if replacing, let target = idsByName[to] { bury(target, to) }
        try checkFree(to)
        touch(id)
        entries[id]!.name = to
        idsByName[from] = nil
        idsByName[to] = id
    }

    mutating func copy(_ from: String, to: String, replacing: Bool) throws {
        let source = entries[try existing(from)]!
        if replacing, from != to, let target = idsByName[to] { bury(target, to) }
        try checkFree(to)
        let id = DocumentID.random()
        touched.insert(id)
        entries[id] = Entry(id: id, name: to, fields: source.fields, created: now, modified: now, history: [])
        idsByName[to] = id
    }

    func requireField(_ field: String, of name: String, exists: Bool) throws {
        let has = idsByName[name].map { id in entries[id]!.fields.contains { $0.name == field } } ?? false
        if has != exists {
            if !exists { throw VaultError.fieldExists(key: name, field: field) }
            _ = try existing(name)
            throw VaultError.noSuchField(key: name, field: field)
        }
    }

    mutating func restore(_ name: String, version: Int) throws {
        let id = try existing(name)
        let record = entries[id]!
        guard version >= 1, version <= record.history.count else {
            throw VaultError.noSuchVersion(key: name, version: version)
        }
        let fields = record.history[version - 1].fields
        touch(id)
        entries[id]!.fields = fields
    }

    mutating func restoreDeleted(_ name: String) throws {
        try checkFree(name)
        let kept = deletions.compactMap { id, deletion in
            deletion.kept.flatMap { $0.name == name && tombstones[id] != nil ? (id, $0) : nil }
        }
        guard let (id, found) = kept.max(by: { $0.1.version.modified < $1.1.version.modified }) else {
            throw VaultError.noSuchEntry(key: name, path: document.label)
        }
        tombstones[id] = nil
        deletions[id] = nil
        touched.insert(id)
        entries[id] = Entry(
            id: id, name: name, fields: found.version.fields, created: found.version.modified, modified: now,
            history: [found.version])
        idsByName[name] = id
    }

    mutating func insert(
        _ name: String, current: DocumentVersion, history: [DocumentVersion], created: UInt64?, values given: SecureBytes
    ) throws {
        try checkFree(name)
        // The current version at its own time, none after the batch (`now` may be the last time there is).
        let modified = current.modified.map { $0 <= HybridTimestamp.maximumMilliseconds ? min($0 << 16, now.packed) : now.packed }
            ?? now.packed
        var versions: [Version] = []
        var newer = modified
        for version in history {
            guard let packed = Self.stamp(version.modified, before: newer) else { break }
            versions.append(Version(
                fields: try stored(version.fields, of: name, from: given), modified: HybridTimestamp(packed: packed, replica: replica),
                conflict: version.conflict))
            newer = packed
        }
        let born = min(created.map { $0 <= HybridTimestamp.maximumMilliseconds ? $0 << 16 : modified } ?? (versions.last?.modified.packed ?? modified), modified)
        let id = DocumentID.random()
        replaced.insert(id)
        entries[id] = Entry(
            id: id, name: name, fields: try stored(current.fields, of: name, from: given),
            created: HybridTimestamp(packed: born, replica: replica), modified: HybridTimestamp(packed: modified, replica: replica),
            history: document.capped(versions))
        idsByName[name] = id
    }

    /// An inserted version's stamp: at its own time, strictly before the next newer one, none after the batch.
    static func stamp(_ given: UInt64?, before newer: UInt64) -> UInt64? {
        let limit = newer &- 1
        guard newer > 0 else { return nil }
        guard let given, given <= HybridTimestamp.maximumMilliseconds else { return limit }
        return min(given << 16, limit)
    }

    /// The fields of an inserted version, checked, their values copied from `given` into the document's arena.
    func stored(_ fields: [DocumentField], of name: String, from given: SecureBytes) throws -> [Field] {
        guard fields.count <= VaultDocument.maximumFieldCount else {
            throw VaultError.invalidFieldName("an entry has at most \(VaultDocument.maximumFieldCount) fields")
        }
        var seen: Set<String> = []
        return try fields.map { field in
            try VaultDocument.validate(field: field.name)
            guard seen.insert(field.name).inserted else { throw VaultError.invalidFieldName("the field '\(field.name)' is given twice") }
            guard field.value.count <= VaultFormat.maximumValueByteCount else {
                throw VaultError.valueTooLarge(key: name, byteCount: field.value.count)
            }
            guard field.value.lowerBound >= 0, field.value.upperBound <= given.count else {
                throw VaultError.invalidFieldName("the value of field '\(field.name)' lies outside the values given")
            }
            let range = given.withUnsafeBytes { document.values.append(UnsafeRawBufferPointer(rebasing: $0[field.value])) }
            return Field(name: field.name, value: range, isSecret: field.isSecret)
        }
    }
}

import VaultCore

/// What an import does to a vault: per entry of the source, added, updated or unchanged, and the one batch of
/// document changes that does it (docs/IMPORT-EXPORT.md, "What an import changes").
///
/// - A name the vault lacks: the entry is made whole (``DocumentChange/insert(entry:current:history:created:values:)``),
///   its history and times kept.
/// - A name the vault has: each field of the source is set (its value and secret flag) where it differs; a field
///   only the vault has stays, and the vault's history keeps the version replaced. When every field of the source is
///   already there with the same value and flag, the entry is unchanged: importing twice adds nothing.
/// - Names: the source's path joined with `/` under the prefix (``EntryNaming``); a name given twice in the source
///   becomes `name (2)`, `name (3)`, … in the source's order, the same on every run.
public struct ImportPlan {
    /// An entry of the source the import leaves as the vault has it (unless `overwrite`): changed in the vault since
    /// the source's version (`fields`: the source's fields whose value or flag the vault's differs from, names
    /// only), or deleted in the vault since (`fields` empty).
    public struct Kept: Equatable, Sendable {
        public var name: String
        public var fields: [String]
        public var deleted: Bool
    }

    public var added: [String] = []
    public var updated: [String] = []
    public var unchanged: [String] = []
    /// Changed or deleted in the vault since the source's version: left alone (``Kept``).
    public var kept: [Kept] = []
    public var skipped: [SkippedItem] = []
    /// The batch: one atomic write.
    public var changes: [DocumentChange] = []

    /// The plan for `source` under `prefix`; `existing` gives the versions of an entry the vault has, current
    /// first (`nil`: none); `deleted` when (milliseconds) the vault deleted an entry of that name that it lacks now.
    ///
    /// An entry the vault changed since the source's version is **kept** as the vault has it (``changedSince(_:_:)``). An entry the vault deleted after the source's version (or the source has no time) is not
    /// brought back. `overwrite` updates and adds them all the same.
    ///
    /// - Throws: ``ImportError/tooLarge(what:limit:)`` past ``ImportLimits/maximumEntryCount``,
    ///   ``ImportError/malformed(location:reason:)`` for a field name a vault cannot hold (naming the item), and
    ///   what `existing` throws.
    /// `progress` is told after each of the source's entries how many are done (done, total).
    public static func make(
        _ source: ParsedSource, prefix: String?, overwrite: Bool = false, deleted: [String: UInt64] = [:],
        progress: ((_ done: Int, _ total: Int) -> Void)? = nil,
        existing: (String) throws -> [EntryRecord]?
    ) throws -> ImportPlan {
        guard source.entries.count <= ImportLimits.maximumEntryCount else {
            throw ImportError.tooLarge(what: "the source, with \(source.entries.count) entries,", limit: "\(ImportLimits.maximumEntryCount) entries")
        }
        var plan = ImportPlan(skipped: source.skipped)
        // One guarded region for every inserted value (not one per value); updates copy theirs, a bounded number.
        let values = source.values.sealed()
        var changedFields = 0
        let names = EntryNaming.unique(source.entries.map { EntryNaming.name(of: $0.path, prefix: prefix) })
        for (index, (entry, name)) in zip(source.entries, names).enumerated() {
            defer { progress?(index + 1, source.entries.count) }
            do {
                try SecureKeyValueStore.validate(key: name)
            } catch {
                plan.skipped.append(SkippedItem(item: entry.origin, reason: "its name cannot be a vault entry's (\(error))"))
                continue
            }
            guard !entry.current.fields.isEmpty else {
                plan.skipped.append(SkippedItem(item: entry.origin, reason: "nothing to import (no field with a value)"))
                continue
            }
            for version in [entry.current] + entry.history {
                var seen: Set<String> = []
                for field in version.fields {
                    do { try VaultDocument.validate(field: field.name) } catch {
                        throw ImportError.malformed(location: entry.origin, reason: "a field name a vault cannot hold (\(error))")
                    }
                    guard seen.insert(field.name).inserted else {
                        throw ImportError.malformed(location: entry.origin, reason: "the field '\(field.name)' appears twice")
                    }
                }
            }
            guard let versions = try existing(name), let record = versions.first else {
                if !overwrite, let when = deleted[name], entry.current.modified.map({ $0 <= when }) ?? true {
                    plan.kept.append(Kept(name: name, fields: [], deleted: true))
                    continue
                }
                func document(_ version: PortableVersion) -> DocumentVersion {
                    DocumentVersion(
                        fields: version.fields.map { DocumentField(name: $0.name, isSecret: $0.isSecret, value: $0.range) },
                        modified: version.modified, conflict: version.conflict)
                }
                plan.changes.append(.insert(
                    entry: name, current: document(entry.current), history: entry.history.map(document), created: entry.created,
                    values: values))
                plan.added.append(name)
                continue
            }
            let differing = entry.current.fields.filter { !matches($0, record) }
            if !differing.isEmpty, !overwrite, changedSince(entry.current, versions) {
                plan.kept.append(Kept(name: name, fields: differing.map(\.name), deleted: false))
                continue
            }
            var changes: [DocumentChange] = []
            for field in differing {
                changedFields += 1
                guard changedFields <= ImportLimits.maximumChangedFieldCount else {
                    throw ImportError.tooLarge(
                        what: "the change to the entries the vault has (more than \(ImportLimits.maximumChangedFieldCount) fields differ)",
                        limit: "\(ImportLimits.maximumChangedFieldCount) changed fields")
                }
                changes.append(.setField(entry: name, field: field.name, value: field.withUnsafeBytes { SecureBytes($0) }, secret: field.isSecret))
            }
            if changes.isEmpty {
                plan.unchanged.append(name)
            } else {
                plan.changes += changes
                plan.updated.append(name)
            }
        }
        return plan
    }

    /// Whether `record` holds `field` with its value and secret flag.
    static func matches(_ field: PortableField, _ record: EntryRecord) -> Bool {
        guard let have = record.field(field.name) else { return false }
        return have.isSecret == field.isSecret && field.hasValue(have.value)
    }

    /// Whether the vault changed the entry after the source's `version`: when the source gives a time, whether the
    /// vault's current version is newer; else whether an earlier version of the vault holds every field of the source
    /// as it is (the source was imported before, and the vault moved on since).
    static func changedSince(_ version: PortableVersion, _ versions: [EntryRecord]) -> Bool {
        if let modified = version.modified { return (versions.first?.modified.milliseconds ?? 0) > modified }
        return versions.dropFirst().contains { earlier in version.fields.allSatisfy { matches($0, earlier) } }
    }
}

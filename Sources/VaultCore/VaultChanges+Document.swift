/// A batch of format version 1's terms (``VaultChanges``: puts, removes, copies, requirements) and the document
/// changes of format versions 2 and 3 (``DocumentChange``), each in the other's terms: a version-1 batch is written
/// to a document as its changes, and the agent's one write operation (`apply`) carries document changes to a
/// version-1 vault too, which takes those its format can hold.
extension VaultChanges {
    /// The batch in the document's terms: requirements first, as version 1 checks them before any change (even a
    /// remove-everything); a put sets the `password` field; a remove deletes (nothing when there is no such entry,
    /// as in version 1); a copy that keeps its creation time followed by the source's remove is a rename (the entry
    /// keeps its id; a copy keeping its time that is not followed so gets a new one, as any document copy); a copy
    /// replaces an existing target (`mv -f`, `cp -f`: the caller requires it free otherwise).
    ///
    /// The puts' values are slices of one guarded region (``SecureBytes/slice(_:)``): a batch of 100,000 puts is one
    /// region, not one each (each is several kernel mappings, of at most 65,530 a process has).
    package func documentChanges() throws -> [DocumentChange] {
        var items: [Item] = []
        var total = 0
        try forEach { item in
            items.append(item)
            if case .put(_, let value) = item { total += value.count }
        }
        var ranges: [Range<Int>] = []
        let region = try SecureBytes(capacity: total) { (out: inout SecureBytes.Appender) throws in
            try forEach { item in
                guard case .put(_, let value) = item else { return }
                let start = out.count
                out.append(value)
                ranges.append(start..<out.count)
            }
        }
        var putIndex = 0
        var values: [SecureBytes?] = []
        for item in items {
            guard case .put = item else { values.append(nil); continue }
            values.append(region.slice(ranges[putIndex]))
            putIndex += 1
        }
        var out: [DocumentChange] = []
        for case .require(let name, let exists) in items { out.append(.require(entry: name, exists: exists)) }
        if removesEverything { out.append(.deleteAll) }
        var index = 0
        while index < items.count {
            switch items[index] {
            case .require:
                break
            case .put(let name, _):
                out.append(.setField(entry: name, field: "password", value: values[index]!))
            case .remove(let name):
                out.append(.delete(entry: name, ifPresent: true))
            case .copy(let name, let source, let keepCreated):
                if keepCreated, index + 1 < items.count, case .remove(source) = items[index + 1] {
                    out.append(.rename(from: source, to: name, replacing: true))
                    index += 1
                } else {
                    out.append(.copy(from: source, to: name, replacing: true))
                }
            }
            index += 1
        }
        return out
    }

    /// The version-1 batch of `changes`, which must mean on version 1 what it means on a document: requirements
    /// before any change, then `deleteAll` if at all, fields named `password` only (a value is all an entry holds
    /// there), deletions of present-or-absent entries, and renames and copies that replace their target and whose
    /// source no earlier change of the batch touched (version 1's copies read the file as it was before the batch;
    /// a document's, as the batch left it). A rename or copy of an entry to itself changes nothing, as on a document.
    ///
    /// - Throws: ``VaultError/needsVersion2(path:)`` (naming `path`) for any other change, which a version-1 vault
    ///   cannot hold; what ``put(_:forKey:)`` throws for a name or value it refuses.
    package init(formatOne changes: [DocumentChange], path: String) throws {
        self.init()
        var changed = false
        var touched = Set<String>()
        for change in changes {
            switch change {
            case .require(let entry, let exists) where !changed: require(entry, exists: exists)
            case .deleteAll where !changed:
                // Version 1's remove-everything drops the requirements made so far: keep them.
                let kept = requirements
                removeAll()
                requirements = kept
                touched.insert("")  // every name: no later copy may read one
            case .setField(let entry, "password", let value, let secret) where secret != false:
                try put(value, forKey: entry)
                touched.insert(entry)
            case .delete(let entry, ifPresent: true):
                remove(entry)
                touched.insert(entry)
            case .rename(let from, let to, replacing: true) where from == to, .copy(let from, let to, replacing: true) where from == to:
                continue
            case .rename(let from, let to, replacing: true) where !touched.contains(from) && !touched.contains(""):
                try copy(from, to: to, keepCreated: true)
                remove(from)
                touched.formUnion([from, to])
            case .copy(let from, let to, replacing: true) where !touched.contains(from) && !touched.contains(""):
                try copy(from, to: to)
                touched.insert(to)
            default: throw VaultError.needsVersion2(path: path)
            }
            if case .require = change {} else { changed = true }
        }
    }
}

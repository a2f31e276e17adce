/// A batch of format version 1's terms (``VaultChanges``: puts, removes, copies, requirements) and the document
/// changes of format versions 2 and 3 (``DocumentChange``), each in the other's terms: a version-1 batch is written
/// to a document as its changes, and the agent's one write operation (`apply`) carries document changes to a
/// version-1 vault too, which takes those its format can hold.
extension VaultChanges {
    /// The batch in the document's terms: a put sets the `password` field; a remove deletes (nothing when there is
    /// no such entry, as in version 1); a copy that keeps its creation time followed by the source's remove is a
    /// rename (the entry keeps its id); a copy replaces an existing target (`mv -f`, `cp -f`: the caller requires it
    /// free otherwise); requirements come first, as version 1 checks them before any change.
    package func documentChanges() throws -> [DocumentChange] {
        var items: [Item] = []
        var values: [SecureBytes?] = []
        try forEach { item in
            items.append(item)
            if case .put(_, let value) = item { values.append(SecureBytes(value)) } else { values.append(nil) }
        }
        var out: [DocumentChange] = removesEverything ? [.deleteAll] : []
        var index = 0
        while index < items.count {
            switch items[index] {
            case .require(let name, let exists):
                out.append(.require(entry: name, exists: exists))
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

    /// The version-1 batch of `changes`, which must be in ``documentChanges()``'s image: `deleteAll` first if at
    /// all, requirements before any change, fields named `password` only (a value is all an entry holds there),
    /// deletions of present-or-absent entries, and renames and copies that replace their target.
    ///
    /// - Throws: ``VaultError/needsVersion2(path:)`` (naming `path`) for any other change, which a version-1 vault
    ///   cannot hold; what ``put(_:forKey:)`` throws for a name or value it refuses.
    package init(formatOne changes: [DocumentChange], path: String) throws {
        self.init()
        var changed = false
        for (index, change) in changes.enumerated() {
            switch change {
            case .deleteAll where index == 0: removeAll()
            case .require(let entry, let exists) where !changed: require(entry, exists: exists)
            case .setField(let entry, "password", let value, let secret) where secret != false:
                try put(value, forKey: entry)
                changed = true
            case .delete(let entry, ifPresent: true):
                remove(entry)
                changed = true
            case .rename(let from, let to, replacing: true):
                try copy(from, to: to, keepCreated: true)
                remove(from)
                changed = true
            case .copy(let from, let to, replacing: true):
                try copy(from, to: to)
                changed = true
            default: throw VaultError.needsVersion2(path: path)
            }
        }
    }
}

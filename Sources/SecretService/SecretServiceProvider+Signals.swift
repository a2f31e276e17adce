import VaultCore

/// The signals that tell clients what changed (docs/SECRET-SERVICE.md, "Signals"): `PropertiesChanged` of
/// `org.freedesktop.DBus.Properties` for a collection's `Locked`, `Label` and `Items` and an item's `Locked`, `Label`,
/// `Attributes` and `Modified`, and the Service's `CollectionChanged`. They are found by comparing what clients were
/// last shown with what the provider knows now (the lock state from the agent, the index), after every call and
/// every look at the agent: so a change made elsewhere (`vault lock`, `vault unlock`, a timeout, an item seen gone)
/// is told as one made over D-Bus is.
extension SecretServiceProvider {
    /// What clients were last told of a collection.
    struct Shown: Equatable {
        var locked: Bool
        var label: String
        var items: [String: SecretItem]

        static func == (a: Shown, b: Shown) -> Bool {
            a.locked == b.locked && a.label == b.label && a.items.keys.sorted() == b.items.keys.sorted()
                && a.items.allSatisfy { id, item in b.items[id].map { item.sameProperties(as: $0) } ?? false }
        }
    }

    func currentlyShown(_ collection: SecretCollection) -> Shown {
        Shown(locked: !unlocked.contains(collection.id), label: store.label(of: collection), items: store.index[collection.id] ?? [:])
    }

    /// Emits the signals for what changed since the last time, and remembers what is shown now.
    func publishChanges() {
        for collection in store.collections {
            let now = currentlyShown(collection)
            guard let before = shown[collection.id] else {
                shown[collection.id] = now
                continue
            }
            guard now != before else { continue }
            shown[collection.id] = now
            var changed: [Property] = []
            if now.locked != before.locked { changed.append(Property(name: "Locked", signature: "b") { try $0.bool(now.locked) }) }
            if now.label != before.label { changed.append(Property(name: "Label", signature: "s") { try $0.string(now.label) }) }
            let paths = now.items.values.map(\.path).sorted()
            if paths != before.items.values.map(\.path).sorted() {
                changed.append(Property(name: "Items", signature: "ao") { try $0.objectPaths(paths) })
            }
            for id in now.items.keys.sorted() {
                guard let item = now.items[id] else { continue }
                var itemChanged: [Property] = []
                if now.locked != before.locked { itemChanged.append(Property(name: "Locked", signature: "b") { try $0.bool(now.locked) }) }
                if let old = before.items[id] {
                    if old.label != item.label { itemChanged.append(Property(name: "Label", signature: "s") { try $0.string(item.label) }) }
                    if !old.attributes.elementsEqual(item.attributes, by: ==) {
                        itemChanged.append(Property(name: "Attributes", signature: "a{ss}") { try $0.stringDictionary(item.attributes) })
                    }
                    if old.modified != item.modified { itemChanged.append(Property(name: "Modified", signature: "t") { try $0.uint64(item.modified) }) }
                }
                propertiesChanged(item.path, Self.itemInterface, itemChanged)
            }
            propertiesChanged(collection.path, Self.collectionInterface, changed)
            if !changed.isEmpty {
                try? bus.emit(path: Self.root, interface: Self.service, member: "CollectionChanged") { try $0.string(collection.path, "o") }
            }
        }
    }

    /// `PropertiesChanged(interface, changed, [])` on `path`, when something changed.
    private func propertiesChanged(_ path: String, _ interface: String, _ changed: [Property]) {
        guard !changed.isEmpty else { return }
        try? bus.emit(path: path, interface: Self.properties, member: "PropertiesChanged") { signal in
            try signal.string(interface)
            try Self.write(changed, to: signal)
            try signal.open("a", "s")
            try signal.close()
        }
    }
}

extension SecretItem {
    /// Whether the properties a client sees (label, attributes, content type, times) are the same.
    func sameProperties(as other: SecretItem) -> Bool {
        label == other.label && attributes.elementsEqual(other.attributes, by: ==) && contentType == other.contentType
            && created == other.created && modified == other.modified
    }
}

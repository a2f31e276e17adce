import Foundation
import Testing
import VaultTestSupport

/// The change signals of `vault secret-service` as a real client sees them (`gdbus monitor`, issue 37):
/// PropertiesChanged for a collection's Items, Locked and Label and an item's Label, Modified and Locked, and the
/// Service's CollectionChanged; the collection's Label stored in its vault; CreateCollection and Collection.Delete
/// refused.
@Suite(.processTimeLimit, .serialized) struct SecretServiceSignalsTests {
    typealias Provider = SecretServiceCLITests.Provider
    static let collection = "/org/freedesktop/secrets/collection/test"

    @Test(.enabled(if: SecretServiceCLITests.present, SecretServiceCLITests.missing))
    func propertiesChangedAndCollectionChangedAreEmitted() throws {
        let (box, bus) = try SecretServiceClientsTests.boxWithProvider()
        defer { box.stopAgents() }
        let monitor = try AgentCLI.start(
            "/usr/bin/gdbus", ["monitor", "--address", bus.address, "--dest", "org.freedesktop.secrets"], environment: bus.environment)
        defer {
            kill(monitor.pid, SIGTERM)
            _ = monitor.finish()  // reaped: a zombie child keeps swift-testing's exit-test monitor from seeing its own
        }
        #expect(try AgentTests.poll { Provider.text(monitor.files.stdout).contains("owned by") }, "gdbus monitor did not start")
        var seen = 0
        /// The signal lines gdbus printed since the last call (waits until `count` more arrived).
        func signals(_ count: Int) throws -> [String] {
            var lines: [String] = []
            _ = try AgentTests.poll {
                lines = Provider.text(monitor.files.stdout).split(separator: "\n").map(String.init).filter { $0.hasPrefix("/org/freedesktop/secrets") }
                return lines.count >= seen + count
            }
            defer { seen = lines.count }
            return Array(lines.dropFirst(seen))
        }
        let changed = "org.freedesktop.DBus.Properties.PropertiesChanged"
        let collectionChanged = "/org/freedesktop/secrets: org.freedesktop.Secret.Service.CollectionChanged (objectpath '\(Self.collection)',)"

        #expect(try bus.tool(["store", "--label=L", "a", "b"], stdin: Data("one".utf8)).status == 0)
        let id = try #require(SecretServiceCLITests.ids(try bus.tool(["search", "--all", "a", "b"])).first)
        let item = Self.collection + "/" + id
        #expect(try signals(3) == [
            "\(Self.collection): org.freedesktop.Secret.Collection.ItemCreated (objectpath '\(item)',)",
            "\(Self.collection): \(changed) ('org.freedesktop.Secret.Collection', {'Items': <[objectpath '\(item)']>}, @as [])",
            collectionChanged,
        ])

        let set = try bus.gdbus(["--object-path", item, "--method", "org.freedesktop.DBus.Properties.Set", "org.freedesktop.Secret.Item", "Label", "<'Renamed'>"])
        #expect(set.status == 0, "\(set.stderr)")
        let renamed = try signals(2)
        #expect(renamed.count == 2 && renamed[0] == "\(Self.collection): org.freedesktop.Secret.Collection.ItemChanged (objectpath '\(item)',)", "\(renamed)")
        // Modified is in seconds: it changes too unless the rename came within the second of the store.
        let labelChanged = "\(item): \(changed) ('org.freedesktop.Secret.Item', {'Label': <'Renamed'>"
        #expect(renamed.last == labelChanged + "}, @as [])"
                || renamed.last?.wholeMatch(of: /.*, 'Modified': <uint64 [0-9]+>}, @as \[\]\)/) != nil && renamed.last?.hasPrefix(labelChanged + ", ") == true,
                "\(renamed)")

        #expect(try box.vault(["lock"]).status == 0)
        #expect(try signals(3) == [
            "\(item): \(changed) ('org.freedesktop.Secret.Item', {'Locked': <true>}, @as [])",
            "\(Self.collection): \(changed) ('org.freedesktop.Secret.Collection', {'Locked': <true>}, @as [])",
            collectionChanged,
        ])
        let lockedSet = try bus.gdbus(["--object-path", Self.collection, "--method", "org.freedesktop.DBus.Properties.Set",
                                       "org.freedesktop.Secret.Collection", "Label", "<'Work'>"])
        #expect(lockedSet.status != 0 && lockedSet.stderr.contains("org.freedesktop.Secret.Error.IsLocked"), "\(lockedSet.stderr)")
        try box.unlock()
        #expect(try signals(3) == [
            "\(item): \(changed) ('org.freedesktop.Secret.Item', {'Locked': <false>}, @as [])",
            "\(Self.collection): \(changed) ('org.freedesktop.Secret.Collection', {'Locked': <false>}, @as [])",
            collectionChanged,
        ])

        // The collection's label: settable, kept in its vault (so it syncs), read back.
        let label = try bus.gdbus(["--object-path", Self.collection, "--method", "org.freedesktop.DBus.Properties.Set",
                                   "org.freedesktop.Secret.Collection", "Label", "<'Work'>"])
        #expect(label.status == 0, "\(label.stderr)")
        #expect(try signals(2) == ["\(Self.collection): \(changed) ('org.freedesktop.Secret.Collection', {'Label': <'Work'>}, @as [])", collectionChanged])
        #expect(try box.vault(["get", "secret-service-collection", "--field", "label"]).stdoutText == "Work")
        let read = try bus.gdbus(["--object-path", "/org/freedesktop/secrets/aliases/default", "--method", "org.freedesktop.DBus.Properties.Get",
                                  "org.freedesktop.Secret.Collection", "Label"])
        #expect(read.stdoutText == "(<'Work'>,)\n", "\(read.stderr)")
        let other = try bus.gdbus(["--object-path", Self.collection, "--method", "org.freedesktop.DBus.Properties.Set",
                                   "org.freedesktop.Secret.Collection", "Locked", "<false>"])
        #expect(other.stderr.contains("org.freedesktop.DBus.Error.NotSupported"), "\(other.stderr)")

        #expect(try bus.tool(["clear", "a", "b"]).status == 0)
        #expect(try signals(3) == [
            "\(Self.collection): org.freedesktop.Secret.Collection.ItemDeleted (objectpath '\(item)',)",
            "\(Self.collection): \(changed) ('org.freedesktop.Secret.Collection', {'Items': <@ao []>}, @as [])",
            collectionChanged,
        ])
        let delete = try bus.gdbus(["--object-path", Self.collection, "--method", "org.freedesktop.Secret.Collection.Delete"])
        #expect(delete.stderr.contains("org.freedesktop.DBus.Error.NotSupported"), "\(delete.stderr)")
        let create = try bus.gdbus(["--object-path", "/org/freedesktop/secrets", "--method", "org.freedesktop.Secret.Service.CreateCollection", "{}", "''"])
        #expect(create.stderr.contains("org.freedesktop.DBus.Error.NotSupported"), "\(create.stderr)")
        #expect(try signals(0).isEmpty, "no collection was made or deleted")
    }
}

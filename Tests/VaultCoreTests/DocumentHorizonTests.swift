import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// Issue 19 §1, format version 3 (docs/FORMAT.md, "Version 3"): what each replica has seen, the tombstone horizon
/// with the 180-day replica rule, a copy behind the horizon refused, and a change that lost to a concurrent deletion
/// kept with it and restorable.
@Suite("Document horizon and kept deletions")
struct DocumentHorizonTests {
    static let start: UInt64 = 1_764_000_000_000
    static let day: UInt64 = 86_400_000
    let ra = ReplicaID(rawValue: 1), rb = ReplicaID(rawValue: 2), rc = ReplicaID(rawValue: 3)

    func copies(_ count: Int, version: UInt16 = DocumentFormat.currentVersion) throws -> (key: SecureBytes, copies: [VaultDocument]) {
        let (base, key) = try VaultDocument.create(
            passphrase: SecureBytes(string: "pass"), parameters: .insecureForTesting, label: "base", formatVersion: version)
        let file = try base.seal(dataKey: key)
        return (key, try (0..<count).map { index in
            try VaultDocument.open(file, with: .dataKey(key), label: "copy \(index)", policy: .insecureForTesting).document
        })
    }

    func set(_ entry: String, _ value: String) -> DocumentChange {
        .setField(entry: entry, field: "password", value: SecureBytes(string: value))
    }

    func value(_ document: VaultDocument, _ entry: String) -> String? {
        document.value(of: "password", in: entry).map { String(decoding: $0.unprotectedBytes, as: UTF8.self) }
    }

    func merged(_ a: VaultDocument, _ b: VaultDocument, now: UInt64) throws -> (VaultDocument, MergeReport) {
        try VaultDocument.merge(a, b, now: now)
    }

    /// Sealed and opened again: what the file holds.
    func reopened(_ document: VaultDocument, _ key: SecureBytes) throws -> VaultDocument {
        try VaultDocument.open(try document.seal(dataKey: key), with: .dataKey(key), label: document.label, policy: .insecureForTesting).document
    }

    // MARK: - A change that lost to a deletion

    @Test func aChangeOlderThanAConcurrentDeletionIsKeptReportedAndRestorable() throws {
        let (key, replicas) = try copies(2)
        let (a, b) = (replicas[0], replicas[1])
        try a.apply([set("github", "v1")], replica: ra, clock: SettableClock(Self.start))
        let bCopy = try merged(b, a, now: Self.start).0
        try bCopy.apply([set("github", "changed on b")], replica: rb, clock: SettableClock(Self.start + 10))  // first
        try a.apply([.delete(entry: "github")], replica: ra, clock: SettableClock(Self.start + 20))  // then, unaware

        let (result, report) = try merged(a, bCopy, now: Self.start + 30)
        #expect(result.names.isEmpty, "the later deletion wins")
        #expect(report.keptDeleted == ["github"] && report.deleted.isEmpty)
        let (other, otherReport) = try merged(bCopy, a, now: Self.start + 30)
        #expect(otherReport.deleted == ["github"] && otherReport.keptDeleted == ["github"])
        #expect(DocumentMergeTests.content(other) == DocumentMergeTests.content(result), "either side gives the same")
        let kept = try #require(result.deleted.first)
        #expect(result.deleted.count == 1 && kept.name == "github" && kept.kept.replica == rb)

        // The file keeps it (version 3), and restoring it brings the change back under the same id.
        let stored = try reopened(result, key)
        #expect(stored.deleted == result.deleted)
        try stored.apply([.restoreDeleted(entry: "github")], replica: ra, clock: SettableClock(Self.start + 40))
        #expect(value(stored, "github") == "changed on b")
        #expect(stored.entry("github")?.id == kept.id && stored.deleted.isEmpty && stored.tombstones.isEmpty)
        // The deleting copy takes it back at its next merge: the restore is later than the deletion.
        let (back, backReport) = try merged(a, stored, now: Self.start + 50)
        #expect(value(back, "github") == "changed on b" && backReport.resurrected == ["github"])
        // Restoring again: there is nothing kept any more; a name that is taken is refused.
        #expect(throws: VaultError.noSuchEntry(key: "nothing", path: "copy 0")) {
            try result.copied().apply([.restoreDeleted(entry: "nothing")], replica: ra, clock: SettableClock(Self.start + 60))
        }
        let taken = result.copied()
        try taken.apply([set("github", "new one")], replica: ra, clock: SettableClock(Self.start + 60))
        #expect(throws: VaultError.entryExists(key: "github", path: "copy 0")) {
            try taken.apply([.restoreDeleted(entry: "github")], replica: ra, clock: SettableClock(Self.start + 70))
        }
    }

    @Test func theVersionADeletionDeletedIsNotKept() throws {
        let (_, replicas) = try copies(2)
        let (a, b) = (replicas[0], replicas[1])
        try a.apply([set("old", "v1")], replica: ra, clock: SettableClock(Self.start))
        let stale = try merged(b, a, now: Self.start).0  // has v1, changes nothing
        try a.apply([.delete(entry: "old")], replica: ra, clock: SettableClock(Self.start + 20))
        let (result, report) = try merged(a, stale, now: Self.start + 30)
        #expect(result.names.isEmpty && report.keptDeleted.isEmpty && result.deleted.isEmpty, "a deletion removes what it saw")
        #expect(result.deletion(of: try #require(result.tombstones.first?.key)).of.milliseconds == Self.start)
    }

    // MARK: - The horizon

    /// Three replicas that sync now and then: a deletion is dropped once every replica has written after seeing it
    /// and it is older than 180 days; a copy from before it is then refused; the current copies merge and nothing
    /// comes back.
    @Test func tombstonesGoOnlyBelowAHorizonEveryReplicaPassedAndAnOlderCopyIsRefused() throws {
        let (key, replicas) = try copies(3)
        var (a, b, c) = (replicas[0], replicas[1], replicas[2])
        func syncAll(_ now: UInt64) throws {
            let all = try merged(try merged(a, b, now: now).0, c, now: now).0
            (a, b, c) = (try merged(a, all, now: now).0, try merged(b, all, now: now).0, try merged(c, all, now: now).0)
        }
        try a.apply([set("gone", "x"), set("stays", "y")], replica: ra, clock: SettableClock(Self.start))
        try b.apply([set("b", "1")], replica: rb, clock: SettableClock(Self.start + 1))
        try c.apply([set("c", "1")], replica: rc, clock: SettableClock(Self.start + 2))
        try syncAll(Self.start + 3)
        let backup = try reopened(c, key)  // c's copy, before the deletion
        // a deletes; only b hears of it.
        try a.apply([.delete(entry: "gone")], replica: ra, clock: SettableClock(Self.start + 10))
        b = try merged(b, a, now: Self.start + 11).0
        // c writes on day 150 without having seen the deletion.
        try c.apply([set("c1", "1")], replica: rc, clock: SettableClock(Self.start + 150 * Self.day))
        try syncAll(Self.start + 150 * Self.day + 1)

        // Day 200: a and b write, all sync; c has not written since it saw the deletion: the tombstone stays.
        let later = Self.start + 200 * Self.day
        try a.apply([set("a2", "1")], replica: ra, clock: SettableClock(later))
        try b.apply([set("b2", "1")], replica: rb, clock: SettableClock(later + 1))
        try syncAll(later + 2)
        try a.apply([set("a3", "1")], replica: ra, clock: SettableClock(later + 3))
        #expect(a.tombstones.count == 1, "c's seen holds the horizon below the deletion")
        #expect(!a.names.contains("gone"))

        // c writes (having seen the deletion); then every active replica has: the next write drops it.
        try c.apply([set("c2", "1")], replica: rc, clock: SettableClock(later + 4))
        try syncAll(later + 5)
        try a.apply([set("a4", "1")], replica: ra, clock: SettableClock(later + 6))
        #expect(a.tombstones.isEmpty, "below the horizon now")
        #expect(a.horizon > (Self.start + 10) << 16)
        let stored = try reopened(a, key)
        #expect(stored.horizon == a.horizon && stored.seen == a.seen && stored.seen.count == 3)

        // The backup from before the deletion is refused both ways; nothing is brought back by current copies.
        #expect(throws: VaultError.behindHorizon(path: backup.label)) { try merged(a, backup, now: later + 7) }
        #expect(throws: VaultError.behindHorizon(path: backup.label)) { try merged(backup, a, now: later + 7) }
        let (fromB, _) = try merged(a, b, now: later + 7)
        #expect(!fromB.names.contains("gone"))
        let (fromC, _) = try merged(c, a, now: later + 7)
        #expect(!fromC.names.contains("gone") && fromC.names.contains("a4"))
    }

    /// A replica that wrote nothing for 180 days while others did stops holding the horizon, and leaves the table
    /// once no stamp names it.
    @Test func aReplicaUnseenFor180DaysStopsCountingAndLeavesTheTable() throws {
        let (_, replicas) = try copies(2)
        var (a, b) = (replicas[0], replicas[1])
        try b.apply([set("from-b", "1")], replica: rb, clock: SettableClock(Self.start))
        a = try merged(a, b, now: Self.start).0
        try a.apply([set("x", "1")], replica: ra, clock: SettableClock(Self.start + 1))
        try a.apply([.delete(entry: "x")], replica: ra, clock: SettableClock(Self.start + 2))
        b = try merged(b, a, now: Self.start + 3).0

        let later = Self.start + 181 * Self.day
        try a.apply([set("y", "1")], replica: ra, clock: SettableClock(later))
        #expect(a.tombstones.isEmpty, "b, unseen for 181 days, no longer holds the horizon")
        #expect(a.replicas[rb] != nil, "b's entry still names it")
        try a.apply([set("from-b", "mine")], replica: ra, clock: SettableClock(later + 1))
        try a.apply([set("z", "1")], replica: ra, clock: SettableClock(later + 2))
        // from-b's history still names b: the replica stays while any stamp names it.
        #expect(a.replicas[rb] != nil)
        try a.apply([.delete(entry: "from-b")], replica: ra, clock: SettableClock(later + 3))
        try a.apply([set("w", "1")], replica: ra, clock: SettableClock(later + 4))
        #expect(a.replicas[rb] == nil && a.seen[rb] == nil, "nothing names b: it left the table")
        // b comes back with its old copy: it is behind the horizon.
        #expect(throws: VaultError.behindHorizon(path: b.label)) { try merged(a, b, now: later + 5) }
    }

    // MARK: - Version 2 files

    @Test func aVersion2DocumentStaysVersion2AndAMergeWithVersion3IsVersion3() throws {
        let (key, old) = try copies(2, version: 2)
        try old[0].apply([set("e", "1")], replica: ra, clock: SettableClock(Self.start))
        try old[0].apply([.delete(entry: "e")], replica: ra, clock: SettableClock(Self.start + 400 * Self.day))
        try old[0].apply([set("f", "1")], replica: ra, clock: SettableClock(Self.start + 800 * Self.day))
        #expect(old[0].tombstones.count == 1 && old[0].horizon == 0 && old[0].seen.isEmpty, "version 2 forgets nothing")
        let file = try old[0].seal(dataKey: key)
        #expect(file[8] == 2 && file[9] == 0)
        let reopened = try VaultDocument.open(file, with: .dataKey(key), label: "v2", policy: .insecureForTesting).document
        #expect(reopened.formatVersion == 2)
        let tombstone = try #require(reopened.tombstones.first)
        #expect(reopened.deletion(of: tombstone.key).of == tombstone.value, "a version-2 tombstone deleted what is unknown")

        let upgraded = reopened.copied()
        upgraded.formatVersion = 3
        let (merged, _) = try merged(reopened, upgraded, now: Self.start)
        #expect(merged.formatVersion == 3)
        #expect(try self.reopened(merged, key).formatVersion == 3)
    }
}

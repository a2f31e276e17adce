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

    /// To be rid of a kept change (a leaked value, say): restore it and delete the entry again; every copy that
    /// still keeps it drops it at its next merge.
    @Test func restoringAndDeletingAgainRidsEveryCopyOfTheKeptChange() throws {
        let (_, replicas) = try copies(2)
        let (a, b) = (replicas[0], replicas[1])
        try a.apply([set("github", "v1")], replica: ra, clock: SettableClock(Self.start))
        let bCopy = try merged(b, a, now: Self.start).0
        try bCopy.apply([set("github", "leaked")], replica: rb, clock: SettableClock(Self.start + 10))
        try a.apply([.delete(entry: "github")], replica: ra, clock: SettableClock(Self.start + 20))
        let kept = try merged(a, bCopy, now: Self.start + 30).0
        let other = try merged(bCopy, a, now: Self.start + 30).0  // another copy that keeps it too
        #expect(kept.deleted.count == 1 && other.deleted.count == 1)
        try kept.apply([.restoreDeleted(entry: "github")], replica: ra, clock: SettableClock(Self.start + 40))
        try kept.apply([.delete(entry: "github")], replica: ra, clock: SettableClock(Self.start + 50))
        #expect(kept.deleted.isEmpty)
        for result in [try merged(kept, other, now: Self.start + 60).0, try merged(other, kept, now: Self.start + 60).0] {
            #expect(result.deleted.isEmpty && result.names.isEmpty, "the kept change is gone from every merge")
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

    // MARK: - Two deletions, and a deletion undone

    /// Two replicas delete one entry, each having seen another version; a third changed it concurrently. Every
    /// order of merging gives the same tombstone: the later deletion, the later version deleted, the kept change
    /// only when it is later than both.
    @Test func twoDeletionsOfOneEntryMergeTheSameInEveryOrder() throws {
        let (_, replicas) = try copies(4)
        let (base, p, q, r) = (replicas[0], replicas[1], replicas[2], replicas[3])
        let rp = ReplicaID(rawValue: 4)
        try base.apply([set("e", "e0")], replica: ra, clock: SettableClock(Self.start))
        let (p0, q0, r0) = (try merged(p, base, now: Self.start).0, try merged(q, base, now: Self.start).0, try merged(r, base, now: Self.start).0)
        try r0.apply([set("e", "e1")], replica: rc, clock: SettableClock(Self.start + 10))
        let p1 = try merged(p0, r0, now: Self.start + 11).0  // p saw e1
        try p1.apply([.delete(entry: "e")], replica: rp, clock: SettableClock(Self.start + 20))
        try q0.apply([.delete(entry: "e")], replica: rb, clock: SettableClock(Self.start + 30))  // q saw e0 only
        try r0.apply([set("e", "e2")], replica: rc, clock: SettableClock(Self.start + 15))  // concurrent with both
        let orders = [
            try merged(try merged(p1, r0, now: Self.start).0, q0, now: Self.start).0,
            try merged(try merged(q0, r0, now: Self.start).0, p1, now: Self.start).0,
            try merged(p1, try merged(q0, r0, now: Self.start).0, now: Self.start).0,
            try merged(try merged(r0, q0, now: Self.start).0, p1, now: Self.start).0,
        ]
        let reference = DocumentMergeTests.content(orders[0])
        for (index, order) in orders.enumerated() {
            #expect(DocumentMergeTests.content(order) == reference, "order \(index)")
        }
        let id = try #require(orders[0].tombstones.first?.key)
        let deletion = orders[0].deletion(of: id)
        #expect(deletion.of.milliseconds == Self.start + 10, "the later version a deleter saw")
        #expect(deletion.kept?.version.modified.milliseconds == Self.start + 15, "e2: after both deleted versions")
        #expect(orders[0].tombstones[id]?.milliseconds == Self.start + 30)
    }

    /// A change made after the deletion brings the entry back, and the version the deletion kept joins its
    /// history: whichever order the three copies meet in.
    @Test func aLaterChangeBringsTheEntryBackWithTheKeptVersionInItsHistory() throws {
        let (_, replicas) = try copies(3)
        let (a, b, c) = (replicas[0], replicas[1], replicas[2])
        try a.apply([set("e", "e0")], replica: ra, clock: SettableClock(Self.start))
        let (b0, c0) = (try merged(b, a, now: Self.start).0, try merged(c, a, now: Self.start).0)
        try a.apply([set("e", "v")], replica: ra, clock: SettableClock(Self.start + 10))  // concurrent with b's deletion
        try b0.apply([.delete(entry: "e")], replica: rb, clock: SettableClock(Self.start + 20))
        let bKept = try merged(b0, a, now: Self.start + 21).0
        #expect(bKept.deleted.map(\.name) == ["e"])
        try c0.apply([set("e", "later")], replica: rc, clock: SettableClock(Self.start + 30))  // after the deletion
        let one = try merged(try merged(a, bKept, now: Self.start).0, c0, now: Self.start).0
        let two = try merged(try merged(bKept, c0, now: Self.start).0, a, now: Self.start).0
        #expect(DocumentMergeTests.content(one) == DocumentMergeTests.content(two))
        #expect(value(one, "e") == "later" && one.tombstones.isEmpty)
        #expect(one.history(of: "e")?.contains { $0.modified.milliseconds == Self.start + 10 } == true, "v is kept in the history")
    }

    // MARK: - The horizon

    /// This version drops no tombstone, however old; each writer records what it had seen: the smallest clock of
    /// its whole table (a replica that went quiet still bounds it).
    @Test func noTombstoneIsDroppedAndSeenIsTheSmallestClockOfTheTable() throws {
        let (key, replicas) = try copies(2)
        var (a, b) = (replicas[0], replicas[1])
        try b.apply([set("from-b", "1")], replica: rb, clock: SettableClock(Self.start))
        a = try merged(a, b, now: Self.start).0
        try a.apply([set("x", "1")], replica: ra, clock: SettableClock(Self.start + 1))
        try a.apply([.delete(entry: "x")], replica: ra, clock: SettableClock(Self.start + 2))
        try a.apply([set("y", "1")], replica: ra, clock: SettableClock(Self.start + 400 * Self.day))
        #expect(a.tombstones.count == 1 && a.horizon == 0)
        #expect(a.seen[ra] == b.replicas[rb]?.packed, "b, quiet for 400 days, bounds what a has seen")
        let stored = try reopened(a, key)
        #expect(stored.seen == a.seen && stored.horizon == 0 && stored.tombstones == a.tombstones)
        // b merges a: it may still be merged from, and takes the deletion.
        b = try merged(b, a, now: Self.start + 400 * Self.day + 1).0
        #expect(b.tombstones.count == 1 && !b.names.contains("x"))
    }

    /// A copy that knows less than the other's horizon (as a writer that drops tombstones would leave it) is
    /// refused both ways, naming the copy that is behind; one that knows enough merges.
    @Test func aCopyBehindTheOthersHorizonIsRefusedEitherWay() throws {
        let (_, replicas) = try copies(2)
        let (a, b) = (replicas[0], replicas[1])
        try a.apply([set("e", "1")], replica: ra, clock: SettableClock(Self.start))
        try b.apply([set("f", "1")], replica: rb, clock: SettableClock(Self.start + 1))
        a.horizon = (Self.start + 100) << 16
        #expect(b.knownBelow < a.horizon)
        #expect(throws: VaultError.behindHorizon(path: b.label)) { try merged(a, b, now: Self.start) }
        #expect(throws: VaultError.behindHorizon(path: b.label)) { try merged(b, a, now: Self.start) }
        b.seen[rb] = (Self.start + 100) << 16
        let (result, _) = try merged(a, b, now: Self.start)
        #expect(result.horizon == a.horizon && result.names == ["e", "f"])
    }

    // MARK: - Version 2 files

    /// A version-2 vault keeps nothing with its deletions (its file could not hold it), and a merge says nothing is kept.
    @Test func aVersion2VaultKeepsNothingAndSaysSo() throws {
        let (_, replicas) = try copies(2, version: 2)
        let (a, b) = (replicas[0], replicas[1])
        try a.apply([set("e", "e0")], replica: ra, clock: SettableClock(Self.start))
        let b0 = try merged(b, a, now: Self.start).0
        try b0.apply([set("e", "changed")], replica: rb, clock: SettableClock(Self.start + 10))
        try a.apply([.delete(entry: "e")], replica: ra, clock: SettableClock(Self.start + 20))
        let (result, report) = try merged(a, b0, now: Self.start + 30)
        #expect(result.formatVersion == 2 && report.keptDeleted.isEmpty && result.deleted.isEmpty && result.names.isEmpty)
    }

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

import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// Issue 19 §1, format version 3 (docs/FORMAT.md, "The tombstone horizon"): what each replica has seen of every other,
/// tombstones dropped once every view holds them and they are 180 days old, quiet replicas forgotten, a copy that has
/// not seen a dropped deletion refused, and a change that lost to a concurrent deletion kept with it and restorable.
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

    // MARK: - Dropping tombstones, the horizon

    /// What a replica's sync does: merge the other copy into its own and write the result (settled by it).
    func synced(_ mine: VaultDocument, _ theirs: VaultDocument, by replica: ReplicaID, at now: UInt64) throws -> VaultDocument {
        let (result, _) = try merged(mine, theirs, now: now)
        result.settle(replica: replica, now: now)
        return result
    }

    /// a wrote `x`, b wrote `y`, each took the other's, then a deleted `x` (at start + 4): returns a and b.
    func deletedAfterSyncing(_ copies: [VaultDocument]) throws -> (VaultDocument, VaultDocument) {
        var (a, b) = (copies[0], copies[1])
        try a.apply([set("x", "1")], replica: ra, clock: SettableClock(Self.start))
        try b.apply([set("y", "1")], replica: rb, clock: SettableClock(Self.start + 1))
        b = try synced(b, a, by: rb, at: Self.start + 2)
        a = try synced(a, b, by: ra, at: Self.start + 3)
        try a.apply([.delete(entry: "x")], replica: ra, clock: SettableClock(Self.start + 4))
        return (a, b)
    }

    /// a and b each wrote, a deleted `x`: the tombstone stays while b (active) has not seen the deletion, however
    /// old, and while it is younger than 180 days; once b's view (carried back to a by a merge) holds it and it is
    /// 180 days old, a's next write drops it and records the mark, which the file keeps.
    @Test func aTombstoneIsDroppedOnceEveryReplicaHasSeenItAndItIs180DaysOld() throws {
        let (key, copies) = try copies(2)
        var (a, b) = try deletedAfterSyncing(copies)
        let deletion = try #require(a.tombstones.first?.value)
        try b.apply([set("w", "1")], replica: rb, clock: SettableClock(Self.start + 150 * Self.day))
        a = try synced(a, b, by: ra, at: Self.start + 190 * Self.day)
        #expect(a.tombstones.count == 1 && a.dropped.isEmpty, "b has not seen the deletion")
        #expect(a.seen[rb]?[ra] ?? 0 < deletion.packed && a.seen[ra]?[ra] == a.replicas[ra]?.packed)

        b = try synced(b, a, by: rb, at: deletion.milliseconds + VaultDocument.tombstoneRetention - 10)
        #expect(b.seen[rb]?[ra] ?? 0 >= deletion.packed && b.tombstones.count == 1, "b's view holds the deletion")
        let young = try synced(a, b, by: ra, at: deletion.milliseconds + VaultDocument.tombstoneRetention - 1)
        #expect(young.tombstones.count == 1 && young.dropped.isEmpty, "not 180 days old")
        let old = try synced(a, b, by: ra, at: deletion.milliseconds + VaultDocument.tombstoneRetention + 1)
        #expect(old.tombstones.isEmpty && old.dropped == [ra: deletion.packed])
        #expect(old.names == ["w", "y"])
        let stored = try reopened(old, key)
        #expect(stored.dropped == old.dropped && stored.seen == old.seen && stored.tombstones.isEmpty)
        // b, which saw the deletion, merges the dropped copy both ways; nothing comes back.
        let back = try merged(b, stored, now: Self.start + 200 * Self.day).0
        #expect(back.tombstones.isEmpty && back.dropped == [ra: deletion.packed] && back.names == ["w", "y"])
        #expect(DocumentMergeTests.content(back) == DocumentMergeTests.content(try merged(stored, b, now: Self.start + 200 * Self.day).0))
    }

    /// A copy made before a deletion whose tombstone was dropped, and never merged since, is refused both ways
    /// (naming it), even after it wrote (its own clock says nothing of what it saw of a's); one that saw the
    /// deletion merges.
    @Test func aCopyThatHasNotSeenADroppedDeletionIsRefusedEvenAfterItWrote() throws {
        let (_, copies) = try copies(3)
        var (a, b, c) = (copies[0], copies[1], copies[2])
        try a.apply([set("x", "1")], replica: ra, clock: SettableClock(Self.start))
        b = try synced(b, a, by: rb, at: Self.start + 1)
        c = try merged(c, a, now: Self.start + 1).0  // c holds x, has never written: not in the table
        try b.apply([set("y", "1")], replica: rb, clock: SettableClock(Self.start + 2))
        a = try synced(a, b, by: ra, at: Self.start + 3)
        try a.apply([.delete(entry: "x")], replica: ra, clock: SettableClock(Self.start + 4))
        b = try synced(b, a, by: rb, at: Self.start + 5)
        a = try synced(a, b, by: ra, at: Self.start + 200 * Self.day)
        #expect(a.tombstones.isEmpty && a.dropped[ra] != nil)

        try c.apply([set("from-c", "1")], replica: rc, clock: SettableClock(Self.start + 300 * Self.day))
        #expect(c.names == ["from-c", "x"])
        #expect(throws: VaultError.behindHorizon(path: c.label)) { try merged(a, c, now: Self.start + 300 * Self.day) }
        #expect(throws: VaultError.behindHorizon(path: c.label)) { try merged(c, a, now: Self.start + 300 * Self.day) }
        let fine = try merged(a, b, now: Self.start + 300 * Self.day).0
        #expect(fine.names == ["y"])
    }

    /// c deleted `x` long ago and went quiet before anyone saw it, while a and b kept writing: when its deletion
    /// arrives, the merge that brings it does not drop it (b has not seen it), however old it is; once every view
    /// holds it, it goes.
    @Test func aDeletionThatArrivesLateIsNotDroppedByTheMergeThatBringsIt() throws {
        let (_, copies) = try copies(3)
        var (a, b, c) = (copies[0], copies[1], copies[2])
        try a.apply([set("x", "1")], replica: ra, clock: SettableClock(Self.start))
        b = try synced(b, a, by: rb, at: Self.start + 1)
        try b.apply([set("y", "1")], replica: rb, clock: SettableClock(Self.start + 2))
        c = try merged(c, b, now: Self.start + 3).0
        try c.apply([.delete(entry: "x")], replica: rc, clock: SettableClock(Self.start + 4))  // not synced
        try a.apply([set("a", "1")], replica: ra, clock: SettableClock(Self.start + 250 * Self.day))
        b = try synced(b, a, by: rb, at: Self.start + 250 * Self.day + 1)
        a = try synced(a, b, by: ra, at: Self.start + 250 * Self.day + 2)
        // 300 days on, c comes back and syncs with a (c merges a, then a merges c).
        c = try synced(c, a, by: rc, at: Self.start + 300 * Self.day)
        #expect(c.tombstones.count == 1 && c.dropped.isEmpty, "a and b have not seen it")
        a = try synced(a, c, by: ra, at: Self.start + 300 * Self.day + 1)
        #expect(a.tombstones.count == 1 && a.dropped.isEmpty && !a.names.contains("x"), "b has not seen it")
        // b takes it: now every view holds it (a's and c's as they wrote, b's own), and b drops it; a follows.
        b = try synced(b, a, by: rb, at: Self.start + 300 * Self.day + 2)
        #expect(b.tombstones.isEmpty && b.dropped[rc] != nil && !b.names.contains("x"))
        a = try synced(a, b, by: ra, at: Self.start + 300 * Self.day + 3)
        #expect(a.tombstones.isEmpty && a.dropped == b.dropped && a.names == b.names)
    }

    /// c synced once, then went quiet: after 180 days a writer stops waiting for it (its view is forgotten, it stays
    /// in the table) and drops what a and b have seen; c's copy is then refused rather than bringing `x` back.
    @Test func aReplicaQuietFor180DaysIsForgottenAndItsCopyRefused() throws {
        let (_, copies) = try copies(3)
        var (a, b, c) = (copies[0], copies[1], copies[2])
        try a.apply([set("x", "1")], replica: ra, clock: SettableClock(Self.start))
        try c.apply([set("c", "1")], replica: rc, clock: SettableClock(Self.start + 1))
        c = try synced(c, a, by: rc, at: Self.start + 2)
        a = try synced(a, c, by: ra, at: Self.start + 3)
        b = try synced(b, a, by: rb, at: Self.start + 4)
        try b.apply([set("y", "1")], replica: rb, clock: SettableClock(Self.start + 5))
        a = try synced(a, b, by: ra, at: Self.start + 6)
        try a.apply([.delete(entry: "x")], replica: ra, clock: SettableClock(Self.start + 7))
        b = try synced(b, a, by: rb, at: Self.start + 8)
        a = try synced(a, b, by: ra, at: Self.start + 100 * Self.day)
        #expect(a.seen[rc] != nil && a.tombstones.count == 1, "c is not quiet yet")
        a = try synced(a, b, by: ra, at: Self.start + 200 * Self.day)
        #expect(a.seen[rc] == nil && a.replicas[rc] != nil, "c's view is forgotten, c stays in the table")
        #expect(a.tombstones.isEmpty && a.dropped[ra] != nil)
        // c as it was (it changed nothing since): a holds all it holds, so either merge gives a's content.
        let caughtUp = try merged(c, a, now: Self.start + 200 * Self.day)
        #expect(caughtUp.0.names == ["c", "y"] && caughtUp.1.deleted == ["x"] && caughtUp.1.added == ["y"])
        #expect(DocumentMergeTests.content(caughtUp.0) == DocumentMergeTests.content(try merged(a, c, now: Self.start + 200 * Self.day).0))
        // c wrote since: refused both ways, naming c, rather than bringing `x` back.
        try c.apply([set("c2", "1")], replica: rc, clock: SettableClock(Self.start + 200 * Self.day))
        #expect(throws: VaultError.behindHorizon(path: c.label)) { try merged(a, c, now: Self.start + 200 * Self.day) }
        #expect(throws: VaultError.behindHorizon(path: c.label)) { try merged(c, a, now: Self.start + 200 * Self.day) }
    }

    /// a's wall clock is ten years ahead: b looks quiet to it, and a drops a tombstone b has not seen; b's copy is
    /// refused, never merged into one that brings `x` back (the check compares a's clock with a's own marks).
    @Test func aClockFarAheadOnOneMachineMakesCopiesRefuseNeverResurrect() throws {
        let (a, b) = try deletedAfterSyncing(try copies(2).copies)
        let ahead = Self.start + 3650 * Self.day
        try a.apply([set("z", "1")], replica: ra, clock: SettableClock(ahead))
        #expect(a.tombstones.isEmpty && a.seen[rb] == nil, "b looked quiet to a's clock")
        try b.apply([set("v", "1")], replica: rb, clock: SettableClock(Self.start + 5))
        #expect(throws: VaultError.behindHorizon(path: b.label)) { try merged(b, a, now: Self.start + 5) }
        #expect(throws: VaultError.behindHorizon(path: b.label)) { try merged(a, b, now: Self.start + 5) }
        #expect(b.names == ["v", "x", "y"], "b is as it was")
    }

    /// A replica active in the last 180 days whose view is not known (it wrote only version 2) holds every
    /// tombstone.
    @Test func aReplicaWhoseViewIsUnknownHoldsEveryTombstone() throws {
        let (_, copies) = try copies(2)
        var (a, b) = (copies[0], copies[1])
        try a.apply([set("x", "1")], replica: ra, clock: SettableClock(Self.start))
        try a.apply([.delete(entry: "x")], replica: ra, clock: SettableClock(Self.start + 1))
        try b.apply([set("y", "1")], replica: rb, clock: SettableClock(Self.start + 190 * Self.day))
        b.seen = [:]  // as a version-2 writer leaves it
        a = try synced(a, b, by: ra, at: Self.start + 200 * Self.day)
        #expect(a.seen[rb] == nil && a.tombstones.count == 1 && a.dropped.isEmpty)
    }

    /// Three replicas change and sync a vault at random over years (steps of seconds to 90 days; one replica often
    /// quiet for long), each write settled, so that tombstones are dropped, views forgotten and copies refused.
    /// Whatever happens: a copy never holds, live, a version of an entry older than a deletion of it that the copy
    /// has seen (itself or through a merge, the tombstone dropped since or not); a merge loses no live entry except
    /// to a deletion later than it that one of the two copies had seen; a refused merge changes nothing. Tombstones
    /// are dropped and merges refused in many histories (the property is not vacuous). Now and then a copy is put
    /// back to an older state of itself (a backup, a branch) and written on as a new replica, as `vault` does when it
    /// accepts such a file (``DocumentVault``'s rollback check): what it had seen is what that older state had seen.
    @Test(arguments: 0..<8)
    func droppingTombstonesBringsNothingBackAndLosesNothing(_ block: Int) throws {
        var drops = 0, refusals = 0
        for seed in UInt64(block * 60)..<UInt64(block * 60 + 60) {
            var random = DocumentMergeTests.Generator(state: seed)
            var documents = try copies(3).copies
            /// Per copy, every deletion it has seen (its tombstones now and before, and those of the copies it merged).
            var seen: [[DocumentID: HybridTimestamp]] = [[:], [:], [:]]
            var replicas = [ra, rb, rc]
            var snapshots: [[(VaultDocument, [DocumentID: HybridTimestamp])]] = [[], [], []]
            var nextReplica: UInt64 = 100
            var now = Self.start
            func noting(_ known: [DocumentID: HybridTimestamp], _ document: VaultDocument) -> [DocumentID: HybridTimestamp] {
                known.merging(document.tombstones, uniquingKeysWith: max)
            }
            for step in 0..<40 {
                now += random.below(4) == 0 ? UInt64(1 + random.below(90)) * Self.day : UInt64(1 + random.below(5000))
                // Replica c acts a tenth as often as the others.
                var index = random.below(3)
                if index == 2, random.below(10) != 0 { index = random.below(2) }
                let before = documents[index]
                if random.below(12) == 0, !snapshots[index].isEmpty {
                    // Put back to an older state, and written on as a new replica from here.
                    (documents[index], seen[index]) = snapshots[index][random.below(snapshots[index].count)]
                    replicas[index] = ReplicaID(rawValue: nextReplica)
                    nextReplica += 1
                    continue
                }
                if random.below(5) == 0 { snapshots[index].append((before, seen[index])) }
                if random.below(3) == 0 {
                    let otherIndex = (index + 1 + random.below(2)) % 3
                    let other = documents[otherIndex]
                    let result: VaultDocument
                    do {
                        result = try merged(before, other, now: now).0
                    } catch VaultError.behindHorizon {
                        refusals += 1
                        continue
                    }
                    result.settle(replica: replicas[index], now: now)
                    let known = noting(seen[index].merging(seen[otherIndex], uniquingKeysWith: max), result)
                    // A live entry of either side that is gone lost to a deletion later than it.
                    for side in [before, other] {
                        for (id, entry) in side.entries where result.entries[id] == nil {
                            #expect(known[id].map { $0 > entry.modified } == true, "seed \(seed) step \(step): \(entry.name) lost")
                        }
                    }
                    seen[index] = known
                    documents[index] = result
                } else {
                    let document = before.copied()
                    let clock = SettableClock(now)
                    guard (try? document.apply(DocumentMergeTests().randomBatch(document, &random), replica: replicas[index], clock: clock)) != nil else { continue }
                    seen[index] = noting(seen[index], document)
                    documents[index] = document
                }
                drops += documents[index].dropped.isEmpty ? 0 : 1
                for (id, entry) in documents[index].entries {
                    if let deletion = seen[index][id] {
                        #expect(entry.modified > deletion, "seed \(seed) step \(step): \(entry.name) came back")
                    }
                }
            }
        }
        #expect(drops > 100, "tombstones were dropped in \(drops) steps")
        #expect(refusals > 0, "\(refusals) merges were refused")
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
        #expect(old[0].tombstones.count == 1 && old[0].dropped.isEmpty && old[0].seen.isEmpty, "version 2 forgets nothing")
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

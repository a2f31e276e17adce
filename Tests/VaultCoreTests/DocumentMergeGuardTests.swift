import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// Issue 33 §2 and §3: a copy never freezes the vault (clocks from the future are refused at the merge, a vault that
/// took them in is repaired, a writer never stops for one entry) and never deletes without a trace (a table that
/// claims this replica's unmade changes, or deletions forgotten that cannot be, is refused; a deletion forgotten and
/// brought back is called what it is; many deletions at once need consent); a refused file raises no rollback record.
@Suite("Merge guards: clocks from the future, wiping tables, forgotten deletions")
struct DocumentMergeGuardTests {
    let h = DocumentHorizonTests()
    let directory = TemporaryDirectory()
    var start: UInt64 { DocumentHorizonTests.start }
    var day: UInt64 { DocumentHorizonTests.day }
    let ra = ReplicaID(rawValue: 1), rb = ReplicaID(rawValue: 2), rNew = ReplicaID(rawValue: 77)

    /// The red team's copy, made from a copy of `a` by replica b: one entry (`github`) stamped at the end of time and
    /// every clock of its table (a's too) at the largest value; sealed and opened again (what the file holds).
    func frozen(from a: VaultDocument, _ b: VaultDocument, key: SecureBytes) throws -> VaultDocument {
        let copy = try h.merged(b, a, now: start).0
        try copy.apply([h.set("github", "the end of time")], replica: rb, clock: SettableClock(HybridTimestamp.maximumMilliseconds))
        let last = { (replica: ReplicaID) in HybridTimestamp(milliseconds: HybridTimestamp.maximumMilliseconds, counter: .max, replica: replica) }
        copy.entries[copy.idsByName["github"]!]!.modified = last(rb)
        copy.replicas = copy.replicas.mapValues { last($0.replica) }
        return try h.reopened(copy, key)
    }

    func expectClockAhead(_ path: String, milliseconds: UInt64? = nil, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("merged; expected clockAhead")
        } catch VaultError.clockAhead(let refused, _, let time) {
            #expect(refused == path)
            if let milliseconds { #expect(time == milliseconds) }
        } catch {
            Issue.record("\(error)")
        }
    }

    // MARK: - §2 Clocks from the future

    @Test func aCopyWithClocksAtTheEndOfTimeIsRefusedNamingTheCopyAndTheTime() throws {
        let (key, copies) = try h.copies(2)
        let a = copies[0]
        try a.apply([h.set("github", "mine"), h.set("other", "o")], replica: ra, clock: SettableClock(start))
        let evil = try frozen(from: a, copies[1], key: key)
        expectClockAhead(evil.label, milliseconds: HybridTimestamp.maximumMilliseconds) { _ = try VaultDocument.merge(a, evil, now: start + 10) }
        #expect(h.value(a, "github") == "mine" && a.replicas[ra]?.milliseconds == start, "ours is as it was")
    }

    /// The 24-hour rule: a clock up to a day ahead of max(now, this vault's latest clock) merges; one beyond is refused,
    /// whether it is a replica's time or only an entry's stamp (a table need not hold its stamps' clocks).
    @Test func aClockMoreThanADayAheadIsRefusedAndOneWithinADayMerges() throws {
        let (key, copies) = try h.copies(2)
        let (a, b) = (copies[0], copies[1])
        try a.apply([h.set("mine", "1")], replica: ra, clock: SettableClock(start))
        let near = try h.merged(b, a, now: start).0
        try near.apply([h.set("near", "1")], replica: rb, clock: SettableClock(start + VaultDocument.maximumClockLead - 1))
        #expect(try h.merged(a, near, now: start).0.names == ["mine", "near"])
        let far = try h.merged(b, a, now: start).0
        try far.apply([h.set("far", "1")], replica: rb, clock: SettableClock(start + VaultDocument.maximumClockLead + 1_000))
        expectClockAhead(far.label, milliseconds: start + VaultDocument.maximumClockLead + 1_000) { _ = try h.merged(a, far, now: start) }
        // Only a stamp ahead (the table rolled back by hand): refused too.
        let stamp = try h.merged(b, a, now: start).0
        try stamp.apply([h.set("stamp", "1")], replica: rb, clock: SettableClock(start + 30 * day))
        stamp.replicas[rb] = HybridTimestamp(milliseconds: start, counter: 0, replica: rb)
        let stored = try h.reopened(stamp, key)
        expectClockAhead(stored.label, milliseconds: start + 30 * day) { _ = try h.merged(a, stored, now: start) }
        // A vault whose own clock is that far ahead already (its machine's wall clock was): that clock no longer
        // moves the bound (a clock taken from a hostile copy would, a day per merge), so another replica's clock beyond
        // a day is refused as anywhere ('vault repair --clocks' brings its own back); a copy that only echoes its own
        // clock (a copy of it, changed within the day) merges.
        let ahead = try h.merged(b, a, now: start).0
        try ahead.apply([h.set("ahead", "1")], replica: ra, clock: SettableClock(start + 30 * day))
        expectClockAhead(far.label) { _ = try h.merged(ahead, far, now: start) }
        let echo = try h.reopened(ahead, key)
        try echo.apply([h.set("echo", "1")], replica: rb, clock: SettableClock(start))
        #expect(try h.merged(ahead, try h.reopened(echo, key), now: start).0.names.contains("echo"))
    }

    /// The bound does not creep: a copy a day ahead merges, and gives ours a clock a day ahead; a second copy a day past
    /// that merges too (the bound counts ours's clocks within a day of now); a third, a day past the second, is refused,
    /// however many hostile copies came before (before, each merge moved the bound another day).
    @Test func theClockBoundDoesNotCreepWithEachMerge() throws {
        let (key, copies) = try h.copies(2)
        var (a, b) = (copies[0], copies[1])
        try a.apply([h.set("mine", "1")], replica: ra, clock: SettableClock(start))
        let lead = VaultDocument.maximumClockLead
        for step in UInt64(1)...2 {
            let copy = try h.merged(b, a, now: start).0
            try copy.apply([h.set("step\(step)", "1")], replica: rb, clock: SettableClock(start + step * (lead - 1)))
            b = try h.reopened(copy, key)
            a = try h.merged(a, b, now: start).0
            #expect(a.names.contains("step\(step)"))
        }
        let third = try h.merged(b, a, now: start).0
        try third.apply([h.set("step3", "1")], replica: rb, clock: SettableClock(start + 3 * (lead - 1)))
        let stored = try h.reopened(third, key)
        expectClockAhead(stored.label) { _ = try h.merged(a, stored, now: start) }
    }

    /// A vault that took such a copy in (as merges did before they refused it) is repaired: every stamp from the
    /// future is stamped again in the present, in its order, values and history kept; every write works after it,
    /// and the copy from the future is refused from then on.
    @Test func aStuckVaultIsRepairedKeepingValuesAndHistory() throws {
        let (key, copies) = try h.copies(2)
        let a = copies[0]
        try a.apply([h.set("github", "mine"), h.set("other", "o")], replica: ra, clock: SettableClock(start))
        let evil = try frozen(from: a, copies[1], key: key)
        // What the merge made of it before this change (ours's own clock at the end of time refuses nothing).
        let stuck = try h.reopened(try h.merged(evil, a, now: start + 10).0, key)
        #expect(throws: VaultError.clockExhausted) { try stuck.copied().apply([h.set("other", "x")], replica: ra, clock: SettableClock(start + 20)) }

        let preview = try stuck.copied().repairClocks(replica: rNew, now: start + 20)
        let repair = try stuck.repairClocks(replica: rNew, now: start + 20)
        #expect(repair == preview)
        #expect(repair.entries == ["github"] && repair.deletions == 0 && repair.replicas == [ra, rb])
        let stored = try h.reopened(stuck, key)
        #expect(stored.replicas.values.allSatisfy { $0.milliseconds <= start + 20 + VaultDocument.maximumClockLead })
        #expect(h.value(stored, "github") == "the end of time", "the value is kept")
        #expect(DocumentMergeTests().value(stored, "github", version: 1) == "mine", "and the history")
        #expect(try stored.copied().repairClocks(replica: rNew, now: start + 30).isEmpty, "nothing left to repair")
        try stored.apply([h.set("github", "fixed"), h.set("other", "x"), h.set("new", "n")], replica: rNew, clock: SettableClock(start + 30))
        try stored.apply([.delete(entry: "other")], replica: rNew, clock: SettableClock(start + 40))
        #expect(stored.names == ["github", "new"] && h.value(stored, "github") == "fixed")
        expectClockAhead(evil.label) { _ = try h.merged(stored, evil, now: start + 50) }
        #expect(try h.merged(stored, a, now: start + 50).0.names == ["github", "new"], "an honest copy merges")
    }

    /// Deletions from the future are repaired too: a tombstone, what it deleted and what it kept keep their order.
    @Test func aDeletionFromTheFutureIsRepairedInItsOrder() throws {
        let (key, copies) = try h.copies(2)
        let (a, b) = (copies[0], copies[1])
        try a.apply([h.set("e", "0")], replica: ra, clock: SettableClock(start))
        let b0 = try h.merged(b, a, now: start).0
        let far = start + 400 * day
        try a.apply([h.set("e", "changed")], replica: ra, clock: SettableClock(far))
        try b0.apply([.delete(entry: "e")], replica: rb, clock: SettableClock(far + 10))
        let both = try h.merged(b0, a, now: far + 20).0
        #expect(both.deleted.map(\.name) == ["e"] && both.names.isEmpty)
        let repair = try both.repairClocks(replica: rNew, now: start + 1)
        #expect(repair.deletions == 1)
        let stored = try h.reopened(both, key)
        #expect(stored.deleted.map(\.name) == ["e"])
        try stored.apply([.restoreDeleted(entry: "e")], replica: rNew, clock: SettableClock(start + 2))
        #expect(h.value(stored, "e") == "changed")
    }

    /// The writer never stops for good: with this replica's own clock at the end of time, a write is made as a new
    /// replica (the state directory names it from then on); writes to other entries, deletions and new entries work.
    @Test func aVaultWhoseOwnClockIsAtTheEndOfTimeKeepsWriting() throws {
        let path = directory.file("stuck.vault")
        let protection = RollbackProtection(stateDirectory: directory.file("state"))
        let passphrase = SecureBytes(string: "pass")
        let (document, key) = try VaultDocument.create(passphrase: passphrase, parameters: .insecureForTesting, label: path)
        try document.apply([h.set("github", "mine"), h.set("other", "o")], replica: ra, clock: SettableClock(start))
        let b = try h.reopened(document, key)
        let evil = try frozen(from: document, b, key: key)
        let stuck = try h.merged(evil, document, now: start).0
        try Data(try stuck.seal(dataKey: key)).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let vault = try DocumentVault(
            path: path, key: .passphrase(passphrase), replica: ra, clock: SettableClock(start + 100), policy: .insecureForTesting,
            rollbackProtection: protection)
        try vault.put("x", forKey: "other")
        try vault.put("n", forKey: "new")
        #expect(try vault.remove("other"))
        #expect(try vault.keys() == ["github", "new"] && vault.store.replica != ra)
        #expect(throws: VaultError.clockExhausted) { try vault.put("y", forKey: "github") }
        let repair = try vault.repairClocks(dryRun: false)
        #expect(repair.entries == ["github"])
        try vault.put("y", forKey: "github")
        #expect(try vault.getString("github") == "y")
    }

    // MARK: - §3 A copy never deletes without a trace

    /// A copy with no entries and no tombstones, whose replica table and dropped marks claim to be ahead of every
    /// replica (this one's included), would take every entry it lacks as deleted and forgotten.
    func wiper(after a: VaultDocument, key: SecureBytes, base: VaultDocument, extra: UInt64 = 1 << 16, fake: ReplicaID? = nil) throws -> VaultDocument {
        let wiper = base.copied()
        var table = a.replicas.mapValues { HybridTimestamp(packed: $0.packed + extra, replica: $0.replica) }
        if let fake { table[fake] = HybridTimestamp(milliseconds: start + 5, counter: 0, replica: fake) }
        wiper.replicas = table
        wiper.dropped = table.mapValues(\.packed)
        return try h.reopened(wiper, key)
    }

    @Test func aWipingTableIsRefusedAndNothingIsRemoved() throws {
        let (key, copies) = try h.copies(3)
        let a = copies[0]
        try a.apply([h.set("x", "1"), h.set("y", "2")], replica: ra, clock: SettableClock(start))
        try a.apply([h.set("x", "changed a moment ago")], replica: ra, clock: SettableClock(start + 100))
        // Ahead of this replica's own clock: a claim of changes it never made.
        let ahead = try wiper(after: a, key: key, base: copies[1])
        do {
            try ahead.checkClaims(about: ra, ownClock: a.replicas[ra]!.packed, mergingInto: a, now: start + 200)
            Issue.record("a claim of this replica's unmade changes was taken")
        } catch VaultError.untrustedCopy(let path, let reason) {
            #expect(path == ahead.label && reason.contains(ra.description))
        }
        // Even a merge that does not know which replica is ours refuses it: entries changed within 180 days are gone
        // from it without a deletion.
        #expect(throws: VaultError.self) { try h.merged(a, ahead, now: start + 200) }
        // This replica's clock copied exactly, a replica of its own making ahead: refused all the same.
        let exact = try wiper(after: a, key: key, base: copies[2], extra: 0, fake: ReplicaID(rawValue: 99))
        #expect(throws: VaultError.self) {
            try exact.checkClaims(about: ra, ownClock: a.replicas[ra]!.packed, mergingInto: a, now: start + 200)
        }
        #expect(throws: VaultError.self) { try h.merged(a, exact, now: start + 200) }
        #expect(a.names == ["x", "y"])
    }

    /// A copy whose dropped mark covers a deletion made here a moment ago would drop its tombstone, and the change it
    /// keeps, without a trace: refused; the deletion stays listed and restorable.
    @Test func aDroppedMarkOverAYoungTombstoneIsRefused() throws {
        let (key, copies) = try h.copies(2)
        let (a, b) = (copies[0], copies[1])
        try a.apply([h.set("x", "1")], replica: ra, clock: SettableClock(start))
        let b0 = try h.merged(b, a, now: start).0
        try b0.apply([h.set("x", "changed on b")], replica: rb, clock: SettableClock(start + 10))
        try a.apply([.delete(entry: "x")], replica: ra, clock: SettableClock(start + 20))
        let kept = try h.merged(a, b0, now: start + 30).0
        #expect(kept.deleted.map(\.name) == ["x"])
        let forged = kept.copied()
        forged.tombstones = [:]
        forged.deletions = [:]
        forged.dropped = [ra: kept.replicas[ra]!.packed]
        let stored = try h.reopened(forged, key)
        do {
            _ = try h.merged(kept, stored, now: start + 40)
            Issue.record("merged: the kept change would be gone")
        } catch VaultError.untrustedCopy(let path, _) {
            #expect(path == stored.label)
        }
        #expect(kept.deleted.map(\.name) == ["x"] && kept.tombstones.count == 1)
    }

    /// After the horizon dropped a tombstone, a copy whose table says it saw the deletion but still holds the entry
    /// brings it back as resurrected, not as added.
    @Test func anEntryBroughtBackAfterItsTombstoneWasDroppedIsReportedResurrected() throws {
        let (key, copies) = try h.copies(2)
        let (a, b) = try h.deletedAfterSyncing(copies)  // b holds x, a deleted it
        let deletion = try #require(a.tombstones.first?.value)
        let bSaw = try h.synced(b, a, by: rb, at: deletion.milliseconds + 10)
        let old = try h.synced(a, bSaw, by: ra, at: deletion.milliseconds + VaultDocument.tombstoneRetention + 1)
        #expect(old.tombstones.isEmpty && old.dropped[ra] == deletion.packed && old.names == ["y"])
        // b as it was before it saw the deletion (it holds x), its table raised to claim it saw everything.
        let stale = b.copied()
        stale.replicas = old.replicas
        let stored = try h.reopened(stale, key)
        let (result, report) = try h.merged(old, stored, now: deletion.milliseconds + VaultDocument.tombstoneRetention + 2)
        #expect(result.names == ["x", "y"])
        #expect(report.resurrected == ["x"] && report.added.isEmpty, "called what it is")
    }

    // MARK: - Many deletions at once; the rollback record

    @Test func aMergeThatDeletesManyEntriesNeedsConsent() throws {
        let path = directory.file("many.vault")
        let passphrase = SecureBytes(string: "pass")
        try DocumentStore(storage: LocalFileStorage(path: path), replica: ra, policy: .insecureForTesting)
            .create(passphrase: passphrase, parameters: .insecureForTesting)
        let vault = try DocumentVault(path: path, key: .passphrase(passphrase), replica: ra, clock: SettableClock(start), policy: .insecureForTesting)
        try vault.apply((0..<12).map { h.set("e\($0)", "v") })
        let copy = try #require(vault.document).copied()
        try copy.apply((0..<11).map { .delete(entry: "e\($0)") }, replica: rb, clock: SettableClock(start + 10))
        let bytes = try copy.seal(dataKey: try #require(vault.store.dataKey))
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(throws: VaultError.massDeletion(path: "other", names: (0..<11).map { "e\($0)" }.sorted())) {
            try vault.merge(bytes, label: "other", dryRun: false, otherPassphrase: nil)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "nothing written")
        #expect(try vault.merge(bytes, label: "other", dryRun: true, otherPassphrase: nil).deleted.count == 11, "a dry run says it")
        let report = try vault.merge(bytes, label: "other", dryRun: false, otherPassphrase: nil, acceptDeletions: true)
        #expect(try report.deleted.count == 11 && vault.keys() == ["e11"])
        // Ten at most, or a tenth of the vault at most: no question.
        #expect(!MergeReport(deletedCount: 10).isMassDeletion(outOf: 12) && !MergeReport(deletedCount: 11).isMassDeletion(outOf: 110))
        #expect(MergeReport(deletedCount: 11).isMassDeletion(outOf: 109))
    }

    /// Another machine's newer file put over this one is refused (it lacks this machine's own latest write); the
    /// refusal raises no record, so this machine's own file, put back, opens, and merging the other one works.
    @Test func aRefusedFileDoesNotPoisonTheRollbackRecord() throws {
        let path = directory.file("mine.vault")
        let stateA = RollbackProtection(stateDirectory: directory.file("state-a"))
        let stateB = RollbackProtection(stateDirectory: directory.file("state-b"))
        let passphrase = SecureBytes(string: "pass")
        try DocumentStore(storage: LocalFileStorage(path: path), replica: ra, policy: .insecureForTesting)
            .create(passphrase: passphrase, parameters: .insecureForTesting)
        func open(_ at: String, _ protection: RollbackProtection, _ replica: ReplicaID) throws -> DocumentVault {
            try DocumentVault(path: at, key: .passphrase(passphrase), replica: replica, policy: .insecureForTesting, rollbackProtection: protection)
        }
        let a = try open(path, stateA, ra)
        try a.put("shared", forKey: "k")
        let machineB = directory.file("b.vault")
        try FileManager.default.copyItem(atPath: path, toPath: machineB)
        try a.put("only on A", forKey: "a-only")
        a.close()
        let b = try open(machineB, stateB, rb)
        for round in 0..<3 { try b.put("b\(round)", forKey: "b-\(round)") }
        b.close()
        let mine = try Data(contentsOf: URL(fileURLWithPath: path))
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: machineB, toPath: path)
        #expect(throws: VaultError.missingOwnWrites(path: path)) { try open(path, stateA, ra) }
        try FileManager.default.removeItem(atPath: path)
        try mine.write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let restored = try open(path, stateA, ra)
        #expect(try restored.keys() == ["a-only", "k"])
        _ = try restored.merge(try Array(Data(contentsOf: URL(fileURLWithPath: machineB))), label: machineB, dryRun: false, otherPassphrase: nil)
        #expect(try restored.keys() == ["a-only", "b-0", "b-1", "b-2", "k"])
    }
}

extension MergeReport {
    /// A report of `deletedCount` deletions (for the threshold).
    init(deletedCount: Int) {
        self.init()
        deleted = (0..<deletedCount).map { "e\($0)" }
    }
}

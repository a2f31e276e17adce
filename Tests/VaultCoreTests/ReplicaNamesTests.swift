import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// Issue 35 §1: replicas' names in the `replica_names` stanza (docs/FORMAT.md "Replica names"): sealed, carried by
/// every seal, united by a merge (the later per replica, in any order), skipped when unreadable, and what a merge
/// report's lost edits name.
@Suite struct ReplicaNamesTests {
    static let start: UInt64 = 1_764_000_000_000
    let a = ReplicaID(rawValue: 0xA), b = ReplicaID(rawValue: 0xB)

    struct Clock: WallClock { let now: UInt64; func milliseconds() -> UInt64 { now } }

    func copies() throws -> (VaultDocument, VaultDocument, SecureBytes) {
        let (base, key) = try VaultDocument.create(
            passphrase: SecureBytes(string: "p"), parameters: .insecureForTesting, label: "base")
        try base.apply([.setField(entry: "web/gitlab", field: "password", value: SecureBytes(string: "0"))], replica: a, clock: Clock(now: Self.start - 100))
        let file = try base.seal(dataKey: key)
        let one = try VaultDocument.open(file, with: .dataKey(key), label: "one", policy: .insecureForTesting).document
        let two = try VaultDocument.open(file, with: .dataKey(key), label: "two", policy: .insecureForTesting).document
        return (one, two, key)
    }

    @Test func namesAreSealedAndReadBackAndTheHeaderShowsNone() throws {
        let (document, _, key) = try copies()
        #expect(document.setName("alice@laptop", of: a, now: Self.start))
        #expect(!document.setName("alice@laptop", of: a, now: Self.start), "the same name: no change")
        #expect(!document.setName("bad\u{1}", of: a, now: Self.start))
        let file = try document.seal(dataKey: key)
        #expect(file.firstRange(of: Array("alice".utf8)) == nil, "the name is sealed, not in the header's clear text")
        let header = try DocumentHeader.parse(file, label: "t", policy: .insecureForTesting)
        #expect(header.stanzaTypes == ["argon2id"], "not a key stanza")
        #expect(header.stanzas.map(\.type) == [1, 5])
        let opened = try VaultDocument.open(file, with: .dataKey(key), label: "t", policy: .insecureForTesting).document
        #expect(opened.replicaNames == [a: ReplicaName(name: "alice@laptop", time: Self.start << 16)])
        #expect(opened.stanzas.map(\.type) == [1], "taken out of the stanzas: each seal writes it anew")
        // Sealed again: the names once, under a fresh nonce.
        let again = try opened.seal(dataKey: key)
        #expect(try DocumentHeader.parse(again, label: "t", policy: .insecureForTesting).stanzas.map(\.type) == [1, 5])
    }

    @Test func aStanzaThatDoesNotOpenIsKeptAsAnUnknownOne() throws {
        let (document, _, key) = try copies()
        let garbage = KeyStanza(type: KeyStanza.replicaNames, body: [UInt8](repeating: 7, count: 60))
        document.stanzas.append(garbage)
        let opened = try VaultDocument.open(try document.seal(dataKey: key), with: .dataKey(key), label: "t", policy: .insecureForTesting).document
        #expect(opened.replicaNames.isEmpty)
        #expect(opened.stanzas.last == garbage, "written back unchanged, as a stanza of a type not known")
    }

    @Test func aMergeTakesTheLaterNameOfEachReplicaInEitherOrder() throws {
        let (one, two, _) = try copies()
        one.setName("alice@old", of: a, now: Self.start)
        two.setName("alice@new", of: a, now: Self.start + 5)
        two.setName("bob@desk", of: b, now: Self.start)
        let (ab, _) = try VaultDocument.merge(one, two, now: Self.start + 10)
        let (ba, _) = try VaultDocument.merge(two, one, now: Self.start + 10)
        #expect(ab.replicaNames == ba.replicaNames)
        #expect(ab.replicaNames.mapValues(\.name) == [a: "alice@new", b: "bob@desk"])
        // A rename only: the other copy lacks it (a sync sends it).
        let (_, report) = try VaultDocument.merge(two, one, now: Self.start + 10)
        #expect(report.otherLacks)
    }

    @Test func theLostEditNamesTheWinnerAndTheVersion() throws {
        let (one, two, _) = try copies()
        try one.apply([.setField(entry: "web/gitlab", field: "password", value: SecureBytes(string: "mine"))], replica: a, clock: Clock(now: Self.start))
        try two.apply([.setField(entry: "web/gitlab", field: "password", value: SecureBytes(string: "theirs"))], replica: b, clock: Clock(now: Self.start + 1))
        two.setName("bob@desk", of: b, now: Self.start + 1)
        let (_, report) = try VaultDocument.merge(one, two, now: Self.start + 10)
        #expect(report.lostEdits == [MergeReport.LostEdit(name: "web/gitlab", winner: b, winnerName: "bob@desk", loser: a, version: 1)])
        // The other way round, nothing of theirs's lost: its version won.
        let (_, back) = try VaultDocument.merge(two, one, now: Self.start + 10)
        #expect(back.lostEdits.isEmpty && back.conflicts == ["web/gitlab"] && back.updated.isEmpty)
        #expect(back.wonConflicts == [MergeReport.WonConflict(name: "web/gitlab", loser: a, loserName: nil, version: 1)])
    }

    /// Issue 35 §1: a change of this replica that lost at a merge made elsewhere (the other copy holds it only as a
    /// `conflict` version) is reported when that copy comes in (a fast-forward's report), once, as a conflict; so is
    /// one that won there.
    @Test func aChangeThatLostAtAMergeMadeElsewhereIsReportedToItsReplica() throws {
        let (one, two, _) = try copies()
        try one.apply([.setField(entry: "web/gitlab", field: "password", value: SecureBytes(string: "mine"))], replica: a, clock: Clock(now: Self.start))
        try two.apply([.setField(entry: "web/gitlab", field: "password", value: SecureBytes(string: "theirs"))], replica: b, clock: Clock(now: Self.start + 1))
        two.setName("bob@desk", of: b, now: Self.start + 1)
        let (merged, there) = try VaultDocument.merge(two, one, now: Self.start + 10, replica: b)
        #expect(there.wonConflicts.map(\.name) == ["web/gitlab"] && there.lostEdits.isEmpty)

        let (_, here) = try VaultDocument.merge(one, merged, now: Self.start + 20, replica: a)
        #expect(here.lostEdits == [MergeReport.LostEdit(name: "web/gitlab", winner: b, winnerName: "bob@desk", loser: a, version: 1)])
        #expect(here.conflicts == ["web/gitlab"] && here.updated.isEmpty && here.wonConflicts.isEmpty)
        // Another replica holding the same copy did not make that change: an update for it, as for an unknown replica.
        for replica in [ReplicaID(rawValue: 77), nil] {
            let (_, other) = try VaultDocument.merge(one, merged, now: Self.start + 20, replica: replica)
            #expect(other.lostEdits.isEmpty && other.conflicts.isEmpty && other.updated == ["web/gitlab"])
        }
        // The other order: the change that lost merged here first, then the winner takes that copy.
        let (mergedHere, _) = try VaultDocument.merge(one, two, now: Self.start + 10, replica: a)
        let (_, winner) = try VaultDocument.merge(two, mergedHere, now: Self.start + 20, replica: b)
        #expect(winner.wonConflicts == [MergeReport.WonConflict(name: "web/gitlab", loser: a, loserName: nil, version: 1)])
        #expect(winner.conflicts == ["web/gitlab"] && winner.updated.isEmpty && winner.lostEdits.isEmpty)
        let (_, bystander) = try VaultDocument.merge(two, mergedHere, now: Self.start + 20, replica: a)
        #expect(bystander.isEmpty && bystander.wonConflicts.isEmpty, "\(bystander)")
        // Once taken, nothing more: the change lost is no longer this copy's version.
        let (taken, _) = try VaultDocument.merge(one, merged, now: Self.start + 20, replica: a)
        let (_, again) = try VaultDocument.merge(taken, merged, now: Self.start + 30, replica: a)
        #expect(again.isEmpty && again.lostEdits.isEmpty)
    }
}

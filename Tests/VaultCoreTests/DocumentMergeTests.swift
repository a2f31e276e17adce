import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// Issue 19 §1: the merge of two copies of one vault, a pure function on documents: the rules, and property tests
/// that random changes on three replicas, merged in every order, converge to the same content.
@Suite("Document merge")
struct DocumentMergeTests {
    static let passphrase = SecureBytes(string: "correct horse battery staple")
    static let start: UInt64 = 1_764_000_000_000

    /// A vault and `count` copies of it, each to be changed as its own replica.
    func copies(_ count: Int) throws -> (base: VaultDocument, key: SecureBytes, copies: [VaultDocument]) {
        let (base, key) = try VaultDocument.create(passphrase: Self.passphrase, parameters: .insecureForTesting, label: "base")
        let file = try base.seal(dataKey: key)
        let copies = try (0..<count).map { index in
            try VaultDocument.open(file, with: .dataKey(key), label: "copy \(index)", policy: .insecureForTesting).document
        }
        return (base, key, copies)
    }

    func set(_ entry: String, _ value: String, field: String = "password") -> DocumentChange {
        .setField(entry: entry, field: field, value: SecureBytes(string: value))
    }

    func value(_ document: VaultDocument, _ entry: String, _ field: String = "password", version: Int? = nil) -> String? {
        document.value(of: field, in: entry, version: version).map { String(decoding: $0.unprotectedBytes, as: UTF8.self) }
    }

    /// Everything a document holds but its label, arena layout and key stanzas, as text: equal content, equal text.
    static func content(_ document: VaultDocument) -> String {
        func fields(_ fields: [VaultDocument.Field]) -> String {
            document.values.withUnsafeBytes { all in
                fields.map { "\($0.name)=\($0.isSecret ? "s" : "p"):" + Posix.hex(Array(all[$0.value])) }.joined(separator: ",")
            }
        }
        var lines = ["generation \(document.generation)"]
        lines += document.replicas.sorted { $0.key < $1.key }.map { "replica \($0.key) \($0.value)" }
        lines += document.tombstones.sorted { $0.key < $1.key }.map { id, time in
            let deletion = document.deletion(of: id)
            let kept = deletion.kept.map { " kept \($0.name) \($0.version.modified) \($0.version.conflict) [\(fields($0.version.fields))]" } ?? ""
            return "tombstone \(id) \(time) of \(deletion.of)" + kept
        }
        lines.append("format \(document.formatVersion)")
        lines += document.dropped.sorted { $0.key < $1.key }.map { "dropped \($0.key) \($0.value)" }
        lines += document.seen.sorted { $0.key < $1.key }.map { replica, view in
            "seen \(replica) " + view.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        }
        for entry in document.entries.values.sorted(by: { $0.id < $1.id }) {
            lines.append("entry \(entry.id) \(entry.name) \(entry.created) \(entry.modified) [\(fields(entry.fields))]")
            lines += entry.history.map { "  version \($0.modified) \($0.conflict) [\(fields($0.fields))]" }
        }
        lines += document.idsByName.sorted { $0.key < $1.key }.map { "name \($0.key) \($0.value)" }
        lines += document.replicaNames.sorted { $0.key < $1.key }.map { "replica name \($0.key) \($0.value.name) \($0.value.time)" }
        return lines.joined(separator: "\n")
    }

    func merged(_ a: VaultDocument, _ b: VaultDocument) throws -> VaultDocument {
        try VaultDocument.merge(a, b, now: Self.start + 10_000_000).0
    }

    // MARK: - Rules

    @Test func aChangeOnOneSideIsTakenAndBothSidesGiveAConflictInTheHistory() throws {
        let (_, _, replicas) = try copies(2)
        let (a, b) = (replicas[0], replicas[1])
        let clock = SettableClock(Self.start)
        let (ra, rb) = (ReplicaID(rawValue: 1), ReplicaID(rawValue: 2))
        try a.apply([set("shared", "v1"), set("only-a", "a")], replica: ra, clock: clock)
        let common = try merged(b, a)
        clock.set(Self.start + 10)
        try a.apply([set("shared", "from a")], replica: ra, clock: clock)
        clock.set(Self.start + 20)
        try common.apply([set("shared", "from b")], replica: rb, clock: clock)

        let (result, report) = try VaultDocument.merge(a, common, now: Self.start)
        #expect(value(result, "shared") == "from b", "the later change wins")
        #expect(value(result, "shared", version: 1) == "from a", "the other is kept")
        let history = try #require(result.history(of: "shared"))
        #expect(history.map(\.conflict) == [true, false], "v1 is an ancestor of both: no conflict")
        #expect(value(result, "shared", version: 2) == "v1")
        #expect(report.conflicts == ["shared"] && report.updated.isEmpty && report.added.isEmpty, "a conflict is counted once")
        #expect(value(result, "only-a") == "a")

        // Descending from the other side's version is no conflict: merging the result again changes nothing.
        let (again, second) = try VaultDocument.merge(result, common, now: Self.start)
        #expect(second.isEmpty, "\(second)")
        #expect(Self.content(again) == Self.content(result))
    }

    @Test func aDeletionWinsOverAnOlderVersionAndALaterVersionBringsTheEntryBack() throws {
        let (_, _, replicas) = try copies(2)
        let (a, b) = (replicas[0], replicas[1])
        let clock = SettableClock(Self.start)
        let (ra, rb) = (ReplicaID(rawValue: 1), ReplicaID(rawValue: 2))
        try a.apply([set("gone", "1"), set("back", "1")], replica: ra, clock: clock)
        let bCopy = try merged(b, a)
        clock.set(Self.start + 10)
        try a.apply([.delete(entry: "gone"), .delete(entry: "back")], replica: ra, clock: clock)
        clock.set(Self.start + 20)
        try bCopy.apply([set("back", "2")], replica: rb, clock: clock)  // after the deletion

        let (result, report) = try VaultDocument.merge(a, bCopy, now: Self.start)
        #expect(result.names == ["back"])
        #expect(value(result, "back") == "2")
        #expect(report.resurrected == ["back"] && report.deleted.isEmpty)
        let (fromB, reportB) = try VaultDocument.merge(bCopy, a, now: Self.start)
        #expect(reportB.deleted == ["gone"] && reportB.resurrected.isEmpty)
        #expect(Self.content(fromB) == Self.content(result))
        #expect(result.tombstones.count == 1, "an id is never both live and deleted")
    }

    @Test func twoIdsWithOneNameKeepTheFirstCreatedAndRenameTheOther() throws {
        let (_, _, replicas) = try copies(2)
        let (a, b) = (replicas[0], replicas[1])
        try a.apply([set("github", "first")], replica: ReplicaID(rawValue: 1), clock: SettableClock(Self.start))
        try b.apply([set("github", "second")], replica: ReplicaID(rawValue: 2), clock: SettableClock(Self.start + 5))
        let (result, report) = try VaultDocument.merge(b, a, now: Self.start, replica: ReplicaID(rawValue: 2))
        let second = try #require(b.entry("github")).id
        let renamed = "github~" + second.description.prefix(8)
        #expect(result.names == ["github", renamed])
        #expect(value(result, "github") == "first" && value(result, renamed) == "second")
        // B's own entry was renamed; A's took its name (not "added"); B's was changed last.
        #expect(report.renamed == [.init(
            from: "github", to: renamed, owner: ReplicaID(rawValue: 2), keeper: ReplicaID(rawValue: 1), yours: true, keptByYou: false,
            renamedIsNewer: true)])
        #expect(report.added.isEmpty)
        // The other side: B's entry is new there, said by the rename line alone.
        let (_, reportA) = try VaultDocument.merge(a, b, now: Self.start, replica: ReplicaID(rawValue: 1))
        #expect(reportA.renamed == [.init(
            from: "github", to: renamed, owner: ReplicaID(rawValue: 2), keeper: ReplicaID(rawValue: 1), yours: false, keptByYou: true,
            renamedIsNewer: true)])
        #expect(reportA.added.isEmpty)
        #expect(Self.content(try merged(a, b)) == Self.content(result))
        // The renamed version meets its unrenamed self (same clock): the rename stays.
        #expect(Self.content(try merged(result, b)) == Self.content(result))
        // Said once: a later merge of the result with a copy that holds the rename gives the same name again, silently.
        try b.apply([set("other", "x")], replica: ReplicaID(rawValue: 2), clock: SettableClock(Self.start + 9))
        let (_, again) = try VaultDocument.merge(result, try merged(b, a), now: Self.start, replica: ReplicaID(rawValue: 1))
        #expect(again.renamed.isEmpty && again.added == ["other"], "\(again)")
    }

    /// The entry that kept the name is deleted: the renamed one has its name again at the next merge, and the merge
    /// says so (note 4: only "deleted: github" was said, and github was still there).
    @Test func aRenamedEntryHasItsNameAgainWhenTheNameIsFreeAndTheMergeSaysSo() throws {
        let (_, _, replicas) = try copies(2)
        let (a, b) = (replicas[0], replicas[1])
        let (ra, rb) = (ReplicaID(rawValue: 1), ReplicaID(rawValue: 2))
        try a.apply([set("github", "first")], replica: ra, clock: SettableClock(Self.start))
        try b.apply([set("github", "second")], replica: rb, clock: SettableClock(Self.start + 5))
        let bothA = try merged(a, b), bothB = try merged(b, a)
        let renamed = "github~" + (try #require(b.entry("github")).id.description.prefix(8))
        #expect(bothB.names == ["github", renamed])
        try bothA.apply([.delete(entry: "github")], replica: ra, clock: SettableClock(Self.start + 10))

        let (result, report) = try VaultDocument.merge(bothB, bothA, now: Self.start, replica: rb)
        #expect(result.names == ["github"] && value(result, "github") == "second")
        #expect(report.deleted == ["github"])
        #expect(report.namedBack == [.init(from: renamed, to: "github")])
        #expect(report.moved.isEmpty && report.renamed.isEmpty && report.updated.isEmpty)
        // Said once: merging the result again names nothing back.
        let (_, again) = try VaultDocument.merge(result, bothA, now: Self.start, replica: rb)
        #expect(again.namedBack.isEmpty)
    }

    @Test func anotherVaultIsRefusedAndTheGenerationIsAboveBoth() throws {
        let (_, _, replicas) = try copies(2)
        let (other, _) = try VaultDocument.create(passphrase: Self.passphrase, parameters: .insecureForTesting, label: "other")
        #expect(throws: VaultError.notTheSameVault(path: "other")) { try VaultDocument.merge(replicas[0], other, now: Self.start) }
        replicas[0].generation = 7
        replicas[1].generation = 9
        let (result, _) = try VaultDocument.merge(replicas[0], replicas[1], now: Self.start)
        #expect(result.generation == 9)
    }

    /// A copy with a clock more than a day ahead of max(now, the vault's own latest clock) is refused (issue 33 §2);
    /// a vault whose own clock is that far ahead already merges it, says so, and does not take the clock for its own.
    @Test func aClockFarAheadIsRefusedOrReportedAndNotAdopted() throws {
        let (_, _, replicas) = try copies(2)
        let (a, b) = (replicas[0], replicas[1])
        let future = Self.start + 30 * 86_400_000  // a machine set a month ahead
        try b.apply([set("from-the-future", "x")], replica: ReplicaID(rawValue: 2), clock: SettableClock(future))
        #expect(throws: VaultError.clockAhead(path: b.label, replica: ReplicaID(rawValue: 2), milliseconds: future)) {
            try VaultDocument.merge(a, b, now: Self.start)
        }
        let (result, report) = try VaultDocument.merge(b, a, now: Self.start)
        #expect(report.replicasAhead == [ReplicaID(rawValue: 2)])
        #expect(value(result, "from-the-future") == "x", "its entries are kept")
        try result.apply([set("mine", "y")], replica: ReplicaID(rawValue: 1), clock: SettableClock(Self.start + 1))
        #expect(try #require(result.entry("mine")).modified.milliseconds == Self.start + 1, "the far clock was not adopted")
        // A change to the far-ahead entry itself comes after it, and the next merge keeps it.
        try result.apply([set("from-the-future", "mine now")], replica: ReplicaID(rawValue: 1), clock: SettableClock(Self.start + 2))
        #expect(value(try merged(result, b), "from-the-future") == "mine now")
        try result.apply([.delete(entry: "from-the-future")], replica: ReplicaID(rawValue: 1), clock: SettableClock(Self.start + 3))
        #expect(try merged(result, b).names == ["mine"], "a deletion of it stays deleted")
    }

    // MARK: - Properties

    /// The suite's seeded generator (``SplitMix64``), with a bounded draw.
    struct Generator {
        var base: SplitMix64
        init(state: UInt64) { base = SplitMix64(seed: state) }
        mutating func below(_ n: Int) -> Int { Int(base.next() % UInt64(n)) }
    }

    /// A random batch on `document`: sets, field removals, deletions, renames, copies, restores (failing
    /// batches are skipped, as a user's command would fail).
    func randomBatch(_ document: VaultDocument, _ random: inout Generator) -> [DocumentChange] {
        let names = ["a", "b", "c", "d", "e"]
        let live = document.names
        var batch: [DocumentChange] = []
        for _ in 0..<(1 + random.below(3)) {
            let name = names[random.below(names.count)]
            switch random.below(10) {
            case 0...4: batch.append(set(name, "v\(random.below(1000))", field: ["password", "username", "notes"][random.below(3)]))
            case 5: if live.contains(name) { batch.append(.delete(entry: name)) }
            case 6: if live.contains(name) { batch.append(.rename(from: name, to: names[random.below(names.count)], replacing: true)) }
            case 7: if live.contains(name) { batch.append(.copy(from: name, to: names[random.below(names.count)], replacing: true)) }
            case 8: if live.contains(name) { batch.append(.removeField(entry: name, field: "username")) }
            default: if live.contains(name) { batch.append(.restore(entry: name, version: 1)) }
            }
        }
        return batch
    }

    /// Two canonically equivalent names are one name: when the entry that holds it changes, the name is kept under
    /// the spelling of the entry that holds it now (a dictionary key keeps the bytes it was first stored with).
    @Test func aNameTakenOverUnderAnotherSpellingIsListedAsItIsSpelled() throws {
        let (_, _, replicas) = try copies(2)
        let (a, b) = (replicas[0], replicas[1])
        let clock = SettableClock(Self.start)
        try a.apply([set("\u{E9}", "nfc")], replica: ReplicaID(rawValue: 1), clock: clock)
        let common = try merged(b, a)
        clock.set(Self.start + 10)
        try common.apply([.delete(entry: "\u{E9}"), set("e\u{301}", "nfd")], replica: ReplicaID(rawValue: 2), clock: clock)
        let result = try merged(a, common)
        #expect(result.names.map { Array($0.utf8) } == [Array("e\u{301}".utf8)])
        #expect(value(result, "e\u{301}") == "nfd")
    }

    /// A copy opened against ours (the entries it holds as ours was last sealed are shared with ours, its arena
    /// begun as a copy of ours's: what `vault merge`, a sync and git's driver do) is what the same copy opened
    /// alone is, and merges to the same result with the same report, whether ours was sealed or opened last and
    /// changed since or not; the result seals to the same content; and it keeps its values when ours is gone.
    @Test(arguments: 0..<4)
    func aCopyOpenedAgainstOursMergesAsOneOpenedAlone(_ block: Int) throws {
        var shared = 0
        for seed in UInt64(block * 40)..<UInt64(block * 40 + 40) {
            var random = Generator(state: seed)
            let (_, key, replicas) = try copies(2)
            var documents = replicas
            let clocks = (0..<2).map { _ in SettableClock(Self.start) }
            func open(_ file: [UInt8], against reference: VaultDocument? = nil) throws -> VaultDocument {
                try VaultDocument.open(file, with: .dataKey(key), label: "copy", policy: .insecureForTesting, against: reference).document
            }
            try documents[0].apply((0..<40).map { set("n\($0)", "v\($0)") }, replica: ReplicaID(rawValue: 1), clock: clocks[0])
            documents[1] = try merged(documents[1], documents[0])
            for step in 0..<10 {
                let index = random.below(2)
                clocks[index].set(Self.start + UInt64(step * 10 + random.below(25)))
                if random.below(5) == 0 {
                    documents[index] = try merged(documents[index], documents[1 - index])
                } else {
                    // Now and then a replica the other side has never seen (another table: nothing is shared then).
                    let writer = ReplicaID(rawValue: random.below(6) == 0 ? UInt64(10 + step) : UInt64(index + 1))
                    try? documents[index].apply(randomBatch(documents[index], &random), replica: writer, clock: clocks[index])
                }
            }
            let oursFile = try documents[0].seal(dataKey: key)
            var ours = documents[0]
            if random.below(2) == 0 { ours = try open(oursFile) }  // what it was last sealed into: the file it opened
            if random.below(2) == 0 {
                // Changed since (a batch after the seal: the entries it changed are not the sealed bytes).
                ours = ours.copied()
                try? ours.apply(randomBatch(ours, &random), replica: ReplicaID(rawValue: 1), clock: clocks[0])
            }
            let theirsFile = try documents[1].seal(dataKey: key)
            let alone = try open(theirsFile)
            let against = try open(theirsFile, against: ours)
            #expect(Self.content(against) == Self.content(alone), "seed \(seed)")
            shared += against.entries.values.filter { ours.entries[$0.id]?.identity == $0.identity }.count
            let (expected, expectedReport) = try VaultDocument.merge(ours, alone, now: Self.start + 10_000_000)
            let (result, report) = try VaultDocument.merge(ours, against, now: Self.start + 10_000_000)
            #expect(Self.content(result) == Self.content(expected), "seed \(seed)")
            #expect(report == expectedReport, "seed \(seed)")
            #expect(Self.content(try open(try result.seal(dataKey: key))) == Self.content(try open(try expected.seal(dataKey: key))), "seed \(seed)")
            // Ours gone (the copy's basis is weak; the result holds the arena it shares with the copy).
            func mergedWithoutOurs() throws -> VaultDocument {
                let ours = try open(oursFile)
                return try VaultDocument.merge(ours, try open(theirsFile, against: ours), now: Self.start + 10_000_000).0
            }
            let detached = try mergedWithoutOurs()
            #expect(Self.content(detached) == Self.content(try VaultDocument.merge(try open(oursFile), alone, now: Self.start + 10_000_000).0), "seed \(seed)")
        }
        #expect(shared > 0, "no entry was shared")
    }

    /// Three replicas change a vault at random, merging with each other now and then; at the end every order of
    /// merging the three gives the same content, merging is idempotent, and merging twice changes nothing.
    @Test(arguments: 0..<20)
    func randomChangesOnThreeReplicasConvergeInEveryOrder(_ block: Int) throws {
        for seed in UInt64(block * 150)..<UInt64(block * 150 + 150) {
            var random = Generator(state: seed)
            let (_, _, replicas) = try copies(3)
            var documents = replicas
            let clocks = (0..<3).map { _ in SettableClock(Self.start) }
            for step in 0..<12 {
                let index = random.below(3)
                // Wall clocks that drift and sometimes go back.
                clocks[index].set(Self.start + UInt64(step * 10 + random.below(25)))
                if random.below(4) == 0 {
                    let other = (index + 1 + random.below(2)) % 3
                    documents[index] = try merged(documents[index], documents[other])
                } else {
                    try? documents[index].apply(randomBatch(documents[index], &random), replica: ReplicaID(rawValue: UInt64(index + 1)), clock: clocks[index])
                }
            }
            let (x, y, z) = (documents[0], documents[1], documents[2])
            let orders = [
                try merged(try merged(x, y), z), try merged(x, try merged(y, z)), try merged(try merged(z, y), x),
                try merged(try merged(y, x), z), try merged(z, try merged(x, y)), try merged(try merged(x, z), y),
            ]
            let reference = Self.content(orders[0])
            for (index, result) in orders.enumerated() {
                #expect(Self.content(result) == reference, "seed \(seed): order \(index) differs")
            }
            #expect(Self.content(try merged(orders[0], orders[0])) == reference, "seed \(seed): not idempotent")
            #expect(Self.content(try merged(orders[0], x)) == reference, "seed \(seed): merging a part again changed it")
            // Names stay unique and every live id has one: its own.
            for result in orders {
                #expect(result.idsByName.count == result.entries.count)
                #expect(result.entries.allSatisfy { result.idsByName[$0.value.name] == $0.key }, "seed \(seed)")
            }
            #expect(Set(orders[0].entries.keys).isDisjoint(with: orders[0].tombstones.keys))
        }
    }
}

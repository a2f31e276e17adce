import Foundation
import Testing

@testable @_spi(Fuzzing) import VaultCore
import VaultSodium

/// A wall clock the test sets (and may turn back).
final class SettableClock: WallClock, @unchecked Sendable {
    private let lock = NSLock()
    private var now: UInt64
    init(_ now: UInt64) { self.now = now }
    func set(_ value: UInt64) { lock.withLock { now = value } }
    func milliseconds() -> UInt64 { lock.withLock { now } }
}

/// Issue 18: the version-2 document layer on bytes (docs/FORMAT.md, "Plaintext"): round trips, clocks, history,
/// tombstones, ids, and what a reader refuses.
@Suite("Vault document (format v2)")
struct VaultDocumentTests {
    static let passphrase = SecureBytes(string: "correct horse battery staple")
    static let policy = Argon2id.KDFPolicy.insecureForTesting
    let replica = ReplicaID(rawValue: 0x0123_4567_89AB_CDEF)

    func create() throws -> (VaultDocument, SecureBytes) {
        try VaultDocument.create(passphrase: Self.passphrase, parameters: .insecureForTesting, label: "test.vault")
    }

    func reopen(_ file: [UInt8], key: DocumentKey = .passphrase(Self.passphrase)) throws -> VaultDocument {
        try VaultDocument.open(file, with: key, label: "test.vault", policy: Self.policy).document
    }

    func text(_ document: VaultDocument, _ entry: String, _ field: String = "password", version: Int? = nil) -> String? {
        document.value(of: field, in: entry, version: version).map { String(decoding: $0.unprotectedBytes, as: UTF8.self) }
    }

    func set(_ entry: String, _ field: String, _ value: String, secret: Bool? = nil) -> DocumentChange {
        .setField(entry: entry, field: field, value: SecureBytes(string: value), secret: secret)
    }

    /// The `password` field.
    func set(_ entry: String, _ value: String) -> DocumentChange { set(entry, "password", value) }

    @Test func aSealedDocumentOpensWithThePassphraseOrTheDataKeyAndHoldsTheSame() throws {
        let (document, dataKey) = try create()
        let clock = SettableClock(1_764_000_000_000)
        try document.apply([
            set("github", "alice-token"), set("github", "username", "alice"), set("github", "url", "https://github.com"),
            set("github", "otp", "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP"),
        ], replica: replica, clock: clock)
        let file = try document.seal(dataKey: dataKey)
        #expect(DocumentHeader.isVersion2(file))
        #expect(document.generation == 1)

        for key in [DocumentKey.passphrase(Self.passphrase), .dataKey(dataKey)] {
            let opened = try reopen(file, key: key)
            #expect(opened.vaultID == document.vaultID && opened.dataKeyID == document.dataKeyID && opened.generation == 1)
            #expect(opened.names == ["github"])
            let entry = try #require(opened.entry("github"))
            #expect(entry == document.entry("github"))
            #expect(entry.fields.map(\.name) == ["password", "username", "url", "otp"])
            #expect(entry.fields.map(\.isSecret) == [true, false, false, true])
            #expect(entry.created == HybridTimestamp(milliseconds: 1_764_000_000_000, counter: 0, replica: replica))
            #expect(text(opened, "github") == "alice-token" && text(opened, "github", "username") == "alice")
            #expect(opened.replicas == [replica: entry.modified])
        }
        // A wrong passphrase, and another vault's data key.
        #expect(throws: VaultError.wrongPassphrase(path: "test.vault")) { try reopen(file, key: .passphrase(SecureBytes(string: "wrong"))) }
        let (_, otherKey) = try create()
        #expect(throws: VaultError.wrongPassphrase(path: "test.vault")) { try reopen(file, key: .dataKey(otherKey)) }
        // No name, field name or value shows in the file.
        for secret in ["github", "alice-token", "username", "otpauth"] {
            #expect(Data(file).range(of: Data(secret.utf8)) == nil, "'\(secret)' is visible in the file")
        }
    }

    /// Random batches against a plain model; after each, a seal/open round trip equals the model.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func randomBatchesRoundTripEqualInContent(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let (document, dataKey) = try create()
        let clock = SettableClock(1_700_000_000_000)
        var model: [String: [String: String]] = [:]
        var current = document
        let names = ["a", "b", "c", "d/e", "é", "with space"]
        let fields = ["password", "username", "url", "notes", "custom"]
        for round in 0..<40 {
            var batch: [DocumentChange] = []
            var next = model
            for step in 0..<Int.random(in: 1...4, using: &random) {
                let name = names.randomElement(using: &random)!
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<6:
                    let field = fields.randomElement(using: &random)!
                    let value = String(repeating: "v\(round)", count: Int.random(in: 0...50, using: &random))
                    batch.append(set(name, field, value))
                    next[name, default: [:]][field] = value
                case 6 where next[name] != nil:
                    batch.append(.delete(entry: name))
                    next[name] = nil
                case 7 where next[name] != nil:
                    let target = "renamed-\(round)-\(step)"
                    batch.append(.rename(from: name, to: target))
                    next[target] = next[name]
                    next[name] = nil
                case 8 where next[name] != nil:
                    let target = "copy-\(round)-\(step)"
                    batch.append(.copy(from: name, to: target))
                    next[target] = next[name]
                default:
                    continue
                }
            }
            guard !batch.isEmpty else { continue }
            clock.set(clock.milliseconds() + UInt64.random(in: 0...3, using: &random))
            try current.apply(batch, replica: replica, clock: clock)
            model = next
            let file = try current.seal(dataKey: dataKey)
            current = try reopen(file)
            #expect(current.names == model.keys.sorted(), "seed \(seed) round \(round)")
            for (name, values) in model {
                let entry = try #require(current.entry(name))
                #expect(Set(entry.fields.map(\.name)) == Set(values.keys), "seed \(seed) round \(round) \(name)")
                for (field, value) in values { #expect(text(current, name, field) == value, "seed \(seed) \(name).\(field)") }
                #expect(entry.versionCount <= VaultDocument.maximumHistoryVersions)
            }
        }
    }

    @Test func aReplicasClockNeverGoesBackEvenWhenTheWallClockDoes() throws {
        let (document, _) = try create()
        let clock = SettableClock(1_000_000)
        var seen: [HybridTimestamp] = []
        for (step, wall) in [1_000_000, 1_000_000, 999_000, 5, 1_000_001, 1_000_001, 2_000_000].enumerated() {
            clock.set(UInt64(wall))
            try document.apply([set("k", "v\(step)")], replica: replica, clock: clock)
            seen.append(document.entry("k")!.modified)
        }
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 < $1 }, "\(seen)")
        #expect(seen.map(\.milliseconds) == [1_000_000, 1_000_000, 1_000_000, 1_000_000, 1_000_001, 1_000_001, 2_000_000])
        #expect(seen.map(\.counter) == [0, 1, 2, 3, 0, 1, 0])
        // A full counter moves to the next millisecond; the largest timestamp is the end.
        let full = HybridTimestamp(milliseconds: 7, counter: .max, replica: replica)
        #expect(try HybridTimestamp.next(after: full, replica: replica, now: 7) == HybridTimestamp(milliseconds: 8, counter: 0, replica: replica))
        let last = HybridTimestamp(milliseconds: HybridTimestamp.maximumMilliseconds, counter: .max, replica: replica)
        #expect(throws: VaultError.clockExhausted) { try HybridTimestamp.next(after: last, replica: replica, now: 0) }
        // Another replica's later timestamp in the document: the next one is later still.
        let other = ReplicaID(rawValue: 1)
        clock.set(0)
        try document.apply([set("k", "from other")], replica: other, clock: clock)
        #expect(document.entry("k")!.modified > seen.last!)
        #expect(document.entry("k")!.modified.replica == other)
    }

    /// The last timestamp there is (a file whose clock a writer pushed to the end): an import stamped with it
    /// takes it, never a crash (it computed "one after now" and wrapped to 0); the next batch is clock_exhausted.
    @Test func anInsertAtTheLastTimestampThereIsTakesIt() throws {
        let (document, _) = try create()
        document.replicas[replica] = HybridTimestamp(packed: .max - 1, replica: replica)
        let values = SecureBytes(string: "pw")
        try document.apply([.insert(entry: "imported", current: DocumentVersion(
            fields: [DocumentField(name: "password", isSecret: true, value: 0..<2)], modified: 1_700_000_000_000),
            history: [DocumentVersion(fields: [], modified: nil)], values: values)], replica: replica, clock: SettableClock(5))
        #expect(document.entry("imported")?.modified.milliseconds == 1_700_000_000_000)
        #expect(document.replicas[replica]?.packed == .max)
        #expect(throws: VaultError.clockExhausted) { try document.apply([set("k", "v")], replica: replica, clock: SettableClock(5)) }
    }

    @Test func historyKeepsTheLastTenVersionsAndAtMost64KiB() throws {
        let (document, dataKey) = try create()
        let clock = SettableClock(1)
        for value in 0..<15 { try document.apply([set("k", "value \(value)")], replica: replica, clock: clock) }
        #expect(document.entry("k")!.versionCount == 10)
        #expect(text(document, "k") == "value 14")
        #expect(text(document, "k", version: 1) == "value 13" && text(document, "k", version: 10) == "value 4")
        #expect(document.value(of: "password", in: "k", version: 11) == nil)
        let history = try #require(document.history(of: "k"))
        #expect(history.map(\.number) == Array(1...10))
        #expect(zip(history, history.dropFirst()).allSatisfy { $0.modified > $1.modified })

        // 30 KiB values: two earlier versions fit in 64 KiB, a third does not.
        let big = String(repeating: "x", count: 30 << 10)
        for round in 0..<4 { try document.apply([set("big", "\(round)" + big)], replica: replica, clock: clock) }
        #expect(document.entry("big")!.versionCount == 2)
        let reopened = try reopen(try document.seal(dataKey: dataKey))
        #expect(reopened.entry("big")!.versionCount == 2 && reopened.entry("k")!.versionCount == 10)

        // Restore makes an earlier version current, as a new version.
        try document.apply([.restore(entry: "k", version: 3)], replica: replica, clock: clock)
        #expect(text(document, "k") == "value 11" && text(document, "k", version: 1) == "value 14")
        #expect(throws: VaultError.noSuchVersion(key: "k", version: 11)) {
            try document.apply([.restore(entry: "k", version: 11)], replica: replica, clock: clock)
        }
    }

    @Test func deleteLeavesATombstoneRenameKeepsTheIdCopyMintsOne() throws {
        let (document, dataKey) = try create()
        let clock = SettableClock(10)
        try document.apply([set("a", "1"), set("b", "2")], replica: replica, clock: clock)
        let idA = document.entry("a")!.id
        let idB = document.entry("b")!.id
        try document.apply([.rename(from: "a", to: "a2"), .copy(from: "b", to: "b2")], replica: replica, clock: clock)
        #expect(document.entry("a2")!.id == idA && document.entry("a2")!.versionCount == 1)
        #expect(document.entry("b2")!.id != idB && text(document, "b2") == "2" && document.entry("b2")!.versionCount == 0)
        try document.apply([.delete(entry: "b")], replica: replica, clock: clock)
        #expect(document.names == ["a2", "b2"])
        let deletedAt = try #require(document.tombstones[idB])
        #expect(deletedAt.replica == replica)
        try document.apply([set("b", "new")], replica: replica, clock: clock)
        #expect(document.entry("b")!.id != idB)
        let reopened = try reopen(try document.seal(dataKey: dataKey))
        #expect(reopened.tombstones == [idB: deletedAt])
        #expect(reopened.entry("a2")!.id == idA)

        // A failing batch changes nothing.
        let before = reopened.names
        #expect(throws: VaultError.entryExists(key: "a2", path: "test.vault")) {
            try reopened.apply([set("z", "1"), .rename(from: "b", to: "a2")], replica: replica, clock: clock)
        }
        #expect(reopened.names == before)
        #expect(throws: VaultError.noSuchEntry(key: "missing", path: "test.vault")) {
            try reopened.apply([.delete(entry: "missing")], replica: replica, clock: clock)
        }
        #expect(throws: VaultError.invalidFieldName("a field name has no control characters")) {
            try reopened.apply([set("a2", "bad\nfield", "x")], replica: replica, clock: clock)
        }
    }

    // MARK: - What a reader refuses

    func sealedFile() throws -> (file: [UInt8], dataKey: SecureBytes, document: VaultDocument) {
        let (document, dataKey) = try create()
        try document.apply([set("k", "v")], replica: replica, clock: SettableClock(5))
        return (try document.seal(dataKey: dataKey), dataKey, document)
    }

    /// A seal reuses the id order of the last one when the entries are the same set: a batch that deletes one
    /// entry and makes another (as many entries, another set) must not reuse it, in the document or in a copy.
    @Test func aSealWritesEveryEntryWhenTheSetChangesButNotItsSize() throws {
        let (document, dataKey) = try create()
        let clock = SettableClock(1_000)
        try document.apply((0..<50).map { set("e\($0)", "v\($0)") }, replica: replica, clock: clock)
        _ = try document.seal(dataKey: dataKey)  // remembers the order
        try document.apply([.delete(entry: "e7"), set("new", "n")], replica: replica, clock: clock)
        let copy = document.copied()
        try copy.apply([.delete(entry: "e8"), set("newer", "m")], replica: replica, clock: clock)
        for (sealed, gone, added) in [(document, ["e7"], ["new"]), (copy, ["e7", "e8"], ["new", "newer"])] {
            let opened = try reopen(try sealed.seal(dataKey: dataKey), key: .dataKey(dataKey))
            let expected = Set((0..<50).map { "e\($0)" }).subtracting(gone).union(added)
            #expect(Set(opened.names) == expected)
            #expect(opened.count == 50)
            #expect(text(opened, "new") == "n" && text(opened, "e9") == "v9")
        }
    }

    /// A seal copies the bytes of the entries unchanged since the last seal (``DocumentBody/Encoded``) instead of
    /// encoding them again: after any batch or two (of this replica or another: a new replica changes every index),
    /// a merge, each entry's bytes are a fresh encoding's, and so is everything around the entries.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func aSealReusesTheBytesOfUnchangedEntriesOnly(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let (document, dataKey) = try create()
        let clock = SettableClock(1_700_000_000_000)
        try document.apply((0..<300).map { set("e\($0)", "v\($0)") }, replica: replica, clock: clock)
        _ = try document.seal(dataKey: dataKey)
        var held = document
        var older = [document]
        let binding = [UInt8](repeating: 9, count: 32)
        var reusedSome = false
        for round in 0..<80 {
            clock.set(clock.milliseconds() + 1)
            var next = held.copied(reserving: 64)
            let names = next.names
            let name = names.randomElement(using: &random)!
            let writer = Int.random(in: 0..<8, using: &random) == 0 ? ReplicaID(rawValue: UInt64.random(in: 1...UInt64.max, using: &random)) : replica
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3: try next.apply([set(name, "r\(round)")], replica: writer, clock: clock)
            case 3: try next.apply([set(name, "notes", String(repeating: "n", count: round))], replica: writer, clock: clock)
            case 4: try next.apply([.rename(from: name, to: "moved-\(round)")], replica: writer, clock: clock)
            case 5: try next.apply([.delete(entry: name)], replica: writer, clock: clock)
            case 6: try next.apply([.copy(from: name, to: "copy-\(round)"), set("new-\(round)", "x")], replica: writer, clock: clock)
            case 7 where (next.history(of: name)?.count ?? 0) > 0: try next.apply([.restore(entry: name, version: 1)], replica: writer, clock: clock)
            case 8:
                // A merge with an older copy changed on its own (another replica), given as a document or as its file
                // opened against this one (sharing the entries it holds as this one was last sealed).
                var other = older.randomElement(using: &random)!.copied()
                try other.apply([set(names.randomElement(using: &random)!, "o\(round)")], replica: ReplicaID(rawValue: 42), clock: clock)
                if Bool.random(using: &random) {
                    other = try VaultDocument.open(try other.seal(dataKey: dataKey), with: .dataKey(dataKey), label: "other", policy: Self.policy, against: next).document
                }
                next = try VaultDocument.merge(next, other, now: clock.milliseconds()).0
            case 9:
                // Sealed and opened again: what it was last sealed into is the file it opened.
                next = try reopen(try next.seal(dataKey: dataKey), key: .dataKey(dataKey))
            default: break
            }
            if round % 5 == 0 {
                // A second batch before the seal (the first one's changes stay what a seal encodes anew).
                try next.apply([set(next.names.randomElement(using: &random)!, "twice"), set("fresh-\(round)", "f")], replica: replica, clock: clock)
            }
            let previous = try #require(next.encoded.withLock { $0 })
            let reused = try DocumentBody.encode(next, binding: binding, reusing: previous)
            let fresh = try DocumentBody.encode(next, binding: binding)
            expectTheSameEntries(reused, fresh, "seed \(seed) round \(round)")
            reusedSome = reusedSome || reused.replicaIDs == previous.replicaIDs
            let opened = try reopen(try next.seal(dataKey: dataKey), key: .dataKey(dataKey))
            #expect(opened.names == next.names)
            #expect(text(opened, name) == text(next, name))
            if round % 10 == 0 { older.append(next) }
            held = next
        }
        #expect(reusedSome)
    }

    /// `a` and `b` hold the same bytes for each entry (by its parts), in any order, and the same bytes around them.
    func expectTheSameEntries(_ a: DocumentBody.Encoded, _ b: DocumentBody.Encoded, _ comment: Comment) {
        let x = a.plaintext.unprotectedBytes, y = b.plaintext.unprotectedBytes
        #expect(x.count == y.count && a.parts.count == b.parts.count && Set(a.parts) == Set(b.parts), comment)
        let (aStart, aEnd) = (a.ranges.first?.lowerBound ?? 0, a.ranges.last?.upperBound ?? 0)
        let (bStart, bEnd) = (b.ranges.first?.lowerBound ?? 0, b.ranges.last?.upperBound ?? 0)
        #expect(aStart == bStart && x[..<aStart] == y[..<bStart] && x[aEnd...] == y[bEnd...], comment)
        #expect(zip(a.ranges.dropFirst(), a.ranges).allSatisfy { $0.lowerBound == $1.upperBound }, comment)  // one after another
        let place = Dictionary(uniqueKeysWithValues: b.parts.enumerated().map { ($1, $0) })
        for (index, identity) in a.parts.enumerated() {
            guard let other = place[identity] else { continue }
            #expect(x[a.ranges[index]] == y[b.ranges[other]], comment)
        }
    }

    /// A copy to change (what a writer holding the document makes for each write) shares nothing it changes, and
    /// values overwritten in copy after copy do not pile up: the region is compacted when they outweigh the live ones.
    @Test func copiesToChangeKeepTheHeldDocumentAndStayBounded() throws {
        let (document, dataKey) = try create()
        let clock = SettableClock(1_000)
        try document.apply([set("big", String(repeating: "x", count: 32 << 10)), set("small", "s")], replica: replica, clock: clock)
        var held = document
        var largest = 0
        for round in 0..<40 {
            let next = held.copied(reserving: 32 << 10)
            try next.apply([set("big", String(repeating: "\(round % 10)", count: 32 << 10))], replica: replica, clock: clock)
            #expect(text(held, "big")?.first == (round == 0 ? "x" : Character("\((round - 1) % 10)")))  // held: unchanged
            held = next
            largest = max(largest, held.values.count)
        }
        // Live: 32 KiB current and at most 64 KiB of history. Without compaction the 40 values written would all
        // stay (1.3 MB); the bound is twice the live bytes at the last compaction plus 64 KiB.
        #expect(largest <= 400 << 10, "\(largest) bytes held")
        let opened = try reopen(try held.seal(dataKey: dataKey), key: .dataKey(dataKey))
        #expect(text(opened, "big") == String(repeating: "9", count: 32 << 10) && text(opened, "small") == "s")
        #expect(opened.history(of: "big")?.count == 1)  // two 32 KiB versions and their field names pass 64 KiB
    }

    /// The local file's version names its content: another seal of the same document (a new nonce) is another
    /// version; the same bytes are the same version; a version-1 or non-vault file is hashed whole.
    @Test func theLocalFilesVersionNamesEverySealAndEveryByteOfOtherFiles() throws {
        let (document, dataKey) = try create()
        try document.apply([set("k", "v")], replica: replica, clock: SettableClock(1_000))
        let first = try document.seal(dataKey: dataKey)
        let second = try document.seal(dataKey: dataKey)
        #expect(LocalFileStorage.version(of: first) == LocalFileStorage.version(of: first))
        #expect(LocalFileStorage.version(of: first) != LocalFileStorage.version(of: second))
        let prefix = try #require(DocumentHeader.identifyingPrefixLength(first))
        #expect(prefix > 56 && prefix < first.count)  // header, MAC, nonce and tag: not the body
        var grown = first
        grown.append(0)
        #expect(LocalFileStorage.version(of: grown) != LocalFileStorage.version(of: first))
        var other = Array("not a vault, only text".utf8)
        let before = LocalFileStorage.version(of: other)
        other[other.count - 1] ^= 1
        #expect(LocalFileStorage.version(of: other) != before)
        #expect(DocumentHeader.identifyingPrefixLength(other) == nil)
    }

    @Test func aChangedHeaderIsRefusedByItsMACBeforeTheBodyIsTrusted() throws {
        let (file, dataKey, _) = try sealedFile()
        // The generation (bytes 30..<38): a rollback forged in the header.
        var forged = file
        forged[30] ^= 1
        #expect(throws: VaultError.corrupt(path: "test.vault", reason: .headerMACMismatch)) { try reopen(forged) }
        // With the agent's data key, the same header change reads as another vault (no oracle).
        #expect(throws: VaultError.wrongPassphrase(path: "test.vault")) { try reopen(forged, key: .dataKey(dataKey)) }
        // The body: its box does not open although the header's MAC matched.
        var body = file
        body[body.count - 1] ^= 1
        #expect(throws: VaultError.corrupt(path: "test.vault", reason: .bodyMACMismatch)) { try reopen(body) }
    }

    @Test func forgedKDFParametersAreRefusedBeforeAnyKDFRuns() throws {
        let (file, _, _) = try sealedFile()
        var forged = file
        // The first stanza's opslimit (header: 56 fixed bytes, then type u16 and length u32).
        let opsLimit = DocumentFormat.fixedHeaderByteCount + 6
        forged.replaceSubrange(opsLimit..<opsLimit + 8, with: withUnsafeBytes(of: UInt64(1 << 40).littleEndian, Array.init))
        #expect(throws: VaultError.kdfParametersOutOfRange(path: "test.vault", opsLimit: 1 << 40, memLimitBytes: 8 << 10)) {
            try reopen(forged)
        }
    }

    @Test func unknownStanzaTypesAreSkippedAndWrittenBack() throws {
        let (_, dataKey, document) = try sealedFile()
        document.stanzas.append(KeyStanza(type: 0x7777, body: [1, 2, 3]))
        let file = try document.seal(dataKey: dataKey)
        let header = try DocumentHeader.parse(file, label: "t", policy: Self.policy)
        #expect(header.stanzaTypes == ["argon2id", "unknown(30583)"])
        let opened = try reopen(file)
        #expect(text(opened, "k") == "v")
        let again = try DocumentHeader.parse(try opened.seal(dataKey: dataKey), label: "t", policy: Self.policy)
        #expect(again.stanzas == header.stanzas)
        // Without any passphrase or recipient stanza, nothing can open it.
        document.stanzas = [KeyStanza(type: 5, body: [])]  // (type 4 is key_link: KeyLinkTests)
        #expect(throws: VaultError.corrupt(path: "t", reason: .noUsableStanza)) {
            try DocumentHeader.parse(try document.seal(dataKey: dataKey), label: "t", policy: Self.policy)
        }
        // An x25519 (295 bytes) or mlkem768x25519 (3,652 bytes) stanza is checked for its shape as it is read.
        for type in [KeyStanza.x25519, KeyStanza.mlkem768x25519] {
            document.stanzas = [KeyStanza(type: type, body: [])]
            #expect(throws: VaultError.corrupt(path: "t", reason: .badStanza(index: 0))) {
                try DocumentHeader.parse(try document.seal(dataKey: dataKey), label: "t", policy: Self.policy)
            }
        }
    }

    @Test func structuralDamageHasItsOwnReason() throws {
        let (file, _, _) = try sealedFile()
        #expect(throws: VaultError.corrupt(path: "t", reason: .badMagic)) {
            try DocumentHeader.parse([0] + file.dropFirst(), label: "t", policy: Self.policy)
        }
        var length = file
        length.replaceSubrange(10..<14, with: [0xFF, 0xFF, 0xFF, 0x00])
        #expect(throws: VaultError.corrupt(path: "t", reason: .badHeaderLength(0xFF_FFFF))) {
            try DocumentHeader.parse(length, label: "t", policy: Self.policy)
        }
        #expect(throws: VaultError.corrupt(path: "t", reason: .sizeMismatch(byteCount: file.count + 1))) {
            try DocumentHeader.parse(file + [0], label: "t", policy: Self.policy)
        }
        #expect(throws: VaultError.corrupt(path: "t", reason: .truncated(byteCount: 40))) {
            try DocumentHeader.parse(Array(file.prefix(40)), label: "t", policy: Self.policy)
        }
    }

    /// A version-1 reader (the store today, an older `vault`) says unsupported version 3 (the version made now),
    /// exit 6 at the CLI.
    @Test func theVersion1ReaderSaysUnsupportedVersion() throws {
        let (file, _, _) = try sealedFile()
        #expect(throws: VaultError.unsupportedVersion(path: "t", version: 3)) {
            try VaultEnvelope.parseHeader(file, path: "t", policy: Self.policy)
        }
    }

    /// The fuzz target's entry points (Fuzz/Sources/FuzzDocument) on a real document: it opens, survives the
    /// round trip check, and a plaintext behind the fixed header opens too.
    @Test func theFuzzEntryPointsOpenRealDocuments() throws {
        let (document, dataKey) = try create()
        try document.apply([set("a", "1"), set("a", "notes", "n"), set("b", "2")], replica: replica, clock: SettableClock(9))
        try document.apply([set("a", "3"), .delete(entry: "b")], replica: replica, clock: SettableClock(9))
        #expect(try FuzzEntryPoints.openDocument(try document.seal(dataKey: dataKey), dataKey: dataKey.unprotectedBytes) == 1)
        let key = [UInt8](repeating: 0x42, count: 32)
        let empty = [UInt8](repeating: 0, count: 32) + [0, 0, 0, 0] + [0, 0, 0, 0] + [0, 0, 0, 0]
        let file = try #require(FuzzEntryPoints.sealedDocument(fromPlaintext: empty, dataKey: key, bindHeader: true))
        #expect(try FuzzEntryPoints.openDocument(file, dataKey: key) == 0)
        let unbound = try #require(FuzzEntryPoints.sealedDocument(fromPlaintext: empty, dataKey: key, bindHeader: false))
        #expect(throws: VaultError.corrupt(path: "<fuzz>", reason: .bodyBindingMismatch)) { try FuzzEntryPoints.openDocument(unbound, dataKey: key) }
    }
}

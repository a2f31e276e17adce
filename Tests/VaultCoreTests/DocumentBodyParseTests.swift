import Testing

@testable @_spi(Fuzzing) import VaultCore

/// A body parsed against a reference (the copy a merge brings, opened against ours: ``DocumentBody/parse(_:binding:header:label:reference:)``)
/// is what it is parsed alone, entry for entry, or fails with the same error: bodies spliced by hand from the bytes
/// of real entries (shared ones, other versions of them, new ones), in any order, given twice, colliding.
@Suite("Parsing a body against a reference")
struct DocumentBodyParseTests {
    let key = [UInt8](repeating: 5, count: 32)
    let replica = ReplicaID(rawValue: 7)
    let clock = SettableClock(1_764_000_000_000)

    /// The bytes before the entries (binding and replica table) of `document`'s last seal, and each entry's bytes by
    /// name.
    func pieces(_ document: VaultDocument) throws -> (prefix: [UInt8], entries: [String: [UInt8]]) {
        let encoded = try #require(document.encoded.withLock { $0 })
        let plaintext = encoded.plaintext.unprotectedBytes
        var entries: [String: [UInt8]] = [:]
        for (place, range) in encoded.ranges.enumerated() {
            let name = try #require(document.entries.values.first { $0.identity == encoded.parts[place] }).name
            entries[name] = Array(plaintext[range])
        }
        let first = try #require(encoded.ranges.map(\.lowerBound).min())
        return (Array(plaintext[..<(first - 1)]), entries)  // less the entry count (one byte: fewer than 128)
    }

    /// A body of `entries` (no tombstones) after `prefix`, opened (with the fuzzer's fixed header) alone or against
    /// `reference`.
    func open(_ prefix: [UInt8], _ entries: [[UInt8]], against reference: VaultDocument? = nil) throws -> VaultDocument {
        let plaintext = prefix + [UInt8(entries.count)] + entries.flatMap { $0 } + [0]
        let file = try #require(FuzzEntryPoints.sealedDocument(fromPlaintext: plaintext, dataKey: key, bindHeader: true))
        return try VaultDocument.open(file, with: .dataKey(SecureBytes(key)), label: "spliced", policy: .insecureForTesting, against: reference).document
    }

    func set(_ entry: String, _ value: String) -> DocumentChange { .setField(entry: entry, field: "password", value: SecureBytes(string: value)) }

    @Test func aSplicedBodyParsesAgainstAReferenceAsItParsesAlone() throws {
        let (base, _) = try VaultDocument.create(passphrase: SecureBytes(string: "p"), parameters: .insecureForTesting, label: "base")
        try base.apply(["a", "b", "c", "d"].map { set($0, "v-" + $0) }, replica: replica, clock: clock)
        _ = try base.seal(dataKey: SecureBytes(key))
        let original = try pieces(base)
        // Other versions: b changed; a and b's names swapped; a replaced by a new entry named a; b renamed z; e new.
        func version(_ changes: [DocumentChange]) throws -> [String: [UInt8]] {
            let copy = base.copied()
            clock.set(clock.milliseconds() + 10)
            try copy.apply(changes, replica: replica, clock: clock)
            _ = try copy.seal(dataKey: SecureBytes(key))
            return try pieces(copy).entries
        }
        let changed = try version([set("b", "changed")])
        let swapped = try version([.rename(from: "a", to: "t"), .rename(from: "b", to: "a"), .rename(from: "t", to: "b")])
        let replaced = try version([.delete(entry: "a"), set("a", "new a")])
        let renamed = try version([.rename(from: "b", to: "z")])
        let added = try version([set("e", "v-e")])
        // The latest replica table (every stamp of every version is within it).
        let latest = base.copied()
        clock.set(clock.milliseconds() + 10)
        try latest.apply([set("zz", "x")], replica: replica, clock: clock)
        _ = try latest.seal(dataKey: SecureBytes(key))
        let prefix = try pieces(latest).prefix
        let e = original.entries
        let reference = try open(prefix, [e["a"]!, e["b"]!, e["c"]!, e["d"]!])

        let valid: [(String, [[UInt8]])] = [
            ("the same", [e["a"]!, e["b"]!, e["c"]!, e["d"]!]),
            ("reordered", [e["d"]!, e["c"]!, e["b"]!, e["a"]!]),
            ("two deleted", [e["a"]!, e["c"]!]),
            ("one changed", [e["a"]!, changed["b"]!, e["c"]!, e["d"]!]),
            ("names swapped", [swapped["b"]!, swapped["a"]!, e["c"]!, e["d"]!]),
            ("a replaced", [replaced["a"]!, e["b"]!, e["c"]!, e["d"]!]),
            ("b renamed, a new b-less", [e["a"]!, renamed["z"]!, e["c"]!]),
            ("one added", [e["a"]!, e["b"]!, e["c"]!, e["d"]!, added["e"]!]),
            ("none", []),
        ]
        for (what, entries) in valid {
            let alone = try open(prefix, entries)
            let against = try open(prefix, entries, against: reference)
            #expect(DocumentMergeTests.content(against) == DocumentMergeTests.content(alone), "\(what)")
            #expect(against.holdsValues(of: reference), "\(what): not parsed against the reference")
            let shared = against.entries.values.filter { reference.entries[$0.id]?.identity == $0.identity }.count
            #expect(shared == entries.filter { bytes in e.values.contains(bytes) }.count, "\(what): \(shared) shared")
        }

        // A region a write replaced is zeroed and taken by a later copy: the same arena, as many bytes, other ones.
        let against = try open(prefix, [e["a"]!, e["b"]!], against: reference)
        #expect(against.holdsValues(of: reference))
        let count = reference.values.count
        reference.values.wipe()
        _ = [UInt8](repeating: 1, count: count).withUnsafeBytes { reference.values.append($0) }
        #expect(reference.values.count == count)
        #expect(!against.holdsValues(of: reference), "a refilled arena taken for the one a copy began from")
        let fresh = try open(prefix, [e["a"]!, e["b"]!, e["c"]!, e["d"]!])

        let invalid: [(String, [[UInt8]])] = [
            ("a shared entry twice", [e["a"]!, e["b"]!, e["a"]!]),
            ("a shared entry and another version of it", [e["a"]!, e["b"]!, changed["b"]!]),
            ("another version, then the shared one", [changed["b"]!, e["a"]!, e["b"]!]),
            ("a new entry with a shared entry's name", [replaced["a"]!, e["a"]!]),
            ("a shared entry's id under another name", [e["b"]!, renamed["z"]!]),
            ("an entry cut short", [e["a"]!, Array(e["b"]!.prefix(10))]),
        ]
        for (what, entries) in invalid {
            var aloneError: (any Error)?
            do { _ = try open(prefix, entries) } catch { aloneError = error }
            let expected = try #require(aloneError, "\(what): opened alone")
            do {
                _ = try open(prefix, entries, against: fresh)
                Issue.record("\(what): opened against the reference")
            } catch {
                #expect(String(describing: error) == String(describing: expected), "\(what)")
            }
        }
    }

    /// Ids that all hashed alike under a fixed mix (one factor zero, or the other equal to 1 and the high halves
    /// apart only above the table's bits) spread over the buckets: the mix is keyed per process.
    @Test func idsCraftedAgainstAFixedMixDoNotCollide() {
        let fixedFactor: UInt64 = 0xE703_7ED1_A0B4_28DB
        for low in [fixedFactor, fixedFactor ^ 1] {
            let buckets = Set((0..<1_000).map { (n: Int) -> Int in DocumentID(high: UInt64(n) << 20, low: low)._rawHashValue(seed: 0) & 1023 })
            #expect(buckets.count > 500, "\(buckets.count) buckets of 1,024 for 1,000 ids")
        }
    }

    /// A merge's result shares its arena with the copy opened against ours; a change to the result leaves that
    /// copy's arena as it was (``VaultDocument/ownValues()``).
    @Test func aChangeToAMergeResultLeavesTheCopyItCameFromAsItWas() throws {
        let (base, _) = try VaultDocument.create(passphrase: SecureBytes(string: "p"), parameters: .insecureForTesting, label: "base")
        try base.apply(["a", "b"].map { set($0, "v-" + $0) }, replica: replica, clock: clock)
        let ours = try VaultDocument.open(try base.seal(dataKey: SecureBytes(key)), with: .dataKey(SecureBytes(key)), label: "ours", policy: .insecureForTesting).document
        let other = base.copied()
        clock.set(clock.milliseconds() + 10)
        try other.apply([set("b", "changed")], replica: replica, clock: clock)  // one table: entries shared
        let theirs = try VaultDocument.open(try other.seal(dataKey: SecureBytes(key)), with: .dataKey(SecureBytes(key)), label: "theirs", policy: .insecureForTesting, against: ours).document
        let (merged, _) = try VaultDocument.merge(ours, theirs, now: clock.milliseconds())
        #expect(merged.values === theirs.values)
        let before = theirs.values.count
        try merged.apply([set("c", String(repeating: "x", count: 1 << 20))], replica: replica, clock: clock)
        #expect(theirs.values.count == before && merged.values !== theirs.values)
        #expect(merged.value(of: "password", in: "b").map { String(decoding: $0.unprotectedBytes, as: UTF8.self) } == "changed")
    }
}

import Synchronization
import VaultSodium

/// The plaintext of a version-2 or -3 body (docs/FORMAT.md, "Plaintext"): encoded from a document in
/// one guarded region (here: what is copied and what is encoded; the sizes and the bytes in DocumentBodyWriter.swift),
/// and parsed with every rule checked (lengths, UTF-8, unique names and ids, flags, caps, padding:
/// DocumentBodyParse.swift).
enum DocumentBody {
    /// The fewest bytes an entry (16 id, 2 name, 9 modified, 2 created, 1 field count, 1 version count) and a
    /// tombstone (16 id, 9 deleted) take: a count above what the rest could hold at that is refused before any
    /// allocation.
    static let smallestEntry = 31
    static let smallestTombstone = 25
    /// Version 3: a replica has a `dropped` time and a `seen` count, a tombstone an `of` stamp and a `kept` byte.
    static let smallestReplicaV3 = 25
    static let smallestTombstoneV3 = 35

    /// The well-known field names, by their code in a field's `kind` (code = index + 1); 0 spells the name out.
    static let wellKnownFields = ["password", "username", "url", "notes", "otp"]

    /// The code of a well-known field name, 0 for any other (no other string is canonically equivalent to these
    /// ASCII names, so a spelled-out name is refused exactly when it is one of them).
    @inline(__always)
    static func code(of field: String) -> UInt8 {
        switch field.utf8.count {
        case 3: return field == "url" ? 3 : field == "otp" ? 5 : 0
        case 5: return field == "notes" ? 4 : 0
        case 8: return field == "password" ? 1 : field == "username" ? 2 : 0
        default: return 0
        }
    }

    /// The bytes of `value` as a `uvar` (unsigned LEB128, shortest form).
    @inline(__always)
    static func uvarSize(_ value: UInt64) -> Int {
        value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// What a document was last sealed into: the plaintext, the replica table its stamps index (by id), and
    /// where each entry's bytes are in it (one after another, in `parts`' order), by the identity of the entry's
    /// parts (``VaultDocument/Entry/identity``). `entries` keeps those parts alive, so that an identity names the
    /// same unchanged parts while this lives: a change to an entry shared with it makes new parts (copy on write).
    /// A seal copies the bytes of the entries it finds unchanged here (under the same replica table) instead of
    /// encoding them field by field.
    final class Encoded: Sendable {
        let plaintext: SecureBytes
        let replicaIDs: [UInt64]
        let entries: VaultDocument.Entries
        let parts: [ObjectIdentifier]
        let ranges: [Range<Int>]

        /// Each entry's place by id, made on first use (``place(of:)``).
        private let placesByID = Mutex<[DocumentID: Int]?>(nil)

        init(plaintext: SecureBytes, replicaIDs: [UInt64], entries: VaultDocument.Entries, parts: [ObjectIdentifier], ranges: [Range<Int>]) {
            (self.plaintext, self.replicaIDs, self.entries, self.parts, self.ranges) = (plaintext, replicaIDs, entries, parts, ranges)
        }

        /// The place of entry `id` in `parts` (`nil` when it is not there): `hint` first, else a table of every
        /// entry's place (the 16 bytes each entry starts with), made once.
        func place(of id: DocumentID, hint: Int) -> Int? {
            if hint < ranges.count, self.id(at: hint) == id { return hint }
            return placesByID.withLock { table in
                if table == nil {
                    var made: [DocumentID: Int] = [:]
                    made.reserveCapacity(ranges.count)
                    for place in ranges.indices { made[self.id(at: place)] = place }
                    table = made
                }
                return table![id]
            }
        }

        /// The id the entry at `place` starts with.
        func id(at place: Int) -> DocumentID {
            plaintext.withUnsafeBytes { bytes in
                var reader = ByteReader(UnsafeRawBufferPointer(rebasing: bytes[ranges[place].lowerBound..<ranges[place].lowerBound + 16]))
                return DocumentID(high: reader.readBigEndian(), low: reader.readBigEndian())
            }
        }

        /// The places in `parts` of `identities` (`nil` when one is not there): a scan per identity for a few, else
        /// one pass with a set.
        func places(of identities: [ObjectIdentifier]) -> [Int]? {
            if identities.count <= 8 {
                var found: [Int] = []
                for identity in identities {
                    guard let place = parts.firstIndex(of: identity) else { return nil }
                    found.append(place)
                }
                return found
            }
            let wanted = Set(identities)
            var at: [ObjectIdentifier: Int] = [:]
            for (place, identity) in parts.enumerated() where wanted.contains(identity) { at[identity] = place }
            guard at.count == wanted.count else { return nil }
            return identities.map { at[$0]! }
        }
    }

    /// The entries of a plaintext in the order written: runs of entries copied from the previous plaintext (their
    /// places in it), and entries encoded anew.
    enum Piece {
        case copied(Range<Int>)
        case encoded(VaultDocument.Entry)
    }

    /// The pieces when the document says which entries changed since `previous` was encoded (``VaultDocument/changed``):
    /// `previous`'s order, a changed entry encoded anew at its place, a deleted one left out, new ones at the end.
    /// `nil` when `previous` does not hold what the document says was there.
    private static func pieces(_ document: VaultDocument, changed: [DocumentID: ObjectIdentifier?], previous: Encoded) -> [Piece]? {
        var replaced: [(place: Int, id: DocumentID)] = []
        var added: [DocumentID] = []
        var wereThere: [ObjectIdentifier] = []
        for (id, before) in changed {
            if let before {
                wereThere.append(before)
                replaced.append((0, id))
            } else if document.entries[id] != nil {
                added.append(id)
            }
        }
        guard let places = previous.places(of: wereThere) else { return nil }
        for index in replaced.indices { replaced[index].place = places[index] }
        replaced.sort { $0.place < $1.place }
        var pieces: [Piece] = []
        var next = 0
        for (place, id) in replaced {
            if place > next { pieces.append(.copied(next..<place)) }
            if let entry = document.entries[id] { pieces.append(.encoded(entry)) }
            next = place + 1
        }
        if next < previous.parts.count { pieces.append(.copied(next..<previous.parts.count)) }
        for id in added.sorted() { pieces.append(.encoded(document.entries[id]!)) }
        let count = pieces.reduce(0) { if case .copied(let run) = $1 { $0 + run.count } else { $0 + 1 } }
        return count == document.entries.count ? pieces : nil
    }

    /// The pieces when nothing says which entries changed: the table's order, each entry whose parts `previous`
    /// holds copied (runs of them in `previous`'s order copied at once).
    private static func pieces(_ document: VaultDocument, scanning previous: Encoded) -> [Piece] {
        var pieces: [Piece] = []
        var next = 0  // where the next entry is, when the order is the same as before (a copy of a table keeps it)
        var run = 0..<0
        func flush() {
            if !run.isEmpty { pieces.append(.copied(run)) }
            run = 0..<0
        }
        for entry in document.entries.values {
            let identity = entry.identity
            var place: Int?
            if next < previous.parts.count, previous.parts[next] == identity {
                place = next
            } else if next + 1 < previous.parts.count, previous.parts[next + 1] == identity {
                place = next + 1  // the one before was changed or deleted
            }
            guard let place else {
                flush()
                pieces.append(.encoded(entry))
                continue
            }
            if run.upperBound == place, !run.isEmpty { run = run.lowerBound..<place + 1 } else { flush(); run = place..<place + 1 }
            next = place + 1
        }
        flush()
        return pieces
    }

    /// The plaintext of `document`, bound to its header by `binding`, padded to a multiple of 256 bytes, and where
    /// each entry's bytes are in it. The bytes of the entries unchanged since `previous` (the same parts, the same
    /// replica table) are copied from there: the bytes a fresh encoding writes for them. Entries are written in the
    /// table's order, or in `previous`'s order when the document knows which of its entries changed since then
    /// (the changed ones in their places, new ones last): any order is valid (docs/FORMAT.md).
    ///
    /// The plaintext goes into `spare`'s region when it is large enough and nobody else holds it (a zeroed one).
    /// `progress` is told how many entries are written, every 256 and at the end.
    static func encode(
        _ document: VaultDocument, binding: [UInt8], reusing previous: Encoded? = nil, recycling spare: consuming SecureBytes? = nil,
        progress: ((Int) -> Void)? = nil
    ) throws -> Encoded {
        let tombstones = document.tombstones.sorted { $0.key < $1.key }
        let v3 = document.formatVersion >= 3
        let deletions = v3 ? tombstones.map { document.deletion(of: $0.key) } : []
        // The stamps of a copied entry name only replicas of the table it was encoded with: when that table is
        // known here, noting them would add nothing.
        let known = document.replicas.keys.map(\.rawValue)
        var pieces: [Piece]?
        if let previous, previous.replicaIDs.allSatisfy(known.contains) {
            if let changed = document.changed, let tracked = Self.pieces(document, changed: changed, previous: previous) {
                pieces = tracked
            } else {
                pieces = Self.pieces(document, scanning: previous)
            }
        }
        let replicas = replicaTable(document, known: known, encoding: pieces ?? fresh(document), tombstones: tombstones, deletions: deletions)
        let layout = BodyLayout(replicaIDs: replicas.map(\.key.rawValue))
        // The entries' bytes name replicas by their index in the table: another table, every entry anew.
        if previous?.replicaIDs != layout.replicaIDs { pieces = nil }
        let entries = pieces ?? fresh(document)
        let views = v3 ? layout.views(of: document, replicas: replicas) : []
        let (count, size) = layout.size(
            of: document, entries, previous: previous, replicas: replicas.count, views: views, tombstones: tombstones, deletions: deletions)
        let padded = max((size + VaultFormat.paddingQuantum - 1) / VaultFormat.paddingQuantum * VaultFormat.paddingQuantum, VaultFormat.paddingQuantum)
        guard padded <= VaultFormat.maximumPlaintextByteCount else {
            throw VaultError.vaultTooLarge(path: document.label, byteCount: padded)
        }
        var parts: [ObjectIdentifier] = []
        var ranges: [Range<Int>] = []
        parts.reserveCapacity(count)
        ranges.reserveCapacity(count)
        let plaintext = document.values.withUnsafeBytes { values in
            SecureBytes.recycling(&spare, count: padded, slack: max(4096, padded / 8)) { out in
                var writer = BodyWriter(out, values: values, layout: layout)
                binding.withUnsafeBytes { writer.writer.write($0) }
                writer.writeReplicaTable(replicas, views: views, v3: v3)
                writer.uvar(UInt64(count))
                if let previous, pieces != nil {
                    previous.plaintext.withUnsafeBytes {
                        writer.writeEntries(entries, copyingFrom: $0, previous: previous, parts: &parts, ranges: &ranges, progress: progress)
                    }
                } else {
                    writer.writeEntries(
                        entries, copyingFrom: UnsafeRawBufferPointer(start: nil, count: 0), previous: previous, parts: &parts, ranges: &ranges,
                        progress: progress)
                }
                writer.writeTombstones(tombstones, deletions: deletions, v3: v3)
                precondition(writer.writer.offset == size, "the body's size was computed wrong")
                // The rest is zero padding (the guarded region starts zeroed? not promised: write it).
                let rest = out.count - writer.writer.offset
                if rest > 0 { UnsafeMutableRawBufferPointer(rebasing: out[writer.writer.offset...]).initializeMemory(as: UInt8.self, repeating: 0) }
            }
        }
        return Encoded(plaintext: plaintext, replicaIDs: layout.replicaIDs, entries: document.entries, parts: parts, ranges: ranges)
    }

    /// Every entry encoded anew, in the table's order (a reader does not depend on it; sorting 10,000 ids, or looking
    /// each up in an order kept from the last seal, was a tenth of a put's time).
    private static func fresh(_ document: VaultDocument) -> [Piece] { document.entries.values.map { .encoded($0) } }

    /// The replica table to write, sorted by id: it lists every replica a stamp names (a document keeps that true;
    /// this keeps the file valid whatever): the latest timestamp of one missing (not among `known`, the document's
    /// table) is the latest the file holds of it.
    private static func replicaTable(
        _ document: VaultDocument, known: [UInt64], encoding entries: [Piece], tombstones: [(key: DocumentID, value: HybridTimestamp)],
        deletions: [VaultDocument.Deletion]
    ) -> [(key: ReplicaID, value: HybridTimestamp)] {
        var table = document.replicas
        func note(_ time: HybridTimestamp) {
            guard !known.contains(time.replica.rawValue) else { return }
            if let latest = table[time.replica], latest >= time { return }
            table[time.replica] = time
        }
        for case .encoded(let entry) in entries {
            note(entry.created)
            note(entry.modified)
            for version in entry.history { note(version.modified) }
        }
        for (_, time) in tombstones { note(time) }
        for deletion in deletions {
            note(deletion.of)
            if let kept = deletion.kept { note(kept.version.modified) }
        }
        return table.sorted { $0.key < $1.key }
    }
}

import Synchronization
import VaultSodium

/// The plaintext of a version-2 or -3 body (docs/FORMAT.md, "Plaintext"): encoded from a document in
/// one guarded region (here), and parsed with every rule checked (lengths, UTF-8, unique names and ids, flags, caps,
/// padding: DocumentBodyParse.swift).
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
    private enum Piece {
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
        // The table lists every replica a stamp names (a document keeps that true; this keeps the file valid
        // whatever): the latest timestamp of one missing is the latest the file holds of it.
        var table = document.replicas
        let known = document.replicas.keys.map(\.rawValue)
        func note(_ time: HybridTimestamp) {
            guard !known.contains(time.replica.rawValue) else { return }
            if let latest = table[time.replica], latest >= time { return }
            table[time.replica] = time
        }
        // The stamps of a copied entry name only replicas of the table it was encoded with: when that table is
        // known here, noting them would add nothing.
        var pieces: [Piece]?
        if let previous, previous.replicaIDs.allSatisfy(known.contains) {
            if let changed = document.changed, let tracked = Self.pieces(document, changed: changed, previous: previous) {
                pieces = tracked
            } else {
                pieces = Self.pieces(document, scanning: previous)
            }
        }
        // In the table's order (a reader does not depend on it; sorting 10,000 ids, or looking each up in an order
        // kept from the last seal, was a tenth of a put's time).
        func fresh() -> [Piece] { document.entries.values.map { .encoded($0) } }
        for case .encoded(let entry) in pieces ?? fresh() {
            note(entry.created)
            note(entry.modified)
            for version in entry.history { note(version.modified) }
        }
        for (_, time) in tombstones { note(time) }
        for deletion in deletions {
            note(deletion.of)
            if let kept = deletion.kept { note(kept.version.modified) }
        }
        let replicas = table.sorted { $0.key < $1.key }
        let replicaIDs = replicas.map(\.key.rawValue)
        // The entries' bytes name replicas by their index in the table: another table, every entry anew.
        if previous?.replicaIDs != replicaIDs { pieces = nil }
        let entries = pieces ?? fresh()
        /// A replica's index in the table (a few replicas: a scan beats hashing).
        func index(_ replica: ReplicaID) -> UInt64 {
            UInt64(replicaIDs.firstIndex(of: replica.rawValue)!)
        }
        func stampSize(_ time: HybridTimestamp) -> Int { 8 + uvarSize(index(time.replica)) }
        // Version 3: each replica's dropped mark and seen row (by table index), kept within the table's times so
        // that the file is valid whatever the document holds.
        let sync: [(dropped: UInt64, seen: [(index: UInt64, time: UInt64)])] = v3 ? replicas.map { replica, time in
            let row = (document.seen[replica] ?? [:]).compactMap { other, seen -> (index: UInt64, time: UInt64)? in
                guard seen > 0, let at = replicaIDs.firstIndex(of: other.rawValue) else { return nil }
                return (UInt64(at), min(seen, replicas[at].value.packed))
            }.sorted { $0.index < $1.index }
            return (min(document.dropped[replica] ?? 0, time.packed), row)
        } : []
        func fieldsSize(_ fields: [VaultDocument.Field]) -> Int {
            fields.reduce(uvarSize(UInt64(fields.count))) { size, field in
                let name = field.code == 0 ? 1 + field.name.utf8.count : 0
                return size + 1 + name + uvarSize(UInt64(field.value.count)) + field.value.count
            }
        }
        func age(_ entry: VaultDocument.Entry) -> UInt64 {
            entry.created.packed <= entry.modified.packed ? entry.modified.packed - entry.created.packed : 0
        }
        var count = 0
        var entriesSize = 0
        for piece in entries {
            switch piece {
            case .copied(let run):
                assert(run.allSatisfy { document.entries[previous!.id(at: $0)]?.identity == previous!.parts[$0] }, "a copied entry is unchanged since the last seal")
                count += run.count
                entriesSize += previous!.ranges[run.upperBound - 1].upperBound - previous!.ranges[run.lowerBound].lowerBound
            case .encoded(let entry):
                count += 1
                let name = entry.name.utf8.count
                entriesSize += 16 + uvarSize(UInt64(name)) + name + stampSize(entry.modified) + uvarSize(age(entry))
                    + uvarSize(index(entry.created.replica)) + fieldsSize(entry.fields) + 1
                for version in entry.history { entriesSize += stampSize(version.modified) + 1 + fieldsSize(version.fields) }
            }
        }
        precondition(count == document.entries.count, "the entries to seal were counted wrong")
        var size = 32 + uvarSize(UInt64(replicas.count)) + replicas.count * 16 + uvarSize(UInt64(count))
            + uvarSize(UInt64(tombstones.count)) + entriesSize
        if v3 {
            for replica in sync {
                size += 8 + uvarSize(UInt64(replica.seen.count)) + replica.seen.reduce(0) { $0 + uvarSize($1.index) + 8 }
            }
            for deletion in deletions {
                size += stampSize(deletion.of) + 1
                if let kept = deletion.kept {
                    let name = kept.name.utf8.count
                    size += uvarSize(UInt64(name)) + name + stampSize(kept.version.modified) + 1 + fieldsSize(kept.version.fields)
                }
            }
        }
        for (_, time) in tombstones { size += 16 + stampSize(time) }
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
                var writer = ByteWriter(out)
                binding.withUnsafeBytes { writer.write($0) }
                func uvar(_ value: UInt64) {
                    var value = value
                    while value >= 0x80 {
                        writer.write(UInt8(truncatingIfNeeded: value) | 0x80)
                        value >>= 7
                    }
                    writer.write(UInt8(value))
                }
                func id(_ id: DocumentID) {
                    writer.writeBigEndian(id.high)
                    writer.writeBigEndian(id.low)
                }
                func stamp(_ time: HybridTimestamp) {
                    writer.write(time.packed)
                    uvar(index(time.replica))
                }
                func write(_ text: String) {
                    var text = text
                    text.withUTF8 { writer.write(UnsafeRawBufferPointer($0)) }
                }
                func write(_ fields: [VaultDocument.Field]) {
                    uvar(UInt64(fields.count))
                    for field in fields {
                        writer.write(field.code | (field.isSecret ? 0x80 : 0))
                        if field.code == 0 {
                            writer.write(UInt8(field.name.utf8.count))
                            write(field.name)
                        }
                        uvar(UInt64(field.value.count))
                        writer.write(UnsafeRawBufferPointer(rebasing: values[field.value]))
                    }
                }
                uvar(UInt64(replicas.count))
                for (index, (replica, time)) in replicas.enumerated() {
                    writer.write(replica.rawValue)
                    writer.write(time.packed)
                    guard v3 else { continue }
                    writer.write(sync[index].dropped)
                    uvar(UInt64(sync[index].seen.count))
                    for seen in sync[index].seen {
                        uvar(seen.index)
                        writer.write(seen.time)
                    }
                }
                uvar(UInt64(count))
                func writeEntries(copyingFrom before: UnsafeRawBufferPointer) {
                    var reported = 0
                    defer { progress?(count) }
                    for piece in entries {
                        if let progress, parts.count - reported >= 256 {
                            reported = parts.count
                            progress(reported)
                        }
                        switch piece {
                        case .copied(let run):
                            // One copy for the run: its entries' bytes lie one after another.
                            let from = previous!.ranges[run.lowerBound].lowerBound
                            let shift = writer.offset - from
                            writer.write(UnsafeRawBufferPointer(rebasing: before[from..<previous!.ranges[run.upperBound - 1].upperBound]))
                            parts.append(contentsOf: previous!.parts[run])
                            // Copied, then moved in place (a lazy map, element by element, was 5 % of a put at 100,000 entries).
                            let first = ranges.count
                            ranges.append(contentsOf: previous!.ranges[run])
                            ranges.withUnsafeMutableBufferPointer { moved in
                                for index in first..<moved.count {
                                    moved[index] = Range(uncheckedBounds: (moved[index].lowerBound + shift, moved[index].upperBound + shift))
                                }
                            }
                        case .encoded(let entry):
                            let start = writer.offset
                            id(entry.id)
                            uvar(UInt64(entry.name.utf8.count))
                            write(entry.name)
                            stamp(entry.modified)
                            uvar(age(entry))
                            uvar(index(entry.created.replica))
                            write(entry.fields)
                            writer.write(UInt8(entry.history.count))
                            for version in entry.history {
                                stamp(version.modified)
                                writer.write(UInt8(version.conflict ? 1 : 0))
                                write(version.fields)
                            }
                            parts.append(entry.identity)
                            ranges.append(start..<writer.offset)
                        }
                    }
                }
                if let previous, pieces != nil {
                    previous.plaintext.withUnsafeBytes { writeEntries(copyingFrom: $0) }
                } else {
                    writeEntries(copyingFrom: UnsafeRawBufferPointer(start: nil, count: 0))
                }
                uvar(UInt64(tombstones.count))
                for (index, (tombstone, time)) in tombstones.enumerated() {
                    id(tombstone)
                    stamp(time)
                    guard v3 else { continue }
                    let deletion = deletions[index]
                    stamp(deletion.of)
                    writer.write(UInt8(deletion.kept == nil ? 0 : 1))
                    if let kept = deletion.kept {
                        uvar(UInt64(kept.name.utf8.count))
                        write(kept.name)
                        stamp(kept.version.modified)
                        writer.write(UInt8(kept.version.conflict ? 1 : 0))
                        write(kept.version.fields)
                    }
                }
                precondition(writer.offset == size, "the body's size was computed wrong")
                // The rest is zero padding (the guarded region starts zeroed? not promised: write it).
                let rest = out.count - writer.offset
                if rest > 0 { UnsafeMutableRawBufferPointer(rebasing: out[writer.offset...]).initializeMemory(as: UInt8.self, repeating: 0) }
            }
        }
        return Encoded(plaintext: plaintext, replicaIDs: replicaIDs, entries: document.entries, parts: parts, ranges: ranges)
    }
}

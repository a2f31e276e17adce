import Glibc
import VaultSodium

/// Reading a body (docs/FORMAT.md, "Reading, in order"): every rule checked, in the order the format gives
/// (its writing is in DocumentBody.swift). The entries' part is in DocumentBodyParse+Entries.swift.
extension DocumentBody {
    /// Whether `bytes` are printable ASCII (no control character, no DEL): such a name passes the name checks
    /// without looking at Unicode scalar properties (the common case, checked first for speed).
    static func isPlainASCIIName(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    /// Parses `plaintext` into a document with `header`'s ids and stanzas. Values are copied once into the
    /// document's guarded arena. The document remembers `plaintext` as what it was last sealed into
    /// (``VaultDocument/encoded``: a seal copies the bytes of the entries it does not change).
    ///
    /// With `reference` (another copy of the vault: ours, when this is the copy a merge brings), the entries whose
    /// bytes are those `reference` was last sealed into (under the same replica table, `reference` unchanged since)
    /// are not parsed again: the document's tables start as `reference`'s (shared, not rebuilt), the entries it does
    /// not hold as `reference` does are parsed and put in, and its arena starts as a copy of `reference`'s
    /// (``VaultDocument/ArenaBasis``), so that a merge moves no value. The same bytes pass the same checks; any
    /// error, or a name or id given twice, is found again by parsing the whole body alone (the error it reports).
    static func parse(
        _ plaintext: SecureBytes, binding: [UInt8], header: DocumentHeader, label: String, reference: VaultDocument? = nil
    ) throws -> VaultDocument {
        if let reference, reference.changed?.isEmpty == true, reference.encoded.withLock({ $0 }) != nil,
           let document = try? parse(plaintext, binding: binding, header: header, label: label, sharingWith: reference) {
            return document
        }
        return try parse(plaintext, binding: binding, header: header, label: label, sharingWith: nil)
    }

    /// What makes a parse that shares a reference's tables give up (the whole body is then parsed alone).
    struct CannotShare: Error {}

    private static func parse(
        _ plaintext: SecureBytes, binding: [UInt8], header: DocumentHeader, label: String, sharingWith reference: VaultDocument?
    ) throws -> VaultDocument {
        try plaintext.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws in
            var parser = BodyParser(bytes, label: label, version: header.version)
            try parser.readBinding(binding)
            let views = try parser.readReplicaTable()
            if let reference {
                try parser.share(reference)
            } else {
                parser.arena.reserve(plaintext.count)
            }
            try parser.checkViews(views)
            let entryCount = try parser.readEntries()
            try parser.readTombstones(after: entryCount)
            try parser.checkPadding()
            return parser.document(header: header, plaintext: plaintext)
        }
    }
}

/// One reading of a body's plaintext, part by part in the order of docs/FORMAT.md's "Plaintext" and "Reading, in
/// order" (step 5): the binding, the replica table and its views, the entries, the tombstones, the padding. Each
/// check is made as its part is read, with the rule name the format gives; what was read builds the document.
struct BodyParser {
    let bytes: UnsafeRawBufferPointer
    var reader: ByteReader
    let label: String
    let v3: Bool

    // The replica table, as read.
    var table: [ReplicaID] = []
    var replicas: [ReplicaID: HybridTimestamp] = [:]
    var sync = VaultDocument.SyncState()
    // The entries and tombstones, their values in `arena`.
    var arena = GuardedArena()
    var entries: VaultDocument.Entries = [:]
    var idsByName: [String: DocumentID] = [:]
    var tombstones: [DocumentID: HybridTimestamp] = [:]
    /// Where each entry's bytes are, by its parts' identity (``DocumentBody/Encoded``).
    var parts: [ObjectIdentifier] = []
    var ranges: [Range<Int>] = []
    /// Sharing a reference's tables (``DocumentBody/parse(_:binding:header:label:reference:)``): its arena as it
    /// was, and what it was last sealed into.
    var basis: VaultDocument.ArenaBasis?
    var reused: DocumentBody.Encoded?
    /// The tombstone being read, once the entries are: what a message names in place of entry `index`.
    var tombstone: Int?

    init(_ bytes: UnsafeRawBufferPointer, label: String, version: UInt16) {
        self.bytes = bytes
        reader = ByteReader(bytes)
        self.label = label
        v3 = version >= 3
    }

    func corrupt(_ reason: Corruption) -> VaultError { .corrupt(path: label, reason: reason) }

    // MARK: Integers and clocks

    /// Inside entry `index`: running out of plaintext is `entry_truncated`. (Mutating, as every method called for
    /// each entry: a non-mutating one called from a mutating one gets a copy of the parser, a retain and release of
    /// each of its tables per call, which made a parse of 10,000 entries half as slow again.)
    mutating func need(_ count: Int, _ index: Int) throws {
        guard reader.remaining >= count else { throw corrupt(.entryTruncated(index: index)) }
    }

    /// A `uvar` (unsigned LEB128 of at most 64 bits, shortest form); running out is `entry_truncated`
    /// (entry `index`), any other malformation `bad_varint`.
    mutating func uvar(_ index: Int) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            try need(1, index)
            let byte = reader.readUInt8()
            if shift == 63, byte > 1 { throw corrupt(.badVarint) }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0, shift > 0 { throw corrupt(.badVarint) }  // a longer form than needed
                return value
            }
            shift += 7
        }
    }

    /// A count or length as an `Int` (any value above `limit` is returned as `limit + 1`: a caller refuses it).
    mutating func number(_ index: Int, limit: Int) throws -> Int {
        let value = try uvar(index)
        return value > UInt64(limit) ? limit + 1 : Int(value)
    }

    /// The replica of a table index, `bad_clock` beyond the table.
    mutating func replica(_ index: Int) throws -> ReplicaID {
        let at = try uvar(index)
        guard at < UInt64(table.count) else {
            throw corrupt(.badClock(.unknownReplica(place: tombstone.map { "tombstone \($0)" } ?? "entry \(index)")))
        }
        return table[Int(at)]
    }

    /// A `stamp`: 48 bits of milliseconds and a 16-bit counter fill the u64 (every value is a valid time), then the
    /// replica's index.
    mutating func stamp(_ index: Int) throws -> HybridTimestamp {
        try need(8, index)
        let packed = reader.readUInt64()
        return HybridTimestamp(packed: packed, replica: try replica(index))
    }

    // MARK: The binding and the replica table

    /// The hash binding the body to its header (`body_binding_mismatch`: a body of another header).
    mutating func readBinding(_ binding: [UInt8]) throws {
        guard reader.remaining >= 32 + 1 else { throw corrupt(.plaintextTooShort) }
        let stored = reader.readBytes(32)
        guard stored.withUnsafeBytes({ a in binding.withUnsafeBytes { Sodium.constantTimeEqual(a, $0) } }) else {
            throw corrupt(.bodyBindingMismatch)
        }
    }

    /// A replica's `seen` row as read: table indexes and times, checked against the table once it is whole.
    typealias View = (position: Int, replica: ReplicaID, seen: [(index: Int, time: UInt64)])

    /// The replica table: sorted, unique ids and their times; in version 3 each one's `dropped` mark and `seen`
    /// row (checked as read, but for the times, ``checkViews(_:)``).
    mutating func readReplicaTable() throws -> [View] {
        let replicaCount = try number(0, limit: reader.remaining)
        guard replicaCount <= reader.remaining / (v3 ? DocumentBody.smallestReplicaV3 : 16) else {
            throw corrupt(.entryCountExceedsData(count: replicaCount))
        }
        table.reserveCapacity(replicaCount)
        var previous: UInt64?
        var views: [View] = []
        for position in 0..<replicaCount {
            try need(16, 0)
            let id = reader.readUInt64()
            let packed = reader.readUInt64()
            if let previous, id <= previous { throw corrupt(.badClock(.replicaOrder(index: position))) }  // sorted, unique
            previous = id
            let replica = ReplicaID(rawValue: id)
            table.append(replica)
            replicas[replica] = HybridTimestamp(packed: packed, replica: replica)
            guard v3 else { continue }
            try need(8, 0)
            let dropped = reader.readUInt64()
            guard dropped <= packed else { throw corrupt(.badClock(.droppedAboveTime(index: position))) }
            if dropped > 0 { sync.dropped[replica] = dropped }
            let seenCount = try number(0, limit: replicaCount)
            guard seenCount <= replicaCount else { throw corrupt(.badClock(.seenCountAboveTable(index: position))) }
            var row: [(index: Int, time: UInt64)] = []
            for _ in 0..<seenCount {
                let at = try uvar(0)
                guard at < UInt64(replicaCount), row.last.map({ UInt64($0.index) < at }) ?? true else {
                    throw corrupt(.badClock(.seenIndex(index: position)))
                }
                try need(8, 0)
                let time = reader.readUInt64()
                guard time > 0 else { throw corrupt(.badClock(.seenTimeZero(index: position))) }
                row.append((Int(at), time))
            }
            if !row.isEmpty { views.append((position, replica, row)) }
        }
        return views
    }

    /// Starts from `reference`'s tables and a copy of its arena. Its entries are shared under the same table only
    /// (their bytes index it).
    mutating func share(_ reference: VaultDocument) throws {
        guard let previous = reference.encoded.withLock({ $0 }), previous.replicaIDs.elementsEqual(table.lazy.map(\.rawValue))
        else { throw DocumentBody.CannotShare() }
        basis = VaultDocument.ArenaBasis(arena: reference.values, count: reference.values.count, generation: reference.values.generation)
        arena = reference.values.copy(reserving: 64 << 10)
        reused = previous
        entries = previous.entries
        idsByName = reference.idsByName
    }

    /// A replica's view holds no time above the table's (checked once the table is whole).
    mutating func checkViews(_ views: [View]) throws {
        for (position, replica, row) in views {
            var seen: [ReplicaID: UInt64] = [:]
            for (at, time) in row {
                guard time <= replicas[table[at]]!.packed else { throw corrupt(.badClock(.seenAboveTable(index: position))) }
                seen[table[at]] = time
            }
            sync.seen[replica] = seen
        }
    }

    // MARK: Tombstones and padding

    /// The tombstone count and the tombstones (after `entryCount` entries: what errors name as the entry).
    mutating func readTombstones(after entryCount: Int) throws {
        let tombstoneCount = try number(entryCount, limit: reader.remaining)
        guard tombstoneCount <= reader.remaining / (v3 ? DocumentBody.smallestTombstoneV3 : DocumentBody.smallestTombstone) else {
            throw corrupt(.entryCountExceedsData(count: tombstoneCount))
        }
        for position in 0..<tombstoneCount {
            tombstone = position
            try need(16, entryCount)
            let id = DocumentID(high: reader.readBigEndian(), low: reader.readBigEndian())
            let time = try stamp(entryCount)
            guard entries[id] == nil, tombstones[id] == nil else { throw corrupt(.duplicateID) }
            // At or below its replica's dropped mark (when there is one): a writer drops it.
            if let mark = sync.dropped[time.replica], time.packed <= mark { throw corrupt(.badTombstone) }
            if v3, let deletion = try readDeletion(position, deleted: time, entryCount: entryCount) { sync.deletions[id] = deletion }
            tombstones[id] = time
        }
    }

    /// Version 3: the tombstone's `of` stamp and `kept` version (`nil` when it says no more than the tombstone).
    mutating func readDeletion(_ position: Int, deleted time: HybridTimestamp, entryCount: Int) throws -> VaultDocument.Deletion? {
        let of = try stamp(entryCount)
        guard of <= time else { throw corrupt(.badClock(.deletedVersionAfterDeletion(tombstone: position))) }
        try need(1, entryCount)
        let flag = reader.readUInt8()
        guard flag <= 1 else { throw corrupt(.badTombstone) }
        var kept: VaultDocument.Kept?
        if flag == 1 {
            do {
                kept = try readKept(position, of: of, deleted: time, entryCount: entryCount)
            } catch VaultError.corrupt(let path, let reason) {
                // What the entries' rules found here is in this tombstone's kept version, not in an entry.
                switch reason {
                case .badClock, .badVarint: throw VaultError.corrupt(path: path, reason: reason)
                default: throw VaultError.corrupt(path: path, reason: .inKeptVersion(tombstone: position, reason))
                }
            }
        }
        return of != time || kept != nil ? VaultDocument.Deletion(of: of, kept: kept) : nil
    }

    /// A tombstone's kept version: a name, a stamp after `of` and before the deletion, flags, fields.
    mutating func readKept(_ position: Int, of: HybridTimestamp, deleted time: HybridTimestamp, entryCount: Int) throws -> VaultDocument.Kept {
        let name = try readName(entryCount)
        let modified = try stamp(entryCount)
        guard modified > of, modified < time else { throw corrupt(.badClock(.keptOutsideDeletion(tombstone: position))) }
        try need(1, entryCount)
        let flags = reader.readUInt8()
        guard flags & ~1 == 0 else { throw corrupt(.badHistory(entry: entryCount)) }
        let keptFields = try readFields(entry: entryCount)
        return VaultDocument.Kept(name: name, version: .init(fields: keptFields, modified: modified, conflict: flags & 1 == 1))
    }

    /// Padding: what is left is zero, and less than one quantum (a writer pads to the next multiple).
    func checkPadding() throws {
        guard reader.remaining < VaultFormat.paddingQuantum else { throw corrupt(.badPadding) }
        let padding = UnsafeRawBufferPointer(rebasing: bytes[reader.offset...])
        guard padding.allSatisfy({ $0 == 0 }) else { throw corrupt(.badPadding) }
    }

    /// The document read, remembering `plaintext` as what it was last sealed into.
    func document(header: DocumentHeader, plaintext: SecureBytes) -> VaultDocument {
        let document = VaultDocument(
            vaultID: header.vaultID, generation: header.generation, dataKeyID: header.dataKeyID, stanzas: header.stanzas,
            replicas: replicas, tombstones: tombstones, entries: entries, idsByName: idsByName, values: arena, label: label,
            formatVersion: header.version, sync: sync)
        document.basis = basis
        let replicaIDs = replicas.keys.map(\.rawValue).sorted()
        document.encoded.withLock {
            $0 = DocumentBody.Encoded(plaintext: plaintext, replicaIDs: replicaIDs, entries: entries, parts: parts, ranges: ranges)
        }
        document.changed = [:]
        return document
    }
}

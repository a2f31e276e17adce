import Glibc
import VaultSodium

/// Reading a body (docs/FORMAT.md, "Reading, in order"): every rule checked, in the order the format gives
/// (its writing is in DocumentBody.swift).
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
    private struct CannotShare: Error {}

    private static func parse(
        _ plaintext: SecureBytes, binding: [UInt8], header: DocumentHeader, label: String, sharingWith reference: VaultDocument?
    ) throws -> VaultDocument {
        func corrupt(_ reason: Corruption) -> VaultError { .corrupt(path: label, reason: reason) }
        var arena = GuardedArena()
        var basis: VaultDocument.ArenaBasis?
        var reused: Encoded?
        var parts: [ObjectIdentifier] = []
        var ranges: [Range<Int>] = []
        var replicas: [ReplicaID: HybridTimestamp] = [:]
        var entries: VaultDocument.Entries = [:]
        var idsByName: [String: DocumentID] = [:]
        var tombstones: [DocumentID: HybridTimestamp] = [:]
        let v3 = header.version >= 3
        var sync = VaultDocument.SyncState()
        try plaintext.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws in
            var reader = ByteReader(bytes)
            guard reader.remaining >= 32 + 1 else { throw corrupt(.plaintextTooShort) }
            let stored = reader.readBytes(32)
            guard stored.withUnsafeBytes({ a in binding.withUnsafeBytes { Sodium.constantTimeEqual(a, $0) } }) else {
                throw corrupt(.bodyBindingMismatch)
            }
            /// Inside entry `index`: running out of plaintext is `entry_truncated`.
            func need(_ count: Int, _ index: Int) throws {
                guard reader.remaining >= count else { throw corrupt(.entryTruncated(index: index)) }
            }
            /// A `uvar` (unsigned LEB128 of at most 64 bits, shortest form); running out is `entry_truncated`
            /// (entry `index`), any other malformation `bad_varint`.
            func uvar(_ index: Int) throws -> UInt64 {
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
            func number(_ index: Int, limit: Int) throws -> Int {
                let value = try uvar(index)
                return value > UInt64(limit) ? limit + 1 : Int(value)
            }
            let replicaCount = try number(0, limit: reader.remaining)
            guard replicaCount <= reader.remaining / (v3 ? Self.smallestReplicaV3 : 16) else { throw corrupt(.entryCountExceedsData(count: replicaCount)) }
            var table: [ReplicaID] = []
            table.reserveCapacity(replicaCount)
            var previous: UInt64?
            var rows: [(position: Int, replica: ReplicaID, seen: [(index: Int, time: UInt64)])] = []
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
                if !row.isEmpty { rows.append((position, replica, row)) }
            }
            // The reference's entries are shared under the same table only (their bytes index it).
            if let reference {
                guard let previous = reference.encoded.withLock({ $0 }), previous.replicaIDs.elementsEqual(table.lazy.map(\.rawValue))
                else { throw CannotShare() }
                basis = VaultDocument.ArenaBasis(arena: reference.values, count: reference.values.count, generation: reference.values.generation)
                arena = reference.values.copy(reserving: 64 << 10)
                reused = previous
                entries = previous.entries
                idsByName = reference.idsByName
            } else {
                arena.reserve(plaintext.count)
            }
            // A replica's view holds no time above the table's (checked once the table is whole).
            for (position, replica, row) in rows {
                var seen: [ReplicaID: UInt64] = [:]
                for (at, time) in row {
                    guard time <= replicas[table[at]]!.packed else { throw corrupt(.badClock(.seenAboveTable(index: position))) }
                    seen[table[at]] = time
                }
                sync.seen[replica] = seen
            }
            /// The tombstone being read, once the entries are: what a message names in place of entry `index`.
            var tombstone: Int?
            /// The replica of a table index, `bad_clock` beyond the table.
            func replica(_ index: Int) throws -> ReplicaID {
                let at = try uvar(index)
                guard at < UInt64(table.count) else {
                    throw corrupt(.badClock(.unknownReplica(place: tombstone.map { "tombstone \($0)" } ?? "entry \(index)")))
                }
                return table[Int(at)]
            }
            // 48 bits of milliseconds and a 16-bit counter fill the u64: every value is a valid time.
            func stamp(_ index: Int) throws -> HybridTimestamp {
                try need(8, index)
                let packed = reader.readUInt64()
                return HybridTimestamp(packed: packed, replica: try replica(index))
            }
            func fields(entry index: Int) throws -> [VaultDocument.Field] {
                let fieldCount = try number(index, limit: VaultDocument.maximumFieldCount)
                guard fieldCount <= VaultDocument.maximumFieldCount else { throw corrupt(.badField(entry: index)) }
                var out: [VaultDocument.Field] = []
                out.reserveCapacity(fieldCount)
                for _ in 0..<fieldCount {
                    try need(1, index)
                    let kind = reader.readUInt8()
                    let code = Int(kind & 0x7F)
                    let name: String
                    if code == 0 {
                        try need(1, index)
                        let nameLength = Int(reader.readUInt8())
                        guard nameLength >= 1 else { throw corrupt(.badField(entry: index)) }
                        try need(nameLength, index)
                        let raw = UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + nameLength])
                        guard let spelled = String(validating: raw, as: UTF8.self),
                              Self.isPlainASCIIName(raw) || (try? VaultDocument.validate(field: spelled)) != nil,
                              Self.code(of: spelled) == 0
                        else { throw corrupt(.badField(entry: index)) }
                        reader.skip(nameLength)
                        name = spelled
                    } else {
                        guard code <= Self.wellKnownFields.count else { throw corrupt(.badField(entry: index)) }
                        name = Self.wellKnownFields[code - 1]
                    }
                    guard !out.contains(where: { $0.name == name }) else { throw corrupt(.badField(entry: index)) }
                    let valueLength = try number(index, limit: VaultFormat.maximumValueByteCount)
                    guard valueLength <= VaultFormat.maximumValueByteCount else { throw corrupt(.badValueLength(index: index)) }
                    try need(valueLength, index)
                    let range = arena.append(UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + valueLength]))
                    reader.skip(valueLength)
                    out.append(VaultDocument.Field(name: name, value: range, isSecret: kind & 0x80 != 0, code: UInt8(code)))
                }
                return out
            }
            /// An entry's name (1 to 4,096 bytes of UTF-8 without control characters), of entry `index`.
            func name(_ index: Int) throws -> String {
                let nameLength = try number(index, limit: VaultFormat.maximumNameByteCount)
                guard nameLength >= 1, nameLength <= VaultFormat.maximumNameByteCount else {
                    throw corrupt(.badNameLength(index: index))
                }
                try need(nameLength, index)
                let rawName = UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + nameLength])
                guard let name = String(validating: rawName, as: UTF8.self) else { throw corrupt(.nameNotUTF8(index: index)) }
                guard Self.isPlainASCIIName(rawName) || (try? SecureKeyValueStore.validate(key: name)) != nil else {
                    throw corrupt(.badName(index: index))
                }
                reader.skip(nameLength)
                return name
            }
            let entryCount = try number(0, limit: reader.remaining)
            guard entryCount <= reader.remaining / Self.smallestEntry else { throw corrupt(.entryCountExceedsData(count: entryCount)) }
            if reused == nil {
                entries.reserveCapacity(entryCount)
                idsByName.reserveCapacity(entryCount)
            }
            parts.reserveCapacity(entryCount)
            ranges.reserveCapacity(entryCount)
            // Sharing: which of the reference's entries this body holds as they are there (by place), and the
            // entries it holds otherwise (put in once every entry is read).
            var held = [Bool](repeating: false, count: reused?.ranges.count ?? 0)
            var own: [VaultDocument.Entry] = []
            var next = 0  // the reference's place expected next (copies of one vault keep its order)
            for index in 0..<entryCount {
                let start = reader.offset
                try need(16, index)
                let id = DocumentID(high: reader.readBigEndian(), low: reader.readBigEndian())
                let place = reused?.place(of: id, hint: next)
                if let reused, let place {
                    let range = reused.ranges[place]
                    let same = reader.remaining >= range.count - 16 && reused.plaintext.withUnsafeBytes { before in
                        memcmp(before.baseAddress! + range.lowerBound, bytes.baseAddress! + start, range.count) == 0
                    }
                    if same {
                        assert(reused.entries[id]?.identity == reused.parts[place], "a sealed plaintext names its entries' parts")
                        guard !held[place] else { throw CannotShare() }  // given twice
                        held[place] = true
                        reader.skip(range.count - 16)
                        parts.append(reused.parts[place])
                        ranges.append(start..<reader.offset)
                        next = place + 1
                        continue
                    }
                }
                let name = try name(index)
                if reused == nil {
                    guard idsByName.updateValue(id, forKey: name) == nil else { throw corrupt(.duplicateName) }
                }
                let modified = try stamp(index)
                let age = try uvar(index)
                guard age <= modified.packed else { throw corrupt(.badClock(.createdBeforeEpoch(entry: index))) }
                let created = HybridTimestamp(packed: modified.packed - age, replica: try replica(index))
                let current = try fields(entry: index)
                try need(1, index)
                let versionCount = Int(reader.readUInt8())
                guard versionCount <= VaultDocument.maximumHistoryVersions else { throw corrupt(.badHistory(entry: index)) }
                var history: [VaultDocument.Version] = []
                var historyBytes = 0
                for _ in 0..<versionCount {
                    let time = try stamp(index)
                    try need(1, index)
                    let flags = reader.readUInt8()
                    guard flags & ~1 == 0 else { throw corrupt(.badHistory(entry: index)) }
                    let versionFields = try fields(entry: index)
                    historyBytes += versionFields.reduce(0) { $0 + $1.name.utf8.count + $1.value.count }
                    history.append(VaultDocument.Version(fields: versionFields, modified: time, conflict: flags & 1 == 1))
                }
                guard historyBytes <= VaultDocument.maximumHistoryByteCount else { throw corrupt(.badHistory(entry: index)) }
                let entry = VaultDocument.Entry(id: id, name: name, fields: current, created: created, modified: modified, history: history)
                if reused == nil {
                    guard entries.updateValue(entry, forKey: id) == nil else { throw corrupt(.duplicateID) }
                } else {
                    if let place {
                        // Another version of one of the reference's entries.
                        guard !held[place] else { throw CannotShare() }
                        held[place] = true
                        next = place + 1
                    }
                    own.append(entry)
                }
                parts.append(entry.identity)
                ranges.append(start..<reader.offset)
            }
            if let reused {
                // The reference's entries this body does not hold (nor another version of) go, and the names of
                // those it holds another version of; then its own versions come in, each name and id once.
                for place in held.indices where !held[place] {
                    let gone = entries.removeValue(forKey: reused.id(at: place))!
                    idsByName[gone.name] = nil
                }
                for entry in own {
                    if let before = entries[entry.id], idsByName[before.name] == entry.id { idsByName[before.name] = nil }
                }
                var ownIDs = Set<DocumentID>()
                for entry in own {
                    guard ownIDs.insert(entry.id).inserted, idsByName.updateValue(entry.id, forKey: entry.name) == nil else {
                        throw CannotShare()
                    }
                    entries[entry.id] = entry
                }
            }
            let tombstoneCount = try number(entryCount, limit: reader.remaining)
            guard tombstoneCount <= reader.remaining / (v3 ? Self.smallestTombstoneV3 : Self.smallestTombstone) else {
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
                if v3 {
                    let of = try stamp(entryCount)
                    guard of <= time else { throw corrupt(.badClock(.deletedVersionAfterDeletion(tombstone: position))) }
                    try need(1, entryCount)
                    let flag = reader.readUInt8()
                    guard flag <= 1 else { throw corrupt(.badTombstone) }
                    var kept: VaultDocument.Kept?
                    if flag == 1 {
                        do {
                            let name = try name(entryCount)
                            let modified = try stamp(entryCount)
                            guard modified > of, modified < time else { throw corrupt(.badClock(.keptOutsideDeletion(tombstone: position))) }
                            try need(1, entryCount)
                            let flags = reader.readUInt8()
                            guard flags & ~1 == 0 else { throw corrupt(.badHistory(entry: entryCount)) }
                            let keptFields = try fields(entry: entryCount)
                            kept = VaultDocument.Kept(name: name, version: .init(fields: keptFields, modified: modified, conflict: flags & 1 == 1))
                        } catch VaultError.corrupt(let path, let reason) {
                            // What the entries' rules found here is in this tombstone's kept version, not in an entry.
                            switch reason {
                            case .badClock, .badVarint: throw VaultError.corrupt(path: path, reason: reason)
                            default: throw VaultError.corrupt(path: path, reason: .inKeptVersion(tombstone: position, reason))
                            }
                        }
                    }
                    if of != time || kept != nil { sync.deletions[id] = VaultDocument.Deletion(of: of, kept: kept) }
                }
                tombstones[id] = time
            }
            // Padding: what is left is zero, and less than one quantum (a writer pads to the next multiple).
            guard reader.remaining < VaultFormat.paddingQuantum else { throw corrupt(.badPadding) }
            let padding = UnsafeRawBufferPointer(rebasing: bytes[reader.offset...])
            guard padding.allSatisfy({ $0 == 0 }) else { throw corrupt(.badPadding) }
        }
        let document = VaultDocument(
            vaultID: header.vaultID, generation: header.generation, dataKeyID: header.dataKeyID, stanzas: header.stanzas,
            replicas: replicas, tombstones: tombstones, entries: entries, idsByName: idsByName, values: arena, label: label,
            formatVersion: header.version, sync: sync)
        document.basis = basis
        let replicaIDs = replicas.keys.map(\.rawValue).sorted()
        document.encoded.withLock {
            $0 = Encoded(plaintext: plaintext, replicaIDs: replicaIDs, entries: entries, parts: parts, ranges: ranges)
        }
        document.changed = [:]
        return document
    }
}

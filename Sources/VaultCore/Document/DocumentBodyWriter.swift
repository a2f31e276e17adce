// Writing a body's plaintext: the sizes of its parts (BodyLayout), then its bytes (BodyWriter), for DocumentBody.encode.

/// The sizes of a body's parts under one replica table (stamps name their replica by its index in it), computed
/// before anything is written: the plaintext is one guarded region of the exact size.
struct BodyLayout {
    let replicaIDs: [UInt64]

    /// A replica's index in the table (a few replicas: a scan beats hashing).
    func index(_ replica: ReplicaID) -> UInt64 {
        UInt64(replicaIDs.firstIndex(of: replica.rawValue)!)
    }

    @inline(__always)
    func uvarSize(_ value: UInt64) -> Int { DocumentBody.uvarSize(value) }

    func stampSize(_ time: HybridTimestamp) -> Int { 8 + uvarSize(index(time.replica)) }

    func fieldsSize(_ fields: [VaultDocument.Field]) -> Int {
        fields.reduce(uvarSize(UInt64(fields.count))) { size, field in
            let name = field.code == 0 ? 1 + field.name.utf8.count : 0
            return size + 1 + name + uvarSize(UInt64(field.value.count)) + field.value.count
        }
    }

    /// Version 3: each replica's dropped mark and seen row (by table index), kept within the table's times so that
    /// the file is valid whatever the document holds.
    func views(
        of document: VaultDocument, replicas: [(key: ReplicaID, value: HybridTimestamp)]
    ) -> [(dropped: UInt64, seen: [(index: UInt64, time: UInt64)])] {
        replicas.map { replica, time in
            let row = (document.seen[replica] ?? [:]).compactMap { other, seen -> (index: UInt64, time: UInt64)? in
                guard seen > 0, let at = replicaIDs.firstIndex(of: other.rawValue) else { return nil }
                return (UInt64(at), min(seen, replicas[at].value.packed))
            }.sorted { $0.index < $1.index }
            return (min(document.dropped[replica] ?? 0, time.packed), row)
        }
    }

    /// The number of entries and the plaintext's size before padding.
    func size(
        of document: VaultDocument, _ entries: [DocumentBody.Piece], previous: DocumentBody.Encoded?, replicas: Int,
        views: [(dropped: UInt64, seen: [(index: UInt64, time: UInt64)])], tombstones: [(key: DocumentID, value: HybridTimestamp)],
        deletions: [VaultDocument.Deletion]
    ) -> (count: Int, size: Int) {
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
                entriesSize += 16 + uvarSize(UInt64(name)) + name + stampSize(entry.modified) + uvarSize(DocumentBody.age(entry))
                    + uvarSize(index(entry.created.replica)) + fieldsSize(entry.fields) + 1
                for version in entry.history { entriesSize += stampSize(version.modified) + 1 + fieldsSize(version.fields) }
            }
        }
        precondition(count == document.entries.count, "the entries to seal were counted wrong")
        var size = 32 + uvarSize(UInt64(replicas)) + replicas * 16 + uvarSize(UInt64(count))
            + uvarSize(UInt64(tombstones.count)) + entriesSize
        for replica in views {
            size += 8 + uvarSize(UInt64(replica.seen.count)) + replica.seen.reduce(0) { $0 + uvarSize($1.index) + 8 }
        }
        for deletion in deletions {
            size += stampSize(deletion.of) + 1
            if let kept = deletion.kept {
                let name = kept.name.utf8.count
                size += uvarSize(UInt64(name)) + name + stampSize(kept.version.modified) + 1 + fieldsSize(kept.version.fields)
            }
        }
        for (_, time) in tombstones { size += 16 + stampSize(time) }
        return (count, size)
    }
}

/// Writes a body's parts, in the order of docs/FORMAT.md's "Plaintext", into a region sized by ``BodyLayout``.
struct BodyWriter {
    var writer: ByteWriter
    /// The document's values (fields name ranges of it).
    let values: UnsafeRawBufferPointer
    let layout: BodyLayout

    init(_ out: UnsafeMutableRawBufferPointer, values: UnsafeRawBufferPointer, layout: BodyLayout) {
        writer = ByteWriter(out)
        self.values = values
        self.layout = layout
    }

    mutating func uvar(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            writer.write(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        writer.write(UInt8(value))
    }

    mutating func id(_ id: DocumentID) {
        writer.writeBigEndian(id.high)
        writer.writeBigEndian(id.low)
    }

    mutating func stamp(_ time: HybridTimestamp) {
        writer.write(time.packed)
        uvar(layout.index(time.replica))
    }

    mutating func write(_ text: String) {
        var text = text
        text.withUTF8 { writer.write(UnsafeRawBufferPointer($0)) }
    }

    mutating func write(_ fields: [VaultDocument.Field]) {
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

    /// The replica table: each replica's id and time; in version 3 its dropped mark and seen row.
    mutating func writeReplicaTable(
        _ replicas: [(key: ReplicaID, value: HybridTimestamp)], views: [(dropped: UInt64, seen: [(index: UInt64, time: UInt64)])], v3: Bool
    ) {
        uvar(UInt64(replicas.count))
        for (index, (replica, time)) in replicas.enumerated() {
            writer.write(replica.rawValue)
            writer.write(time.packed)
            guard v3 else { continue }
            writer.write(views[index].dropped)
            uvar(UInt64(views[index].seen.count))
            for seen in views[index].seen {
                uvar(seen.index)
                writer.write(seen.time)
            }
        }
    }

    /// The entries: runs copied from `before` (`previous`'s plaintext), the others encoded; where each one's bytes
    /// are goes into `parts` and `ranges`.
    mutating func writeEntries(
        _ entries: [DocumentBody.Piece], copyingFrom before: UnsafeRawBufferPointer, previous: DocumentBody.Encoded?,
        parts: inout [ObjectIdentifier], ranges: inout [Range<Int>], progress: ((Int) -> Void)? = nil
    ) {
        // How many entries are written, told every 256 and at the end (`vault recipients remove`'s bar).
        var reported = 0
        defer { progress?(parts.count) }
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
                write(entry)
                parts.append(entry.identity)
                ranges.append(start..<writer.offset)
            }
        }
    }

    /// One entry: id, name, modified stamp, age and created replica, fields, history.
    mutating func write(_ entry: VaultDocument.Entry) {
        id(entry.id)
        uvar(UInt64(entry.name.utf8.count))
        write(entry.name)
        stamp(entry.modified)
        uvar(DocumentBody.age(entry))
        uvar(layout.index(entry.created.replica))
        write(entry.fields)
        writer.write(UInt8(entry.history.count))
        for version in entry.history {
            stamp(version.modified)
            writer.write(UInt8(version.conflict ? 1 : 0))
            write(version.fields)
        }
    }

    /// The tombstones (by id): id and deletion stamp; in version 3 the `of` stamp and the kept version.
    mutating func writeTombstones(
        _ tombstones: [(key: DocumentID, value: HybridTimestamp)], deletions: [VaultDocument.Deletion], v3: Bool
    ) {
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
    }
}

extension DocumentBody {
    /// An entry's `age`: how long before its modified time it was created (0 when the clocks say otherwise).
    static func age(_ entry: VaultDocument.Entry) -> UInt64 {
        entry.created.packed <= entry.modified.packed ? entry.modified.packed - entry.created.packed : 0
    }
}

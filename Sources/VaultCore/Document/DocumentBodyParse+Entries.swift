import Glibc

/// Reading a body's entries and their fields (docs/FORMAT.md, "Entries and fields", "History"), sharing a
/// reference's entries whose bytes are the same.
extension BodyParser {
    /// An entry's name (1 to 4,096 bytes of UTF-8 without control characters), of entry `index`.
    mutating func readName(_ index: Int) throws -> String {
        let nameLength = try number(index, limit: VaultFormat.maximumNameByteCount)
        guard nameLength >= 1, nameLength <= VaultFormat.maximumNameByteCount else {
            throw corrupt(.badNameLength(index: index))
        }
        try need(nameLength, index)
        let rawName = UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + nameLength])
        guard let name = String(validating: rawName, as: UTF8.self) else { throw corrupt(.nameNotUTF8(index: index)) }
        guard DocumentBody.isPlainASCIIName(rawName) || (try? SecureKeyValueStore.validate(key: name)) != nil else {
            throw corrupt(.badName(index: index))
        }
        reader.skip(nameLength)
        return name
    }

    /// A field count and the fields of entry `index` (or of a version of it), their values copied into the arena.
    mutating func readFields(entry index: Int) throws -> [VaultDocument.Field] {
        let fieldCount = try number(index, limit: VaultDocument.maximumFieldCount)
        guard fieldCount <= VaultDocument.maximumFieldCount else { throw corrupt(.badField(entry: index)) }
        var out: [VaultDocument.Field] = []
        out.reserveCapacity(fieldCount)
        for _ in 0..<fieldCount {
            try need(1, index)
            let kind = reader.readUInt8()
            let code = Int(kind & 0x7F)
            let name = try readFieldName(code: code, entry: index)
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

    /// A field's name: well-known by its `code`, else spelled out (1 to 255 bytes, not a well-known one).
    mutating func readFieldName(code: Int, entry index: Int) throws -> String {
        guard code == 0 else {
            guard code <= DocumentBody.wellKnownFields.count else { throw corrupt(.badField(entry: index)) }
            return DocumentBody.wellKnownFields[code - 1]
        }
        try need(1, index)
        let nameLength = Int(reader.readUInt8())
        guard nameLength >= 1 else { throw corrupt(.badField(entry: index)) }
        try need(nameLength, index)
        let raw = UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + nameLength])
        guard let spelled = String(validating: raw, as: UTF8.self),
              DocumentBody.isPlainASCIIName(raw) || (try? VaultDocument.validate(field: spelled)) != nil,
              DocumentBody.code(of: spelled) == 0
        else { throw corrupt(.badField(entry: index)) }
        reader.skip(nameLength)
        return spelled
    }

    /// The rest of entry `index` after its id: name, modified stamp, age and created replica, fields, history.
    mutating func readEntry(_ index: Int, id: DocumentID) throws -> VaultDocument.Entry {
        let name = try readName(index)
        if reused == nil {
            guard idsByName.updateValue(id, forKey: name) == nil else { throw corrupt(.duplicateName) }
        }
        let modified = try stamp(index)
        let age = try uvar(index)
        guard age <= modified.packed else { throw corrupt(.badClock(.createdBeforeEpoch(entry: index))) }
        let created = HybridTimestamp(packed: modified.packed - age, replica: try replica(index))
        let current = try readFields(entry: index)
        let history = try readHistory(index)
        return VaultDocument.Entry(id: id, name: name, fields: current, created: created, modified: modified, history: history)
    }

    /// Entry `index`'s earlier versions, within the caps (`bad_history`).
    mutating func readHistory(_ index: Int) throws -> [VaultDocument.Version] {
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
            let versionFields = try readFields(entry: index)
            historyBytes += versionFields.reduce(0) { $0 + $1.name.utf8.count + $1.value.count }
            history.append(VaultDocument.Version(fields: versionFields, modified: time, conflict: flags & 1 == 1))
        }
        guard historyBytes <= VaultDocument.maximumHistoryByteCount else { throw corrupt(.badHistory(entry: index)) }
        return history
    }

    /// The entry count and the entries (names and ids unique). Sharing a reference's tables, an entry whose bytes
    /// are the reference's is not parsed again, and the others are put in once every entry is read
    /// (``putIn(_:held:)``).
    mutating func readEntries() throws -> Int {
        let entryCount = try number(0, limit: reader.remaining)
        guard entryCount <= reader.remaining / DocumentBody.smallestEntry else { throw corrupt(.entryCountExceedsData(count: entryCount)) }
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
            if let reused, let place, try skipIfShared(id, at: place, in: reused, start: start, held: &held) {
                next = place + 1
                continue
            }
            let entry = try readEntry(index, id: id)
            if reused == nil {
                guard entries.updateValue(entry, forKey: id) == nil else { throw corrupt(.duplicateID) }
            } else {
                if let place {
                    // Another version of one of the reference's entries.
                    guard !held[place] else { throw DocumentBody.CannotShare() }
                    held[place] = true
                    next = place + 1
                }
                own.append(entry)
            }
            parts.append(entry.identity)
            ranges.append(start..<reader.offset)
        }
        if let reused { try putIn(own, held: held, from: reused) }
        return entryCount
    }

    /// Whether entry `id`, starting at `start`, holds the bytes of the reference's at `place` (then skipped over: the
    /// reference's entry is this one's).
    mutating func skipIfShared(_ id: DocumentID, at place: Int, in reused: DocumentBody.Encoded, start: Int, held: inout [Bool]) throws -> Bool {
        let range = reused.ranges[place]
        let same = reader.remaining >= range.count - 16 && reused.plaintext.withUnsafeBytes { before in
            memcmp(before.baseAddress! + range.lowerBound, bytes.baseAddress! + start, range.count) == 0
        }
        guard same else { return false }
        assert(reused.entries[id]?.identity == reused.parts[place], "a sealed plaintext names its entries' parts")
        guard !held[place] else { throw DocumentBody.CannotShare() }  // given twice
        held[place] = true
        reader.skip(range.count - 16)
        parts.append(reused.parts[place])
        ranges.append(start..<reader.offset)
        return true
    }

    /// The reference's entries this body does not hold (nor another version of) go, and the names of those it holds
    /// another version of; then its own versions come in, each name and id once.
    mutating func putIn(_ own: [VaultDocument.Entry], held: [Bool], from reused: DocumentBody.Encoded) throws {
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
                throw DocumentBody.CannotShare()
            }
            entries[entry.id] = entry
        }
    }
}

import VaultSodium
/// The decrypted entries of a vault: one guarded buffer holding the plaintext as the file stores it, and an
/// index from names to the places of their values in that buffer.
///
/// Keeping all values in one `sodium_malloc` region (rather than one region per value) keeps the cost of a
/// vault with 100,000 entries at one allocation, not 100,000 mappings with guard pages.
/// Entry names are held as ordinary `String`s in the index: they are not secret in memory (they are in the file).
struct VaultContents: Sendable {
    struct Entry: Sendable {
        var valueOffset: Int
        var valueCount: Int
        var created: Int64
        var modified: Int64
    }

    /// The index of entries by name (a view over `positions` and `records`).
    struct Index {
        fileprivate let positions: [String: Int]
        fileprivate let records: [Entry]

        subscript(name: String) -> Entry? {
            guard let position = positions[name] else { return nil }
            return records[position]
        }
    }

    /// The plaintext, starting with the header hash.
    let plaintext: SecureBytes
    /// Names in file order.
    private(set) var order: [String]
    /// Each name's position in `order` and `records`. Kept as is (shared, not rebuilt) by writes that add
    /// no name and remove none: then only `records` changes, and no name is hashed again.
    private var positions: [String: Int]
    /// The entries in file order.
    private var records: [Entry]

    var entries: Index { Index(positions: positions, records: records) }

    var count: Int { order.count }

    /// Makes a `String` of UTF-8 bytes, or `nil` if they are not valid UTF-8.
    ///
    /// ASCII (the common case for names and values) takes a specialised path: `String(validating:as:)` goes
    /// through an unspecialised generic in the standard library that looks up type metadata on every call,
    /// which was most of the cost of parsing a large vault and of `getString`.
    @inline(__always)
    static func string(utf8 bytes: UnsafeRawBufferPointer) -> String? {
        let utf8 = bytes.bindMemory(to: UInt8.self)
        if isASCII(bytes) { return String(decoding: utf8, as: UTF8.self) }
        return String(validating: utf8, as: UTF8.self)
    }

    @inline(__always)
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        while index + 8 <= count {
            if bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            index += 8
        }
        while index < count {
            if bytes[index] & 0x80 != 0 { return false }
            index += 1
        }
        return true
    }

    /// Parses a decrypted plaintext. `headerHash` is the BLAKE2b-256 of the file's header.
    ///
    /// The plaintext was authenticated, so a failure here means a writer broke the format: reported as corrupt.
    init(plaintext: SecureBytes, headerHash: [UInt8], path: String) throws {
        self.plaintext = plaintext
        self.order = []
        self.positions = [:]
        self.records = []
        let parsed = try plaintext.withUnsafeBytes { (buffer) throws -> ([String], [String: Int], [Entry]) in
            func corrupt(_ reason: Corruption) -> VaultError { .corrupt(path: path, reason: reason) }
            guard buffer.count >= VaultFormat.headerHashByteCount + 4 else { throw corrupt(.plaintextTooShort) }
            var reader = ByteReader(buffer)
            let storedHash = UnsafeRawBufferPointer(rebasing: buffer[0..<VaultFormat.headerHashByteCount])
            let matches = headerHash.withUnsafeBytes { Sodium.constantTimeEqual($0, storedHash) }
            // The header is bound to the body: any edit of it (generation, parameters, wrapped key) lands here.
            guard matches else { throw VaultError.wrongPassphrase(path: path) }
            reader.skip(VaultFormat.headerHashByteCount)
            let count = Int(reader.readUInt32())
            // Each entry takes at least 2 + 1 + 4 + 16 bytes: an absurd count cannot make us reserve memory.
            guard count <= reader.remaining / 23 else { throw corrupt(.entryCountExceedsData(count: Int(count))) }
            var order = [String]()
            order.reserveCapacity(count)
            var positions = [String: Int](minimumCapacity: count)
            var records = [Entry]()
            records.reserveCapacity(count)
            for index in 0..<count {
                guard reader.remaining >= 2 else { throw corrupt(.entryTruncated(index: index)) }
                let nameCount = Int(reader.readUInt16())
                guard nameCount >= 1, nameCount <= VaultFormat.maximumNameByteCount, reader.remaining >= nameCount
                else { throw corrupt(.badNameLength(index: index)) }
                let nameBytes = UnsafeRawBufferPointer(rebasing: buffer[reader.offset..<reader.offset + nameCount])
                guard let name = VaultContents.string(utf8: nameBytes) else {
                    throw corrupt(.nameNotUTF8(index: index))
                }
                reader.skip(nameCount)
                guard reader.remaining >= 4 else { throw corrupt(.entryTruncated(index: index)) }
                let valueCount = Int(reader.readUInt32())
                guard valueCount <= VaultFormat.maximumValueByteCount, reader.remaining >= valueCount + 16 else {
                    throw corrupt(.badValueLength(index: index))
                }
                let valueOffset = reader.offset
                reader.skip(valueCount)
                let entry = Entry(
                    valueOffset: valueOffset, valueCount: valueCount,
                    created: reader.readInt64(), modified: reader.readInt64())
                guard positions.updateValue(index, forKey: name) == nil else {
                    throw corrupt(.duplicateName)
                }
                order.append(name)
                records.append(entry)
            }
            guard reader.remaining < VaultFormat.paddingQuantum,
                buffer[reader.offset...].allSatisfy({ $0 == 0 })
            else { throw corrupt(.badPadding) }
            return (order, positions, records)
        }
        (self.order, self.positions, self.records) = parsed
    }

    /// Calls `body` with the value stored under `name`, or returns `nil` when there is none.
    func withValue<R>(_ name: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard let position = positions[name] else { return nil }
        let entry = records[position]
        return try plaintext.withUnsafeBytes { buffer in
            try body(UnsafeRawBufferPointer(rebasing: buffer[entry.valueOffset..<entry.valueOffset + entry.valueCount]))
        }
    }

    /// A pending change to one entry: a put names where its value is in the batch's values.
    enum Change {
        case put(Range<Int>)
        case remove
        /// The value of the entry `from` as it is before the batch; `keepCreated`: with its creation time.
        case copy(from: String, keepCreated: Bool)
    }

    /// Builds the plaintext for `headerHash` with `changes` applied, in one pass over the current entries.
    /// `values` holds the values of the puts (each `.put` gives its range). The new plaintext goes into the
    /// region of `spare` when it fits (the region of a plaintext that was replaced), else into a new region with
    /// an eighth more room, so that a vault that grows a little reuses it on the next write.
    ///
    /// Existing entries keep their place (and their creation time); new ones are appended in the order given.
    /// Runs of untouched entries are copied with one `memcpy` each and keep their index entries; the index
    /// of names is rebuilt only when a name is removed (an added name is inserted into a copy of it).
    func applying(
        _ changes: [(name: String, change: Change)], values: UnsafeRawBufferPointer, headerHash: [UInt8],
        now: Int64, path: String, reusing spare: inout SecureBytes?
    ) throws -> VaultContents {
        try plaintext.withUnsafeBytes { (oldBuffer) throws in
            try applying(
                changes, values: values, oldBuffer: oldBuffer, headerHash: headerHash, now: now, path: path,
                reusing: &spare)
        }
    }

    private func applying(
        _ changes: [(name: String, change: Change)], values: UnsafeRawBufferPointer, oldBuffer: UnsafeRawBufferPointer,
        headerHash: [UInt8], now: Int64, path: String, reusing spare: inout SecureBytes?
    ) throws -> VaultContents {
        func value(_ range: Range<Int>) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: values[range]) }
        /// What a change puts: its bytes and the creation time it keeps (nil: the entry's own, or now); nil
        /// for a remove.
        func put(_ change: Change) throws -> (value: UnsafeRawBufferPointer, created: Int64?)? {
            switch change {
            case .put(let range): return (value(range), nil)
            case .remove: return nil
            case .copy(let source, let keepCreated):
                guard let position = positions[source] else { throw VaultError.noSuchEntry(key: source, path: path) }
                let entry = records[position]
                let bytes = UnsafeRawBufferPointer(rebasing: oldBuffer[entry.valueOffset..<entry.valueOffset + entry.valueCount])
                return (bytes, keepCreated ? entry.created : nil)
            }
        }
        var pending = [String: Change](minimumCapacity: changes.count)
        var appended = [String]()
        for (name, change) in changes {
            if pending.updateValue(change, forKey: name) == nil, positions[name] == nil { appended.append(name) }
        }
        // What happens to existing entries, by position; and the new names, in order.
        var replaced = [Int: (value: UnsafeRawBufferPointer, created: Int64?)]()
        var removed = Set<Int>()
        for (name, change) in pending {
            guard let position = positions[name] else { continue }
            if let new = try put(change) { replaced[position] = new } else { removed.insert(position) }
        }
        var added = [(name: String, value: UnsafeRawBufferPointer, created: Int64?)]()
        for name in appended {
            if let change = pending[name], let new = try put(change) { added.append((name, new.value, new.created)) }
        }

        // Entry i spans [start(i), end(i)): its name length is at start(i), end(i) = value end + 16.
        func end(_ entry: Entry) -> Int { entry.valueOffset + entry.valueCount + 16 }
        let firstEntry = VaultFormat.headerHashByteCount + 4
        let oldEnd = records.last.map(end) ?? firstEntry
        var size = oldEnd
        for position in removed {
            let entryStart = position == 0 ? firstEntry : end(records[position - 1])
            size -= end(records[position]) - entryStart
        }
        for (position, new) in replaced { size += new.value.count - records[position].valueCount }
        for (name, value, _) in added { size += 2 + name.utf8.count + 4 + value.count + 16 }
        let padded = (size + VaultFormat.paddingQuantum - 1) / VaultFormat.paddingQuantum * VaultFormat.paddingQuantum
        let paddedSize = max(padded, VaultFormat.paddingQuantum)
        let newCount = records.count - removed.count + added.count
        let changed = removed.union(replaced.keys).sorted()

        var newRecords = [Entry]()
        newRecords.reserveCapacity(newCount)
        let newPlaintext = plaintext.withUnsafeBytes { oldBuffer in
            SecureBytes.recycling(&spare, count: paddedSize, slack: max(4096, paddedSize / 8)) { out in
                var writer = ByteWriter(out)
                headerHash.withUnsafeBytes { writer.write($0) }
                writer.write(UInt32(newCount))
                // Old entries: copy each run of untouched ones at once, shifting their offsets.
                var runStart = firstEntry  // where the pending run of untouched entries starts in the old buffer
                var next = 0  // the first old entry not yet in newRecords
                var shift = 0  // new offset - old offset for the entries of the pending run
                func keepRun(upTo position: Int, endingAt runEnd: Int) {
                    writer.write(UnsafeRawBufferPointer(rebasing: oldBuffer[runStart..<runEnd]))
                    if shift == 0 {
                        newRecords.append(contentsOf: records[next..<position])
                    } else {
                        for var entry in records[next..<position] {
                            entry.valueOffset += shift
                            newRecords.append(entry)
                        }
                    }
                }
                for position in changed {
                    let entry = records[position]
                    let entryStart = position == 0 ? firstEntry : end(records[position - 1])
                    keepRun(upTo: position, endingAt: entryStart)
                    if let (newValue, keptCreated) = replaced[position] {
                        // Name length and name as they were, then the new value and times.
                        let created = keptCreated ?? entry.created
                        writer.write(UnsafeRawBufferPointer(rebasing: oldBuffer[entryStart..<entry.valueOffset - 4]))
                        writer.write(UInt32(newValue.count))
                        let valueOffset = writer.offset
                        writer.write(newValue)
                        writer.write(created)
                        writer.write(now)
                        newRecords.append(
                            Entry(valueOffset: valueOffset, valueCount: newValue.count, created: created, modified: now))
                    }
                    runStart = end(entry)
                    next = position + 1
                    shift = writer.offset - runStart
                }
                keepRun(upTo: records.count, endingAt: oldEnd)
                for (name, value, keptCreated) in added {
                    let created = keptCreated ?? now
                    var name = name
                    name.withUTF8 { utf8 in
                        writer.write(UInt16(utf8.count))
                        writer.write(UnsafeRawBufferPointer(utf8))
                    }
                    writer.write(UInt32(value.count))
                    let valueOffset = writer.offset
                    writer.write(value)
                    writer.write(created)
                    writer.write(now)
                    newRecords.append(Entry(valueOffset: valueOffset, valueCount: value.count, created: created, modified: now))
                }
                precondition(writer.offset == size)
                UnsafeMutableRawBufferPointer(rebasing: out[size...]).initializeMemory(as: UInt8.self, repeating: 0)
            }
        }

        var newOrder: [String]
        var newPositions: [String: Int]
        if removed.isEmpty {
            newOrder = order
            newPositions = positions
            if !added.isEmpty {
                newOrder.reserveCapacity(newCount)
                newPositions.reserveCapacity(newCount)
            }
        } else {
            newOrder = []
            newOrder.reserveCapacity(newCount)
            newPositions = [:]
            newPositions.reserveCapacity(newCount)
            for (position, name) in order.enumerated() where !removed.contains(position) {
                newPositions[name] = newOrder.count
                newOrder.append(name)
            }
        }
        for (name, _, _) in added {
            newPositions[name] = newOrder.count
            newOrder.append(name)
        }
        return VaultContents(plaintext: newPlaintext, order: newOrder, positions: newPositions, records: newRecords)
    }

    private init(plaintext: SecureBytes, order: [String], positions: [String: Int], records: [Entry]) {
        self.plaintext = plaintext
        self.order = order
        self.positions = positions
        self.records = records
    }

    /// An empty vault's contents.
    static func empty(headerHash: [UInt8]) -> VaultContents {
        let plaintext = SecureBytes(count: VaultFormat.paddingQuantum) { out in
            out.initializeMemory(as: UInt8.self, repeating: 0)
            var writer = ByteWriter(out)
            headerHash.withUnsafeBytes { writer.write($0) }
            writer.write(UInt32(0))
        }
        return VaultContents(plaintext: plaintext, order: [], positions: [:], records: [])
    }
}

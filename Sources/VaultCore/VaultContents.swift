/// The decrypted entries of a vault: one guarded buffer holding the plaintext as the file stores it, and an
/// index from names to the places of their values in that buffer.
///
/// Keeping all values in one `sodium_malloc` region (rather than one region per value) keeps the cost of a
/// vault with 100,000 entries at one allocation, not 100,000 mappings with guard pages.
/// Entry names are held as ordinary `String`s in the index: they are not secret in memory (they are in the file).
struct VaultContents {
    struct Entry {
        var valueOffset: Int
        var valueCount: Int
        var created: Int64
        var modified: Int64
    }

    /// The plaintext, starting with the header hash.
    let plaintext: SecureBytes
    /// Names in file order.
    private(set) var order: [String]
    private(set) var entries: [String: Entry]

    var count: Int { order.count }

    /// Parses a decrypted plaintext. `headerHash` is the BLAKE2b-256 of the file's header.
    ///
    /// The plaintext was authenticated, so a failure here means a writer broke the format: reported as corrupt.
    init(plaintext: SecureBytes, headerHash: [UInt8], path: String) throws {
        self.plaintext = plaintext
        self.order = []
        self.entries = [:]
        let parsed = try plaintext.withUnsafeBytes { (buffer) throws -> ([String], [String: Entry]) in
            func corrupt(_ reason: String) -> VaultError { .corrupt(path: path, reason: reason) }
            guard buffer.count >= VaultFormat.headerHashByteCount + 4 else { throw corrupt("plaintext too short") }
            var reader = ByteReader(buffer)
            let storedHash = UnsafeRawBufferPointer(rebasing: buffer[0..<VaultFormat.headerHashByteCount])
            let matches = headerHash.withUnsafeBytes { Sodium.constantTimeEqual($0, storedHash) }
            // The header is bound to the body: any edit of it (generation, parameters, wrapped key) lands here.
            guard matches else { throw VaultError.wrongPassphrase(path: path) }
            reader.skip(VaultFormat.headerHashByteCount)
            let count = Int(reader.readUInt32())
            // Each entry takes at least 2 + 1 + 4 + 16 bytes: an absurd count cannot make us reserve memory.
            guard count <= reader.remaining / 23 else { throw corrupt("entry count \(count) exceeds the data") }
            var order = [String]()
            order.reserveCapacity(count)
            var entries = [String: Entry](minimumCapacity: count)
            for index in 0..<count {
                guard reader.remaining >= 2 else { throw corrupt("entry \(index) truncated") }
                let nameCount = Int(reader.readUInt16())
                guard nameCount >= 1, nameCount <= VaultFormat.maximumNameByteCount, reader.remaining >= nameCount
                else { throw corrupt("entry \(index) has a bad name length") }
                let nameBytes = UnsafeRawBufferPointer(rebasing: buffer[reader.offset..<reader.offset + nameCount])
                guard let name = String(validating: nameBytes.bindMemory(to: UInt8.self), as: UTF8.self) else {
                    throw corrupt("entry \(index) has a name that is not UTF-8")
                }
                reader.skip(nameCount)
                guard reader.remaining >= 4 else { throw corrupt("entry \(index) truncated") }
                let valueCount = Int(reader.readUInt32())
                guard valueCount <= VaultFormat.maximumValueByteCount, reader.remaining >= valueCount + 16 else {
                    throw corrupt("entry \(index) has a bad value length")
                }
                let valueOffset = reader.offset
                reader.skip(valueCount)
                let entry = Entry(
                    valueOffset: valueOffset, valueCount: valueCount,
                    created: reader.readInt64(), modified: reader.readInt64())
                guard entries.updateValue(entry, forKey: name) == nil else {
                    throw corrupt("duplicate entry name")
                }
                order.append(name)
            }
            guard reader.remaining < VaultFormat.paddingQuantum,
                buffer[reader.offset...].allSatisfy({ $0 == 0 })
            else { throw corrupt("bad padding") }
            return (order, entries)
        }
        (self.order, self.entries) = parsed
    }

    /// Calls `body` with the value stored under `name`, or returns `nil` when there is none.
    func withValue<R>(_ name: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        guard let entry = entries[name] else { return nil }
        return try plaintext.withUnsafeBytes { buffer in
            try body(UnsafeRawBufferPointer(rebasing: buffer[entry.valueOffset..<entry.valueOffset + entry.valueCount]))
        }
    }

    /// A pending change to one entry.
    enum Change {
        case put(SecureBytes)
        case remove
    }

    /// Builds the plaintext for `headerHash` with `changes` applied, in one pass over the current entries.
    ///
    /// Existing entries keep their place (and their creation time); new ones are appended in the order given.
    func applying(
        _ changes: [(name: String, change: Change)], headerHash: [UInt8], now: Int64, path: String
    ) throws -> VaultContents {
        var pending = [String: Change](minimumCapacity: changes.count)
        var appended = [String]()
        for (name, change) in changes {
            if pending.updateValue(change, forKey: name) == nil, entries[name] == nil { appended.append(name) }
        }
        // Sources for each entry of the new file, in order.
        enum Source { case old(Entry), new(SecureBytes, created: Int64) }
        var layout = [(name: String, source: Source)]()
        layout.reserveCapacity(order.count + appended.count)
        for name in order {
            let old = entries[name]!
            switch pending[name] {
            case nil: layout.append((name, .old(old)))
            case .remove?: continue
            case .put(let value)?: layout.append((name, .new(value, created: old.created)))
            }
        }
        for name in appended {
            if case .put(let value)? = pending[name] { layout.append((name, .new(value, created: now))) }
        }

        var size = VaultFormat.headerHashByteCount + 4
        for (name, source) in layout {
            let valueCount: Int
            switch source {
            case .old(let entry): valueCount = entry.valueCount
            case .new(let value, _): valueCount = value.count
            }
            size += 2 + name.utf8.count + 4 + valueCount + 16
        }
        let padded = (size + VaultFormat.paddingQuantum - 1) / VaultFormat.paddingQuantum * VaultFormat.paddingQuantum
        let paddedSize = max(padded, VaultFormat.paddingQuantum)

        var newOrder = [String]()
        newOrder.reserveCapacity(layout.count)
        var newEntries = [String: Entry](minimumCapacity: layout.count)
        let newPlaintext = plaintext.withUnsafeBytes { oldBuffer in
            SecureBytes(count: paddedSize) { out in
                out.initializeMemory(as: UInt8.self, repeating: 0)
                var writer = ByteWriter(out)
                headerHash.withUnsafeBytes { writer.write($0) }
                writer.write(UInt32(layout.count))
                for (name, source) in layout {
                    var name = name
                    name.withUTF8 { utf8 in
                        writer.write(UInt16(utf8.count))
                        writer.write(UnsafeRawBufferPointer(utf8))
                    }
                    let created: Int64
                    let modified: Int64
                    let valueOffset: Int
                    let valueCount: Int
                    switch source {
                    case .old(let entry):
                        writer.write(UInt32(entry.valueCount))
                        valueOffset = writer.offset
                        valueCount = entry.valueCount
                        writer.write(UnsafeRawBufferPointer(
                            rebasing: oldBuffer[entry.valueOffset..<entry.valueOffset + entry.valueCount]))
                        (created, modified) = (entry.created, entry.modified)
                    case .new(let value, let createdAt):
                        writer.write(UInt32(value.count))
                        valueOffset = writer.offset
                        valueCount = value.count
                        value.withUnsafeBytes { writer.write($0) }
                        (created, modified) = (createdAt, now)
                    }
                    writer.write(created)
                    writer.write(modified)
                    newOrder.append(name)
                    newEntries[name] = Entry(
                        valueOffset: valueOffset, valueCount: valueCount, created: created, modified: modified)
                }
            }
        }
        return VaultContents(plaintext: newPlaintext, order: newOrder, entries: newEntries)
    }

    private init(plaintext: SecureBytes, order: [String], entries: [String: Entry]) {
        self.plaintext = plaintext
        self.order = order
        self.entries = entries
    }

    /// An empty vault's contents.
    static func empty(headerHash: [UInt8]) -> VaultContents {
        let plaintext = SecureBytes(count: VaultFormat.paddingQuantum) { out in
            out.initializeMemory(as: UInt8.self, repeating: 0)
            var writer = ByteWriter(out)
            headerHash.withUnsafeBytes { writer.write($0) }
            writer.write(UInt32(0))
        }
        return VaultContents(plaintext: plaintext, order: [], entries: [:])
    }
}

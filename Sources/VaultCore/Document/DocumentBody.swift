import VaultSodium

/// The plaintext of a version-2 body (docs/FORMAT.md, "Version 2"): encoded from a document in one guarded
/// region, and parsed with every rule checked (lengths, UTF-8, unique names and ids, flags, caps, padding).
enum DocumentBody {
    /// The plaintext of `document`, bound to its header by `binding`, padded to a multiple of 256 bytes.
    static func encode(_ document: VaultDocument, binding: [UInt8]) throws -> SecureBytes {
        let entries = document.entries.values.sorted { $0.id < $1.id }
        let replicas = document.replicas.sorted { $0.key < $1.key }
        let tombstones = document.tombstones.sorted { $0.key < $1.key }
        func fieldsSize(_ fields: [VaultDocument.Field]) -> Int {
            fields.reduce(0) { $0 + 1 + 1 + $1.name.utf8.count + 4 + $1.value.count }
        }
        var size = 32 + 4 + replicas.count * 16 + 4 + 4 + tombstones.count * 32
        for entry in entries {
            size += 16 + 2 + entry.name.utf8.count + 32 + 2 + fieldsSize(entry.fields) + 1
            for version in entry.history { size += 16 + 1 + 2 + fieldsSize(version.fields) }
        }
        let padded = max((size + VaultFormat.paddingQuantum - 1) / VaultFormat.paddingQuantum * VaultFormat.paddingQuantum, VaultFormat.paddingQuantum)
        guard padded <= VaultFormat.maximumPlaintextByteCount else {
            throw VaultError.vaultTooLarge(path: document.label, byteCount: padded)
        }
        return document.values.withUnsafeBytes { values in
            SecureBytes(count: padded) { out in
                var writer = ByteWriter(out)
                binding.withUnsafeBytes { writer.write($0) }
                writer.write(UInt32(replicas.count))
                for (replica, time) in replicas {
                    writer.write(replica.rawValue)
                    writer.write(time.packed)
                }
                func write(_ time: HybridTimestamp) {
                    writer.write(time.packed)
                    writer.write(time.replica.rawValue)
                }
                func write(_ text: String) {
                    var text = text
                    text.withUTF8 { writer.write(UnsafeRawBufferPointer($0)) }
                }
                func write(_ fields: [VaultDocument.Field]) {
                    writer.write(UInt16(fields.count))
                    for field in fields {
                        writer.write(UInt8(field.isSecret ? 1 : 0))
                        writer.write(UInt8(field.name.utf8.count))
                        write(field.name)
                        writer.write(UInt32(field.value.count))
                        writer.write(UnsafeRawBufferPointer(rebasing: values[field.value]))
                    }
                }
                writer.write(UInt32(entries.count))
                for entry in entries {
                    entry.id.bytes.withUnsafeBytes { writer.write($0) }
                    writer.write(UInt16(entry.name.utf8.count))
                    write(entry.name)
                    write(entry.created)
                    write(entry.modified)
                    write(entry.fields)
                    writer.write(UInt8(entry.history.count))
                    for version in entry.history {
                        write(version.modified)
                        writer.write(UInt8(version.conflict ? 1 : 0))
                        write(version.fields)
                    }
                }
                writer.write(UInt32(tombstones.count))
                for (id, time) in tombstones {
                    id.bytes.withUnsafeBytes { writer.write($0) }
                    write(time)
                }
                // The rest is zero padding (the guarded region starts zeroed? not promised: write it).
                let rest = out.count - writer.offset
                if rest > 0 { UnsafeMutableRawBufferPointer(rebasing: out[writer.offset...]).initializeMemory(as: UInt8.self, repeating: 0) }
            }
        }
    }

    /// Whether `bytes` are printable ASCII (no control character, no DEL): such a name passes the name checks
    /// without looking at Unicode scalar properties (the common case, checked first for speed).
    static func isPlainASCIIName(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    /// Parses `plaintext` into a document with `header`'s ids and stanzas. Values are copied once into the
    /// document's guarded arena.
    static func parse(_ plaintext: SecureBytes, binding: [UInt8], header: DocumentHeader, label: String) throws -> VaultDocument {
        func corrupt(_ reason: Corruption) -> VaultError { .corrupt(path: label, reason: reason) }
        let arena = GuardedArena()
        arena.reserve(plaintext.count)
        var replicas: [ReplicaID: HybridTimestamp] = [:]
        var entries: [DocumentID: VaultDocument.Entry] = [:]
        var idsByName: [String: DocumentID] = [:]
        var tombstones: [DocumentID: HybridTimestamp] = [:]
        try plaintext.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws in
            var reader = ByteReader(bytes)
            guard reader.remaining >= 32 + 4 else { throw corrupt(.plaintextTooShort) }
            let stored = reader.readBytes(32)
            guard stored.withUnsafeBytes({ a in binding.withUnsafeBytes { Sodium.constantTimeEqual(a, $0) } }) else {
                throw corrupt(.bodyBindingMismatch)
            }
            // 48 bits of milliseconds and a 16-bit counter fill the u64: every value is a valid time.
            func time(_ packed: UInt64, _ replica: UInt64) -> HybridTimestamp {
                HybridTimestamp(milliseconds: packed >> 16, counter: UInt16(packed & 0xFFFF), replica: ReplicaID(rawValue: replica))
            }
            /// Inside entry `index`: running out of plaintext is `entry_truncated`.
            func need(_ count: Int, _ index: Int) throws {
                guard reader.remaining >= count else { throw corrupt(.entryTruncated(index: index)) }
            }
            func timestamp(_ index: Int) throws -> HybridTimestamp {
                try need(16, index)
                let packed = reader.readUInt64()
                return time(packed, reader.readUInt64())
            }
            let replicaCount = Int(reader.readUInt32())
            guard replicaCount <= reader.remaining / 16 else { throw corrupt(.entryCountExceedsData(count: replicaCount)) }
            var previous: UInt64?
            for _ in 0..<replicaCount {
                let id = reader.readUInt64()
                let packed = reader.readUInt64()
                if let previous, id <= previous { throw corrupt(.badClock) }  // sorted, unique
                previous = id
                replicas[ReplicaID(rawValue: id)] = time(packed, id)
            }
            func fields(entry index: Int) throws -> [VaultDocument.Field] {
                try need(2, index)
                let count = Int(reader.readUInt16())
                guard count <= VaultDocument.maximumFieldCount else { throw corrupt(.badField(entry: index)) }
                var out: [VaultDocument.Field] = []
                out.reserveCapacity(count)
                for _ in 0..<count {
                    try need(2, index)
                    let flags = reader.readUInt8()
                    guard flags & ~1 == 0 else { throw corrupt(.badField(entry: index)) }
                    let nameLength = Int(reader.readUInt8())
                    guard nameLength >= 1 else { throw corrupt(.badField(entry: index)) }
                    try need(nameLength + 4, index)
                    let raw = UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + nameLength])
                    guard let name = String(validating: raw, as: UTF8.self),
                          Self.isPlainASCIIName(raw) || (try? VaultDocument.validate(field: name)) != nil,
                          !out.contains(where: { $0.name == name })
                    else { throw corrupt(.badField(entry: index)) }
                    reader.skip(nameLength)
                    let valueLength = Int(reader.readUInt32())
                    guard valueLength <= VaultFormat.maximumValueByteCount else { throw corrupt(.badValueLength(index: index)) }
                    try need(valueLength, index)
                    let range = arena.append(UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + valueLength]))
                    reader.skip(valueLength)
                    out.append(VaultDocument.Field(name: name, value: range, isSecret: flags & 1 == 1))
                }
                return out
            }
            try need(4, 0)
            let entryCount = Int(reader.readUInt32())
            guard entryCount <= reader.remaining / (16 + 2 + 1 + 32 + 2 + 1) else { throw corrupt(.entryCountExceedsData(count: entryCount)) }
            entries.reserveCapacity(entryCount)
            idsByName.reserveCapacity(entryCount)
            for index in 0..<entryCount {
                try need(18, index)
                let id = DocumentID(bytes: reader.readBytes(16))!
                let nameLength = Int(reader.readUInt16())
                guard nameLength >= 1, nameLength <= VaultFormat.maximumNameByteCount else {
                    throw corrupt(.badNameLength(index: index))
                }
                try need(nameLength, index)
                guard let name = String(validating: UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + nameLength]), as: UTF8.self) else {
                    throw corrupt(.nameNotUTF8(index: index))
                }
                guard Self.isPlainASCIIName(UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + nameLength]))
                        || (try? SecureKeyValueStore.validate(key: name)) != nil
                else { throw corrupt(.badName(index: index)) }
                reader.skip(nameLength)
                guard idsByName.updateValue(id, forKey: name) == nil else { throw corrupt(.duplicateName) }
                let created = try timestamp(index)
                let modified = try timestamp(index)
                let current = try fields(entry: index)
                try need(1, index)
                let versionCount = Int(reader.readUInt8())
                guard versionCount <= VaultDocument.maximumHistoryVersions else { throw corrupt(.badHistory(entry: index)) }
                var history: [VaultDocument.Version] = []
                var historyBytes = 0
                for _ in 0..<versionCount {
                    let time = try timestamp(index)
                    try need(1, index)
                    let flags = reader.readUInt8()
                    guard flags & ~1 == 0 else { throw corrupt(.badHistory(entry: index)) }
                    let versionFields = try fields(entry: index)
                    historyBytes += versionFields.reduce(0) { $0 + $1.name.utf8.count + $1.value.count }
                    history.append(VaultDocument.Version(fields: versionFields, modified: time, conflict: flags & 1 == 1))
                }
                guard historyBytes <= VaultDocument.maximumHistoryByteCount else { throw corrupt(.badHistory(entry: index)) }
                guard entries[id] == nil else { throw corrupt(.duplicateID) }
                entries[id] = VaultDocument.Entry(id: id, name: name, fields: current, created: created, modified: modified, history: history)
            }
            try need(4, entryCount)
            let tombstoneCount = Int(reader.readUInt32())
            guard tombstoneCount <= reader.remaining / 32 else { throw corrupt(.entryCountExceedsData(count: tombstoneCount)) }
            for _ in 0..<tombstoneCount {
                let id = DocumentID(bytes: reader.readBytes(16))!
                let time = try timestamp(entryCount)
                guard entries[id] == nil, tombstones[id] == nil else { throw corrupt(.duplicateID) }
                tombstones[id] = time
            }
            // Padding: what is left is zero, and less than one quantum (a writer pads to the next multiple).
            guard reader.remaining < VaultFormat.paddingQuantum else { throw corrupt(.badPadding) }
            let padding = UnsafeRawBufferPointer(rebasing: bytes[reader.offset...])
            guard padding.allSatisfy({ $0 == 0 }) else { throw corrupt(.badPadding) }
        }
        return VaultDocument(
            vaultID: header.vaultID, generation: header.generation, dataKeyID: header.dataKeyID, stanzas: header.stanzas,
            replicas: replicas, tombstones: tombstones, entries: entries, idsByName: idsByName, values: arena, label: label)
    }
}

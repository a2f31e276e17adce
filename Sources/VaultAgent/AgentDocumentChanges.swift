import VaultCore

/// Document changes on the wire (``AgentOperation/apply``): a batch of ``DocumentChange``s, or a batch of format
/// version 1's terms streamed as the same fields, and the versions of an entry given whole (`insert`). Each side
/// encodes what the other decodes; `Fuzz/` checks that a decoded batch encodes back to the same batch.
extension AgentWire {
    /// Writes `changes` as fields: per change a `change` byte (``AgentDocumentChange``) and its fields.
    static func encode(_ changes: [DocumentChange], into writer: Writer) {
        func kind(_ change: AgentDocumentChange) { writer.field(.change, byte: change.rawValue) }
        for change in changes {
            switch change {
            case let .setField(entry, field, value, secret):
                kind(.setField)
                writer.field(.name, entry)
                writer.field(.field, field)
                if let secret { writer.field(.secret, secret) }
                writer.field(.value, value)
            case let .removeField(entry, field):
                kind(.removeField)
                writer.field(.name, entry)
                writer.field(.field, field)
            case let .delete(entry, ifPresent):
                kind(.delete)
                writer.field(.name, entry)
                writer.field(.bool, ifPresent)
            case let .rename(from, to, replacing):
                kind(.rename)
                writer.field(.source, from)
                writer.field(.name, to)
                writer.field(.bool, replacing)
            case let .copy(from, to, replacing):
                kind(.copy)
                writer.field(.source, from)
                writer.field(.name, to)
                writer.field(.bool, replacing)
            case let .restore(entry, version):
                kind(.restore)
                writer.field(.name, entry)
                writer.field(.version, UInt64(max(0, version)))
            case let .require(entry, exists):
                kind(.require)
                writer.field(.name, entry)
                writer.field(.bool, exists)
            case let .requireField(entry, field, exists):
                kind(.requireField)
                writer.field(.name, entry)
                writer.field(.field, field)
                writer.field(.bool, exists)
            case .deleteAll:
                kind(.deleteAll)
            case let .restoreDeleted(entry):
                kind(.restoreDeleted)
                writer.field(.name, entry)
            case let .insert(entry, current, history, created, values):
                kind(.insert)
                writer.field(.name, entry)
                if let created { writer.field(.created, created) }
                writer.field(.value, encodeVersions([current] + history, values: values))
            }
        }
    }

    /// `changes`, a batch of format version 1's terms, as the document changes ``VaultChanges/documentChanges()``
    /// makes of it (the same fields), written straight from the batch's one guarded region: no region per value, so
    /// a batch of any number of puts stays one mapping on this side.
    static func encode(_ changes: VaultChanges, into writer: Writer) throws {
        func kind(_ change: AgentDocumentChange) { writer.field(.change, byte: change.rawValue) }
        func names(source: String, name: String) {
            writer.field(.source, source)
            writer.field(.name, name)
            writer.field(.bool, true)  // replacing, as version 1's copies do
        }
        try changes.forEach { item in
            guard case .require(let name, let exists) = item else { return }
            kind(.require)
            writer.field(.name, name)
            writer.field(.bool, exists)
        }
        if changes.removesEverything { kind(.deleteAll) }
        // A copy keeping its creation time, waiting to see whether the next item removes its source (a move: a rename).
        var pending: (name: String, source: String)?
        func flush() {
            guard let copy = pending else { return }
            kind(.copy)
            names(source: copy.source, name: copy.name)
            pending = nil
        }
        try changes.forEach { item in
            if case .remove(let name) = item, let move = pending, move.source == name {
                kind(.rename)
                names(source: move.source, name: move.name)
                pending = nil
                return
            }
            flush()
            switch item {
            case .require: break
            case .put(let name, let value):
                kind(.setField)
                writer.field(.name, name)
                writer.field(.field, "password")
                writer.field(.value, value)
            case .remove(let name):
                kind(.delete)
                writer.field(.name, name)
                writer.field(.bool, true)
            case .copy(let name, let source, let keepCreated):
                if keepCreated { pending = (name, source) } else {
                    kind(.copy)
                    names(source: source, name: name)
                }
            }
        }
        flush()
    }

    /// Versions of an entry given whole (an `insert`), current first, their values taken from `values`, as one value
    /// in guarded memory; all integers little-endian: `count u32`, then per version `modified u64` (`UInt64.max`:
    /// unknown), `conflict u8`, `field_count u32`, then per field `secret u8`, `name_length u16`, `name`,
    /// `value_length u32`, `value`.
    static func encodeVersions(_ versions: [DocumentVersion], values: SecureBytes) -> SecureBytes {
        let size = 4 + versions.reduce(0) { total, version in
            total + 13 + version.fields.reduce(0) { $0 + 7 + $1.name.utf8.count + $1.value.count }
        }
        return values.withUnsafeBytes { source in
            SecureBytes(capacity: size) { out in
                func put<T: FixedWidthInteger>(_ number: T) { out.append(littleEndian: number) }
                func put(_ bytes: UnsafeRawBufferPointer) { out.append(bytes) }
                put(UInt32(versions.count))
                for version in versions {
                    put(version.modified ?? UInt64.max)
                    put(UInt8(version.conflict ? 1 : 0))
                    put(UInt32(version.fields.count))
                    for field in version.fields {
                        put(UInt8(field.isSecret ? 1 : 0))
                        let name = Array(field.name.utf8)
                        put(UInt16(name.count))
                        name.withUnsafeBytes { put($0) }
                        put(UInt32(field.value.count))
                        put(UnsafeRawBufferPointer(rebasing: source[field.value]))
                    }
                }
            }
        }
    }

    /// The versions in `bytes[range]` (``encodeVersions(_:values:)``'s inverse), current first, their values left
    /// where they are: ranges of `bytes` (the request's payload: no copy per value). Anything out of bounds, a name
    /// that is not UTF-8 or bytes left over is a protocol error.
    static func decodeVersions(_ bytes: SecureBytes, in range: Range<Int>? = nil) throws -> [DocumentVersion] {
        try bytes.withUnsafeBytes { all throws -> [DocumentVersion] in
            let range = range ?? 0..<all.count
            let raw = UnsafeRawBufferPointer(rebasing: all[range])
            var offset = 0
            func malformed() -> AgentError { .protocolError("malformed versions of an inserted entry") }
            func take(_ count: Int) throws -> Range<Int> {
                guard count >= 0, count <= raw.count - offset else { throw malformed() }
                defer { offset += count }
                return offset..<(offset + count)
            }
            func number<T: FixedWidthInteger>(_: T.Type) throws -> T {
                let part = try take(MemoryLayout<T>.size)
                return raw[part].reversed().reduce(T(0)) { $0 << 8 | T($1) }
            }
            let count = try number(UInt32.self)
            guard count >= 1, Int(count) <= raw.count / 13 else { throw malformed() }
            var versions: [DocumentVersion] = []
            for _ in 0..<count {
                let modified = try number(UInt64.self)
                let conflict = try number(UInt8.self)
                let fieldCount = try number(UInt32.self)
                guard conflict <= 1, Int(fieldCount) <= (raw.count - offset) / 7 else { throw malformed() }
                var fields: [DocumentField] = []
                for _ in 0..<fieldCount {
                    let secret = try number(UInt8.self)
                    let nameLength = try number(UInt16.self)
                    guard secret <= 1, let name = String(validating: raw[try take(Int(nameLength))], as: UTF8.self) else { throw malformed() }
                    let valueLength = try number(UInt32.self)
                    let value = try take(Int(valueLength))
                    fields.append(DocumentField(name: name, isSecret: secret == 1, value: (value.lowerBound + range.lowerBound)..<(value.upperBound + range.lowerBound)))
                }
                versions.append(DocumentVersion(fields: fields, modified: modified == UInt64.max ? nil : modified, conflict: conflict == 1))
            }
            guard offset == raw.count else { throw malformed() }
            return versions
        }
    }

    /// The document changes in `request` (``encode(_:into:)``'s inverse): a change missing a field it needs, or
    /// a text field that is not UTF-8, is refused; fields of other tags are ignored.
    static func documentChanges(from request: Message) throws -> [DocumentChange] {
        var changes: [DocumentChange] = []
        var kind: AgentDocumentChange?
        var name: String?, field: String?, source: String?, value: SecureBytes?, secret: Bool?, flag = false
        var number: Int?, created: UInt64?, valueRange: Range<Int>?
        func missing() -> AgentError { .protocolError("a document change without a field it needs") }
        func finish() throws {
            defer { (name, field, source, value, secret, flag, number, created, valueRange) = (nil, nil, nil, nil, nil, false, nil, nil, nil) }
            guard let current = kind else { return }
            switch current {
            case .setField:
                guard let name, let field, let value else { throw missing() }
                changes.append(.setField(entry: name, field: field, value: value, secret: secret))
            case .removeField:
                guard let name, let field else { throw missing() }
                changes.append(.removeField(entry: name, field: field))
            case .delete:
                guard let name else { throw missing() }
                changes.append(.delete(entry: name, ifPresent: flag))
            case .rename:
                guard let name, let source else { throw missing() }
                changes.append(.rename(from: source, to: name, replacing: flag))
            case .copy:
                guard let name, let source else { throw missing() }
                changes.append(.copy(from: source, to: name, replacing: flag))
            case .restore:
                guard let name, let number else { throw missing() }
                changes.append(.restore(entry: name, version: number))
            case .require:
                guard let name else { throw missing() }
                changes.append(.require(entry: name, exists: flag))
            case .requireField:
                guard let name, let field else { throw missing() }
                changes.append(.requireField(entry: name, field: field, exists: flag))
            case .deleteAll:
                changes.append(.deleteAll)
            case .restoreDeleted:
                guard let name else { throw missing() }
                changes.append(.restoreDeleted(entry: name))
            case .insert:
                guard let name, let valueRange else { throw missing() }
                // The values stay in the request's payload: one guarded region for the whole batch.
                let versions = try decodeVersions(request.payload, in: valueRange)
                changes.append(.insert(entry: name, current: versions[0], history: Array(versions.dropFirst()), created: created, values: request.payload))
            }
        }
        func text(_ range: Range<Int>, _ what: String) throws -> String {
            guard let text = request.string(range) else {
                throw what == "name" ? VaultError.invalidEntryName(reason: "the name is not valid UTF-8")
                    : VaultError.invalidFieldName("the field name is not valid UTF-8")
            }
            return text
        }
        for item in request.fields {
            let range = item.range
            switch Tag(rawValue: item.tag) {
            case .change:
                try finish()
                guard range.count == 1, let next = request.payload.withUnsafeBytes({ AgentDocumentChange(rawValue: $0[range.lowerBound]) }) else {
                    throw AgentError.protocolError("an unknown document change")
                }
                kind = next
            case .name: name = try text(range, "name")
            case .source: source = try text(range, "name")
            case .field: field = try text(range, "field")
            case .value:
                // The values stay in the request's payload (slices of its one guarded region: a batch of 100,000
                // values is no more mappings than one).
                if kind == .insert { valueRange = range } else { value = request.payload.slice(range) }
            case .secret: secret = request.bool(range)
            case .bool: flag = request.bool(range)
            case .created:
                guard let raw = request.number(range) else { throw AgentError.protocolError("a malformed creation time") }
                created = raw
            case .version:
                guard let raw = request.number(range), raw <= UInt64(Int.max) else { throw AgentError.protocolError("a malformed version") }
                number = Int(raw)
            default: break
            }
        }
        try finish()
        return changes
    }
}

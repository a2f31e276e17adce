import VaultCore

/// A batch of changes on the wire: the fields of a `write` request (docs/AGENT.md, "Wire protocol"). The client
/// encodes (``AgentVault/write(_:)``), the agent decodes; `Fuzz/` checks that what decodes encodes back to the
/// same batch.
extension AgentWire {
    /// Writes `changes` as fields: `flags` (the batch starts by removing every entry), then per item a `change`
    /// byte and the entry's `name`, with the `value` of a put or the `source` of a copy.
    static func encode(_ changes: SecureKeyValueStore.Changes, into writer: Writer) throws {
        writer.field(.flags, changes.removesEverything)
        try changes.forEach { item in
            switch item {
            case .put(let name, let value):
                writer.field(.change, byte: AgentChange.put.rawValue)
                writer.field(.name, name)
                writer.field(.value, value)
            case .remove(let name):
                writer.field(.change, byte: AgentChange.remove.rawValue)
                writer.field(.name, name)
            case .copy(let name, let source, let keepCreated):
                writer.field(.change, byte: (keepCreated ? AgentChange.copyKeepingCreated : .copy).rawValue)
                writer.field(.name, name)
                writer.field(.source, source)
            case .require(let name, let exists):
                writer.field(.change, byte: (exists ? AgentChange.requireExists : .requireAbsent).rawValue)
                writer.field(.name, name)
            }
        }
    }

    /// The batch of changes in `request`'s fields (``encode(_:into:)``'s inverse). Fields of other tags are
    /// ignored; a value without a put, or a source without a copy, is a protocol error; names are checked as
    /// every change's names are (``SecureKeyValueStore/Changes``).
    static func changes(from request: Message) throws -> SecureKeyValueStore.Changes {
        var changes = SecureKeyValueStore.Changes()
        if request.bool(.flags) { changes.removeAll() }
        var kind: AgentChange?
        var name: String?
        try request.forEachField { tag, bytes in
            switch Tag(rawValue: tag) {
            case .change:
                kind = bytes.count == 1 ? AgentChange(rawValue: bytes[0]) : nil
                name = nil
            case .name:
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw VaultError.invalidEntryName(reason: "the name is not valid UTF-8")
                }
                name = text
                guard let name else { break }
                switch kind {
                case .remove: changes.remove(name)
                case .requireExists: changes.require(name, exists: true)
                case .requireAbsent: changes.require(name, exists: false)
                default: break
                }
            case .source:
                guard kind == .copy || kind == .copyKeepingCreated, let name else {
                    throw AgentError.protocolError("a source without a copy")
                }
                guard let source = String(validating: bytes, as: UTF8.self) else {
                    throw VaultError.invalidEntryName(reason: "the name is not valid UTF-8")
                }
                try changes.copy(source, to: name, keepCreated: kind == .copyKeepingCreated)
            case .value:
                guard kind == .put, let name else { throw AgentError.protocolError("a value without a put") }
                try changes.put(SecureBytes(bytes), forKey: name)
            default: break
            }
        }
        return changes
    }
}

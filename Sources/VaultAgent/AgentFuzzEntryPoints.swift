import VaultCore

/// Entry points for the libFuzzer targets in `Fuzz/` (not API: `@_spi(Fuzzing)`), as VaultCore's.
@_spi(Fuzzing) public enum AgentFuzzEntryPoints {
    /// Reads `bytes` as the payload of a frame the agent received (what any process of the user can send it):
    /// the message parse, every field accessor the agent and its clients use, and the batch of changes of a
    /// write. A batch that decodes is encoded again, as a client sends it, and must decode to the same items.
    public static func decodeRequest(_ bytes: [UInt8]) {
        guard let message = try? AgentWire.Message(payload: SecureBytes(bytes)) else { return }
        for raw in UInt8.min...UInt8.max {
            guard let tag = AgentWire.Tag(rawValue: raw) else { continue }
            _ = message.string(tag)
            _ = message.secret(tag)
            _ = message.number(tag)
            _ = message.bool(tag)
            _ = message.strings(tag)
            _ = message.numbers(tag)
        }
        if let changes = try? AgentWire.documentChanges(from: message) {
            let writer = AgentWire.Writer(kind: message.kind)
            AgentWire.encode(changes, into: writer)
            do {
                let again = try AgentWire.documentChanges(from: AgentWire.Message(payload: writer.buffer.secureBytes()))
                precondition(changes.map(describe) == again.map(describe), "a document batch changed on its way through the wire")
            } catch {
                preconditionFailure("a decoded document batch did not encode and decode again: \(error)")
            }
        }
        if let records = try? AgentWire.records(from: message), !records.isEmpty {
            let writer = AgentWire.Writer(kind: message.kind)
            AgentWire.encode(records, into: writer)
            let again = try? AgentWire.records(from: AgentWire.Message(payload: writer.buffer.secureBytes()))
            precondition(again?.map(describe) == records.map(describe), "an entry changed on its way through the wire")
        }
        guard let changes = try? AgentWire.changes(from: message) else { return }
        let writer = AgentWire.Writer(kind: message.kind)
        do {
            try AgentWire.encode(changes, into: writer)
            let again = try AgentWire.changes(from: AgentWire.Message(payload: writer.buffer.secureBytes()))
            let sent = try items(of: changes), received = try items(of: again)
            precondition(sent == received, "a batch changed on its way through the wire")
        } catch {
            preconditionFailure("a decoded batch did not encode and decode again: \(error)")
        }
    }

    /// A document change as text (values in hex).
    static func describe(_ change: DocumentChange) -> String {
        switch change {
        case let .setField(entry, field, value, secret):
            return "set \(entry) \(field) \(String(describing: secret)) " + value.unprotectedBytes.map { String($0, radix: 16) }.joined(separator: ",")
        case let .insert(entry, current, history, created, values):
            let bytes = values.unprotectedBytes
            return "insert \(entry) \(String(describing: created)) " + ([current] + history).map { version in
                "\(String(describing: version.modified)) \(version.conflict) " + version.fields.map {
                    "\($0.name) \($0.isSecret) " + bytes[$0.value].map { String($0, radix: 16) }.joined(separator: ",")
                }.joined(separator: ";")
            }.joined(separator: "|")
        default: return "\(change)"
        }
    }

    /// A record as text (values in hex).
    static func describe(_ record: EntryRecord) -> String {
        "\(record.id) \(record.name) \(record.version) \(record.created) \(record.modified) \(record.conflict) "
            + record.fields.map { "\($0.name) \($0.isSecret) " + $0.value.unprotectedBytes.map { String($0, radix: 16) }.joined(separator: ",") }
                .joined(separator: ";")
    }

    /// The batch's items as text (values in hex), in order, with its remove-everything flag.
    static func items(of changes: SecureKeyValueStore.Changes) throws -> [String] {
        var items = ["removes everything: \(changes.removesEverything)"]
        try changes.forEach { item in
            switch item {
            case .put(let name, let value): items.append("put \(name) " + value.map { String($0, radix: 16) }.joined(separator: ","))
            case .remove(let name): items.append("remove \(name)")
            case .copy(let name, let source, let keepCreated): items.append("copy \(source) to \(name) keeping created: \(keepCreated)")
            case .require(let name, let exists): items.append("require \(name) exists: \(exists)")
            }
        }
        return items
    }
}

import VaultCore

/// Entry points for the libFuzzer targets in `Fuzz/` (not API: `@_spi(Fuzzing)`), as VaultCore's.
@_spi(Fuzzing) public enum AgentFuzzEntryPoints {
    /// Reads `bytes` as the payload of a frame the agent received (what any process of the user can send it):
    /// the message parse, every field accessor the agent and its clients use, and the batch of changes of a
    /// write. A batch that decodes is encoded again, as a client sends it, and must decode to the same items.
    public static func decodeRequest(_ bytes: [UInt8]) {
        guard let message = try? AgentWire.Message(payload: SecureBytes(bytes)) else { return }
        // The typed request, as the agent reads it: one that decodes encodes, as a client sends it, to a payload
        // that decodes to the same request.
        if let request = try? AgentRequest(message) {
            do {
                let again = try AgentRequest(AgentWire.Message(payload: try request.encode().buffer.secureBytes()))
                let sent = try describe(request), received = try describe(again)
                precondition(sent == received, "a request changed on its way through the wire")
            } catch {
                preconditionFailure("a decoded request did not encode and decode again: \(error)")
            }
        }
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

    /// A request as text (secrets and files in hex), for comparing two.
    static func describe(_ request: AgentRequest) throws -> String {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String($0, radix: 16) }.joined(separator: ",") }
        func hex(_ secret: SecureBytes?) -> String { secret.map { hex($0.unprotectedBytes) } ?? "none" }
        switch request {
        case .status, .lockAll, .lock: return "\(request)"
        case let .unlock(path, unlock):
            let key: String
            switch unlock.key {
            case .passphrase(let passphrase): key = "passphrase " + hex(passphrase)
            case .dataKey(let dataKey): key = "data key " + hex(dataKey)
            }
            return "unlock \(path) \(key) kept \(hex(unlock.keptIdentities)) \(unlock.idleSeconds) \(unlock.maxSeconds) "
                + "\(unlock.insecureKDFForTesting) \(String(describing: unlock.lockTimeoutMilliseconds))"
        case let .mergeFiles(ours, theirs, labels): return "merge files \(hex(ours)) \(hex(theirs)) \(labels)"
        case let .describeFile(bytes, label): return "describe \(hex(bytes)) \(label)"
        case let .vault(path, operation):
            let what: String
            switch operation {
            case .write(let changes): what = "write " + (try items(of: changes)).joined(separator: "|")
            case .passwd(let passphrase): what = "passwd " + hex(passphrase)
            case .recipients(.remove(let recipient, let passphrase)): what = "remove recipient \(recipient) " + hex(passphrase)
            case .apply(let changes): what = "apply " + changes.map(describe).joined(separator: "|")
            case .merge(let merge):
                what = "merge \(merge.label) \(hex(merge.file)) \(merge.dryRun) \(hex(merge.otherPassphrase)) \(merge.acceptDeletions)"
            default: what = "\(operation)"
            }
            return "\(path) \(what)"
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
        "\(record.id) \(record.name) \(record.version) \(record.created) \(record.modified) \(record.modifiedBy ?? "-") \(record.conflict) "
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

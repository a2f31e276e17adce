import VaultCore

/// Entry points for the libFuzzer targets in `Fuzz/` (not API: `@_spi(Fuzzing)`), as VaultCore's.
@_spi(Fuzzing) public enum AgentFuzzEntryPoints {
    /// Reads `bytes` as the payload of a frame the agent received (what any process of the user can send it):
    /// the message parse, every field accessor the agent and its clients use, the typed request and a document
    /// batch. What decodes is encoded again, as a client sends it, and must decode to the same.
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
        // The same bytes as an answer (what a client reads from whatever listens on the agent's path), to a request
        // of each kind: one that decodes encodes, as the agent sends it, to a payload that decodes to the same.
        for operation in (UInt8.min...UInt8.max).compactMap(AgentOperation.init(rawValue:)) {
            guard let response = try? AgentResponse(message, answering: operation) else { continue }
            do {
                let again = try AgentResponse(AgentWire.Message(payload: response.encode().buffer.secureBytes()), answering: operation)
                precondition(describe(response) == describe(again), "an answer changed on its way through the wire")
            } catch {
                preconditionFailure("a decoded answer did not encode and decode again: \(error)")
            }
        }
    }

    /// An answer as text (secrets and files in hex), for comparing two.
    static func describe(_ response: AgentResponse) -> String {
        func hex(_ bytes: [UInt8]?) -> String { bytes.map { $0.map { String($0, radix: 16) }.joined(separator: ",") } ?? "none" }
        func attributes(_ attributes: AgentResponse.Attributes) -> String { "\(attributes.created) \(attributes.modified) \(attributes.size)" }
        switch response {
        case .value(let value): return "value " + hex(value?.unprotectedBytes)
        case .listing(let entries): return "listing " + entries.map { "\($0.name) " + attributes($0.attributes) }.joined(separator: "|")
        case .entries(let entries):
            return "entries " + entries.map { entry in
                entry.map { hex($0.value?.unprotectedBytes) + " " + attributes($0.attributes) } ?? "absent"
            }.joined(separator: "|")
        case .records(let records): return "records " + (records?.map(describe).joined(separator: "|") ?? "none")
        case .found(let records): return "found " + records.map(describe).joined(separator: "|")
        case .merged(let report, let file): return "merged \(report) " + hex(file)
        case .mergedFiles(let file, let report): return "merged files \(report) " + hex(file)
        case .recipients(let listing, let changed):
            return "recipients \(listing.recipients) \(listing.labels.sorted { $0.key < $1.key }) \(listing.hasPassphrase) \(changed)"
        case .failure(let failure):
            return "failure \(failure.presented) \(String(describing: failure.errorCase?.name)) \(failure.errorCase?.arguments ?? [])"
        default: return "\(response)"
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
            case .passwd(let passphrase): what = "passwd " + hex(passphrase)
            case .apply(.document(let changes)): what = "apply " + changes.map(describe).joined(separator: "|")
            case .apply(.formatOne(let changes)): what = "apply " + (try changes.documentChanges()).map(describe).joined(separator: "|")
            case .recipients(.remove(let recipient, let passphrase)): what = "remove recipient \(recipient) " + hex(passphrase)
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
}

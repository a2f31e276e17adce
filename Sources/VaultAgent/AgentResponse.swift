import FoundationEssentials
import VaultCore

/// An answer of the agent, typed (docs/AGENT.md, "Wire protocol"): what the fields of a response payload mean,
/// encoded (``encode()``) by the service and decoded (``init(_:answering:)``) by the client here only, as
/// ``AgentRequest`` types the requests. Every answer about a vault may be ``locked``: a client needs no probe first.
enum AgentResponse {
    /// Success with nothing more to say: unlock, probe, passwd, apply.
    case done
    /// What the agent holds (status).
    case status(AgentClient.Status)
    /// Whether there was one: lock (a key), remove (an entry).
    case existed(Bool)
    /// How many keys were forgotten (lockAll).
    case count(Int)
    /// An entry's value, `nil` when there is no such entry (get).
    case value(SecureBytes?)
    /// Every entry's name and attributes, sorted by name (list).
    case listing([(name: String, attributes: Attributes)])
    /// Every entry's name, sorted (names).
    case names([String])
    /// Per name asked, in order, the entry's value and attributes or `nil` (entries).
    case entries([(value: SecureBytes?, attributes: Attributes)?])
    /// One entry's versions, `nil` when there is no such entry (records).
    case records([EntryRecord]?)
    /// The current versions found, non-secret fields only (search).
    case found([EntryRecord])
    /// The deleted entries that keep a change (deleted).
    case deleted([VaultDocument.DeletedEntry])
    /// A merge's report and, when asked for and written, the file it wrote (merge; with keep-file).
    case merged(MergeReport, file: [UInt8]?)
    /// Two files merged (mergeFiles): the merged file, sealed with the vault's key, and the report.
    case mergedFiles([UInt8], MergeReport)
    /// Lines describing a file: names, ids, times, field names, never a value (describeFile).
    case described([String])
    /// The vault's recipients and their labels after the request, and what it changed: the recipients added, or the
    /// entries the removed key could read (recipients).
    case recipients(RecipientEdits.Listing, changed: [String])
    /// The vault is not held here (never unlocked, expired, locked, or re-keyed elsewhere).
    case locked
    /// The request failed in the agent.
    case failure(Failure)

    /// An entry's times in milliseconds since 1970 and its size, as the wire carries them (exact both ways, so that
    /// an answer decodes to what was encoded, whatever the numbers).
    struct Attributes: Equatable {
        var created: Int64
        var modified: Int64
        var size: UInt64

        init(created: Int64, modified: Int64, size: UInt64) {
            (self.created, self.modified, self.size) = (created, modified, size)
        }

        /// `attributes` in milliseconds (rounded; clamped to what 64 bits hold).
        init(_ attributes: EntryAttributes) {
            func milliseconds(_ date: Date) -> Int64 {
                let value = (date.timeIntervalSince1970 * 1000).rounded()
                return value >= 0x1p63 ? .max : value < -0x1p63 ? .min : Int64(value)
            }
            self.init(created: milliseconds(attributes.created), modified: milliseconds(attributes.modified), size: UInt64(max(0, attributes.byteCount)))
        }

        /// As the library gives them (a size beyond `Int` clamped).
        var entryAttributes: EntryAttributes {
            EntryAttributes(
                created: Date(timeIntervalSince1970: Double(created) / 1000), modified: Date(timeIntervalSince1970: Double(modified) / 1000),
                byteCount: Int(clamping: size))
        }
    }

    /// A failure as the agent presents it, and, for the library's own errors, the ``VaultError`` case and its
    /// arguments (``AgentErrorWire``), which the client throws as itself.
    struct Failure {
        var presented: AgentFailure
        var errorCase: (name: String, arguments: [String])?
    }

    /// What a client throws for an answer of another kind than its request's (never, from an agent of this version).
    static let unexpected = AgentError.protocolError("an answer of another kind than the request's")

    // MARK: Encoding

    /// The response's payload, as the service sends it (``init(_:answering:)``'s inverse).
    func encode() -> AgentWire.Writer {
        let writer: AgentWire.Writer
        switch self {
        case .locked: return AgentWire.Writer(kind: AgentStatus.locked.rawValue)
        case .failure(let failure):
            writer = AgentWire.Writer(kind: AgentStatus.error.rawValue)
            writer.field(.code, failure.presented.code)
            writer.field(.exitCode, UInt64(UInt32(bitPattern: failure.presented.exitCode)))
            writer.field(.message, failure.presented.message)
            if let hint = failure.presented.hint { writer.field(.hint, hint) }
            if let errorCase = failure.errorCase {
                writer.field(.errorCase, errorCase.name)
                for argument in errorCase.arguments { writer.field(.argument, argument) }
            }
            return writer
        default: writer = AgentWire.Writer(kind: AgentStatus.ok.rawValue)
        }
        switch self {
        case .done, .locked, .failure: break
        case .status(let status):
            writer.field(.pid, UInt64(status.pid))
            writer.field(.socket, status.socketPath)
            for type in status.identityTypes { writer.field(.identityType, type) }
            for vault in status.vaults {
                writer.field(.path, vault.path)
                writer.field(.idleLeft, UInt64(max(0, vault.idleSecondsLeft)))
                writer.field(.maxLeft, UInt64(max(0, vault.maxSecondsLeft)))
            }
        case .existed(let flag): writer.field(.bool, flag)
        case .count(let count): writer.field(.count, UInt64(max(0, count)))
        case .value(let value): if let value { writer.field(.value, value) }
        case .listing(let entries):
            writer.reserve(entries.reduce(0) { $0 + AgentWire.Writer.fieldSize($1.name.utf8.count) + 3 * AgentWire.Writer.fieldSize(8) })
            for (name, attributes) in entries {
                writer.field(.name, name)
                Self.encode(attributes, into: writer)
            }
        case .names(let names):
            writer.reserve(names.reduce(0) { $0 + AgentWire.Writer.fieldSize($1.utf8.count) })
            for name in names { writer.field(.name, name) }
        case .entries(let entries):
            for entry in entries {
                writer.field(.bool, entry != nil)
                guard let (value, attributes) = entry else { continue }
                Self.encode(attributes, into: writer)
                if let value { writer.field(.value, value) }
            }
        case .records(let records): if let records { AgentWire.encode(records, into: writer) }
        case .found(let records): for record in records { AgentWire.encode([record], into: writer) }
        case .deleted(let entries): AgentWire.encode(entries, into: writer)
        case .merged(let report, let file):
            AgentWire.encode(report, into: writer)
            file?.withUnsafeBytes { writer.field(.value, $0) }
        case .mergedFiles(let file, let report):
            file.withUnsafeBytes { writer.field(.value, $0) }
            AgentWire.encode(report, into: writer)
        case .described(let lines): for line in lines { writer.field(.message, line) }
        case .recipients(let listing, let changed):
            for recipient in listing.recipients {
                writer.field(.source, recipient)
                writer.field(.name, listing.labels[recipient] ?? "")
            }
            writer.field(.bool, listing.hasPassphrase)
            for item in changed { writer.field(.field, item) }
        }
        return writer
    }

    /// An entry's `created`, `modified` (milliseconds since 1970) and `size`.
    private static func encode(_ attributes: Attributes, into writer: AgentWire.Writer) {
        writer.field(.created, attributes.created)
        writer.field(.modified, attributes.modified)
        writer.field(.size, attributes.size)
    }

    // MARK: Decoding

    /// The response `answer` carries to a request of `operation` (of this protocol version).
    ///
    /// - Throws: ``AgentError/protocolError(_:)`` for an unknown status or fields that do not make the answer.
    init(_ answer: AgentWire.Message, answering operation: AgentOperation) throws {
        switch AgentStatus(rawValue: answer.kind) {
        case .locked: self = .locked; return
        case .error:
            let name = answer.string(.errorCase)
            self = .failure(Failure(
                presented: AgentFailure(
                    code: answer.string(.code) ?? "error", exitCode: Int32(truncatingIfNeeded: answer.number(.exitCode) ?? 1),
                    message: answer.string(.message) ?? "the agent reported a failure", hint: answer.string(.hint)),
                errorCase: name.map { ($0, answer.strings(.argument)) }))
            return
        case .ok: break
        case nil: throw AgentError.protocolError("unknown status \(answer.kind)")
        }
        switch operation {
        case .unlock, .probe, .passwd, .apply: self = .done
        case .status: self = .status(try Self.status(from: answer))
        case .lock, .remove: self = .existed(answer.bool(.bool))
        case .lockAll: self = .count(Int(clamping: answer.number(.count) ?? 0))
        case .get: self = .value(answer.first(.value).map(answer.payload.slice))  // the answer's region: no copy
        case .list: self = .listing(try Self.listing(from: answer))
        case .names: self = .names(answer.strings(.name))
        case .entries: self = .entries(try Self.entries(from: answer))
        case .records: self = .records(try AgentWire.records(from: answer))
        case .search: self = .found(try AgentWire.searchResults(from: answer))
        case .deleted: self = .deleted(try AgentWire.deletedEntries(from: answer))
        case .merge:
            let file = answer.first(.value).map { range in answer.payload.withUnsafeBytes { Array($0[range]) } }
            self = .merged(try AgentWire.mergeReport(from: answer), file: file)
        case .mergeFiles:
            guard let range = answer.first(.value) else { throw AgentError.protocolError("a merge without its file") }
            self = .mergedFiles(answer.payload.withUnsafeBytes { Array($0[range]) }, try AgentWire.mergeReport(from: answer))
        case .describeFile: self = .described(answer.strings(.message))
        case .recipients:
            let recipients = answer.strings(.source), labels = answer.strings(.name)
            guard recipients.count == labels.count else { throw AgentError.protocolError("a malformed list of recipients") }
            var byRecipient: [String: String] = [:]
            for (recipient, label) in zip(recipients, labels) where !label.isEmpty { byRecipient[recipient] = label }
            self = .recipients(
                RecipientEdits.Listing(recipients: recipients, labels: byRecipient, hasPassphrase: answer.bool(.bool)),
                changed: answer.strings(.field))
        case .retiredWrite: throw AgentError.protocolError("an answer to a retired operation")
        }
    }

    private static func status(from answer: AgentWire.Message) throws -> AgentClient.Status {
        let paths = answer.strings(.path), idle = answer.numbers(.idleLeft), max = answer.numbers(.maxLeft)
        guard paths.count == idle.count, idle.count == max.count else { throw AgentError.protocolError("a malformed status") }
        let types = answer.strings(.identityType)
        return AgentClient.Status(
            pid: Int(clamping: answer.number(.pid) ?? 0), socketPath: answer.string(.socket) ?? "",
            vaults: paths.indices.map {
                AgentClient.Status.Vault(path: paths[$0], idleSecondsLeft: Int(clamping: idle[$0]), maxSecondsLeft: Int(clamping: max[$0]))
            },
            // An agent that does not say keeps `X25519` identities only.
            identityTypes: types.isEmpty ? ["X25519"] : types)
    }

    private static func listing(from answer: AgentWire.Message) throws -> [(name: String, attributes: Attributes)] {
        let names = answer.strings(.name)
        let created = answer.numbers(.created), modified = answer.numbers(.modified), sizes = answer.numbers(.size)
        guard [created.count, modified.count, sizes.count].allSatisfy({ $0 == names.count }) else {
            throw AgentError.protocolError("a malformed list")
        }
        return names.indices.map {
            (names[$0], Attributes(created: Int64(bitPattern: created[$0]), modified: Int64(bitPattern: modified[$0]), size: sizes[$0]))
        }
    }

    private static func entries(from answer: AgentWire.Message) throws -> [(value: SecureBytes?, attributes: Attributes)?] {
        var out: [(value: SecureBytes?, attributes: Attributes)?] = []
        var current: (created: UInt64?, modified: UInt64?, size: UInt64?, value: SecureBytes?)?
        func finish() throws {
            guard let entry = current else { return }
            guard let created = entry.created, let modified = entry.modified, let size = entry.size else {
                throw AgentError.protocolError("a malformed entry")
            }
            out.append((entry.value, Attributes(created: Int64(bitPattern: created), modified: Int64(bitPattern: modified), size: size)))
            current = nil
        }
        for field in answer.fields {
            switch AgentWire.Tag(rawValue: field.tag) {
            case .bool:
                try finish()
                if answer.bool(field.range) { current = (nil, nil, nil, nil) } else { out.append(nil) }
            case .created: current?.created = answer.number(field.range)
            case .modified: current?.modified = answer.number(field.range)
            case .size: current?.size = answer.number(field.range)
            case .value: current?.value = answer.payload.slice(field.range)  // one region for every value
            default: break
            }
        }
        try finish()
        return out
    }
}

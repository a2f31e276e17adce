import VaultCore

/// The document answers on the wire (docs/AGENT.md): an entry's versions with their fields
/// (``AgentOperation/records``), deleted entries and merge reports; the batches of ``AgentOperation/apply`` are in
/// AgentDocumentChanges.swift. Each side encodes what the other decodes.
extension AgentWire {
    // MARK: Records

    /// Writes `records` (versions of one entry, newest first): the entry's `entryID`, `name`, `created` and its
    /// `replica`, then per version its `version`, `modified`, `replica` and `conflict`, then per field its `field`
    /// name, `secret` flag and `value`.
    static func encode(_ records: [EntryRecord], into writer: Writer) {
        guard let first = records.first else { return }
        first.id.bytes.withUnsafeBytes { writer.field(.entryID, $0) }
        writer.field(.name, first.name)
        writer.field(.created, first.created.packed)
        writer.field(.replica, first.created.replica.rawValue)
        for record in records {
            writer.field(.version, UInt64(record.version))
            writer.field(.modified, record.modified.packed)
            writer.field(.replica, record.modified.replica.rawValue)
            if let name = record.modifiedBy { writer.field(.replicaName, name) }
            writer.field(.conflict, record.conflict)
            for field in record.fields {
                writer.field(.field, field.name)
                writer.field(.secret, field.isSecret)
                writer.field(.value, field.value)
            }
        }
    }

    /// The records in `answer` (``encode(_:into:)``'s inverse); `nil` when it holds no entry.
    static func records(from answer: Message) throws -> [EntryRecord]? {
        guard answer.first(.entryID) != nil else { return nil }
        return try records(from: answer, answer.fields[...])
    }

    /// The entries of a ``AgentOperation/search`` answer: one ``encode(_:into:)`` block each, starting at its `entryID`.
    static func searchResults(from answer: Message) throws -> [EntryRecord] {
        let starts = answer.fields.indices.filter { answer.fields[$0].tag == Tag.entryID.rawValue }
        guard answer.fields.first.map({ $0.tag == Tag.entryID.rawValue }) ?? true else {
            throw AgentError.protocolError("a malformed search answer")
        }
        return try starts.indices.flatMap { index in
            let end = index + 1 < starts.count ? starts[index + 1] : answer.fields.endIndex
            return try records(from: answer, answer.fields[starts[index]..<end])
        }
    }

    private static func records(from answer: Message, _ fields: ArraySlice<Message.Field>) throws -> [EntryRecord] {
        func malformed() -> AgentError { .protocolError("a malformed entry") }
        var id: DocumentID?, name: String?, created: UInt64?, createdReplica: UInt64?
        var records: [EntryRecord] = []
        // The version being read: number, modified time and replica, conflict, fields.
        var version: (number: Int, modified: UInt64?, replica: UInt64?, conflict: Bool, fields: [EntryRecord.Field], by: String?)?
        var fieldName: String?, fieldSecret = false
        func finishVersion() throws {
            guard let current = version else { return }
            guard let id, let name, let created, let createdReplica, let modified = current.modified, let replica = current.replica,
                  fieldName == nil else { throw malformed() }
            records.append(EntryRecord(
                id: id, name: name, version: current.number,
                created: HybridTimestamp(packed: created, replica: ReplicaID(rawValue: createdReplica)),
                modified: HybridTimestamp(packed: modified, replica: ReplicaID(rawValue: replica)),
                conflict: current.conflict, fields: current.fields, modifiedBy: current.by))
            version = nil
        }
        for field in fields {
            let range = field.range
            switch Tag(rawValue: field.tag) {
            case .entryID:
                id = answer.payload.withUnsafeBytes { DocumentID(bytes: Array($0[range])) }
                guard id != nil else { throw malformed() }
            case .name: name = answer.string(range)
            case .created: created = answer.number(range)
            case .replica:
                guard let value = answer.number(range) else { throw malformed() }
                if version == nil { createdReplica = value } else { version!.replica = value }
            case .version:
                try finishVersion()
                guard let number = answer.number(range), number <= UInt64(Int.max) else { throw malformed() }
                version = (Int(number), nil, nil, false, [], nil)
            case .modified:
                guard version != nil else { throw malformed() }
                version!.modified = answer.number(range)
            case .conflict:
                guard version != nil else { throw malformed() }
                version!.conflict = answer.bool(range)
            case .replicaName:
                guard version != nil, let text = answer.string(range) else { throw malformed() }
                version!.by = text
            case .field:
                guard version != nil, fieldName == nil, let text = answer.string(range) else { throw malformed() }
                fieldName = text
                fieldSecret = false
            case .secret:
                guard fieldName != nil else { throw malformed() }
                fieldSecret = answer.bool(range)
            case .value:
                guard let named = fieldName else { throw malformed() }
                version!.fields.append(EntryRecord.Field(name: named, isSecret: fieldSecret, value: answer.payload.slice(range)))
                fieldName = nil
            default: break
            }
        }
        try finishVersion()
        return records
    }

    // MARK: Deleted entries

    /// Writes `entries` (``AgentOperation/deleted``): per entry its `entryID`, `name`, `created` and `replica` (the
    /// deletion), `modified` and `replica` (the change kept).
    static func encode(_ entries: [VaultDocument.DeletedEntry], into writer: Writer) {
        for entry in entries {
            entry.id.bytes.withUnsafeBytes { writer.field(.entryID, $0) }
            writer.field(.name, entry.name)
            writer.field(.created, entry.deleted.packed)
            writer.field(.replica, entry.deleted.replica.rawValue)
            writer.field(.modified, entry.kept.packed)
            writer.field(.replica, entry.kept.replica.rawValue)
        }
    }

    /// The entries in `answer` (the inverse of the encoding above), in its order.
    static func deletedEntries(from answer: Message) throws -> [VaultDocument.DeletedEntry] {
        func malformed() -> AgentError { .protocolError("a malformed deleted entry") }
        var entries: [VaultDocument.DeletedEntry] = []
        var id: DocumentID?, name: String?, numbers: [UInt64] = []
        func finish() throws {
            guard let current = id else { return }
            guard let name, numbers.count == 4 else { throw malformed() }
            entries.append(.init(
                id: current, name: name, deleted: HybridTimestamp(packed: numbers[0], replica: ReplicaID(rawValue: numbers[1])),
                kept: HybridTimestamp(packed: numbers[2], replica: ReplicaID(rawValue: numbers[3]))))
            (id, numbers) = (nil, [])
        }
        for field in answer.fields {
            switch Tag(rawValue: field.tag) {
            case .entryID:
                try finish()
                id = answer.payload.withUnsafeBytes { DocumentID(bytes: Array($0[field.range])) }
                guard id != nil else { throw malformed() }
                name = nil
            case .name:
                guard id != nil, name == nil, let text = answer.string(field.range) else { throw malformed() }
                name = text
            case .created, .replica, .modified:
                guard id != nil, name != nil, numbers.count < 4, let number = answer.number(field.range) else { throw malformed() }
                numbers.append(number)
            default: break
            }
        }
        try finish()
        return entries
    }
}

extension AgentWire {
    // MARK: Merge reports

    static func encode(_ report: MergeReport, into writer: Writer) {
        for (code, names) in [("added", report.added), ("updated", report.updated), ("deleted", report.deleted),
                              ("resurrected", report.resurrected), ("conflict", report.conflicts), ("kept", report.keptDeleted)] {
            for name in names {
                writer.field(.code, code)
                writer.field(.name, name)
            }
        }
        for renamed in report.renamed {
            writer.field(.code, "renamed")
            writer.field(.source, renamed.from)
            // The owner's and the keeper's replicas and names ("" for none: a name has 1 to 64 bytes), then the flags.
            writer.field(.replica, renamed.owner.rawValue)
            writer.field(.replica, renamed.keeper.rawValue)
            writer.field(.replicaName, renamed.ownerName ?? "")
            writer.field(.replicaName, renamed.keeperName ?? "")
            writer.field(.version, UInt64((renamed.yours ? 1 : 0) | (renamed.keptByYou ? 2 : 0) | (renamed.renamedIsNewer ? 4 : 0)))
            writer.field(.name, renamed.to)
        }
        for moved in report.moved {
            writer.field(.code, "moved")
            writer.field(.source, moved.from)
            writer.field(.replica, moved.by.rawValue)
            if let name = moved.byName { writer.field(.replicaName, name) }
            writer.field(.name, moved.to)
        }
        for named in report.namedBack {
            writer.field(.code, "named-back")
            writer.field(.source, named.from)
            writer.field(.name, named.to)
        }
        for (code, attributions) in [("came-back", report.cameBack), ("kept-by", report.keptDeletions)] {
            for attribution in attributions {
                // The changer's and the deleter's replicas (0 when the deleter is not known: flag 4 clear) and names
                // ("" for none), then the flags.
                writer.field(.code, code)
                writer.field(.replica, attribution.changer.rawValue)
                writer.field(.replica, attribution.deleter?.rawValue ?? 0)
                writer.field(.replicaName, attribution.changerName ?? "")
                writer.field(.replicaName, attribution.deleterName ?? "")
                writer.field(.version, UInt64(
                    (attribution.changedByYou ? 1 : 0) | (attribution.deletedByYou ? 2 : 0) | (attribution.deleter != nil ? 4 : 0)))
                writer.field(.name, attribution.name)
            }
        }
        for lost in report.lostEdits {
            writer.field(.code, "lost")
            writer.field(.replica, lost.winner.rawValue)
            writer.field(.replica, lost.loser.rawValue)
            if let name = lost.winnerName { writer.field(.replicaName, name) }
            writer.field(.version, UInt64(lost.version))
            writer.field(.name, lost.name)
        }
        for won in report.wonConflicts {
            writer.field(.code, "won")
            writer.field(.replica, won.loser.rawValue)
            if let name = won.loserName { writer.field(.replicaName, name) }
            writer.field(.version, UInt64(won.version))
            writer.field(.name, won.name)
        }
        for replica in report.replicasAhead {
            writer.field(.code, "ahead")
            writer.field(.replica, replica.rawValue)
        }
        if let reason = report.followedKey { writer.field(.code, "followed-key:" + reason.rawValue) }
        writer.field(.bool, report.written)
        writer.field(.code, report.otherLacks ? "other-lacks" : "other-complete")
    }

    static func mergeReport(from answer: Message) throws -> MergeReport {
        var report = MergeReport()
        report.written = answer.bool(.bool)
        var sawCompleteness = false
        var code: String?, source: String?
        // A lost edit being read: its replicas (the winner's, then the loser's), the winner's name, its version; a won
        // conflict: the loser's replica, its name, the version.
        var lost: (replicas: [UInt64], name: String?, version: Int?) = ([], nil, nil)
        // A rename being read: the owner's and keeper's names (an attribution's: the changer's and the deleter's).
        var renamedNames: [String] = []
        for field in answer.fields {
            switch Tag(rawValue: field.tag) {
            case .code:
                code = answer.string(field.range)
                source = nil
                lost = ([], nil, nil)
                renamedNames = []
                if code == "other-lacks" { report.otherLacks = true }
                if code == "other-complete" { sawCompleteness = true }
                if let code, code.hasPrefix("followed-key:") {
                    guard let reason = KeyChangeReason(rawValue: String(code.dropFirst("followed-key:".count))) else {
                        throw AgentError.protocolError("a malformed merge report")
                    }
                    report.followedKey = reason
                }
            case .source: source = answer.string(field.range)
            case .name:
                guard let name = answer.string(field.range) else { throw AgentError.protocolError("a malformed merge report") }
                switch code {
                case "added": report.added.append(name)
                case "updated": report.updated.append(name)
                case "deleted": report.deleted.append(name)
                case "resurrected": report.resurrected.append(name)
                case "conflict": report.conflicts.append(name)
                case "kept": report.keptDeleted.append(name)
                case "lost":
                    guard lost.replicas.count == 2, let version = lost.version else { throw AgentError.protocolError("a malformed merge report") }
                    report.lostEdits.append(.init(
                        name: name, winner: ReplicaID(rawValue: lost.replicas[0]), winnerName: lost.name,
                        loser: ReplicaID(rawValue: lost.replicas[1]), version: version))
                case "won":
                    guard lost.replicas.count == 1, let version = lost.version else { throw AgentError.protocolError("a malformed merge report") }
                    report.wonConflicts.append(.init(name: name, loser: ReplicaID(rawValue: lost.replicas[0]), loserName: lost.name, version: version))
                case "moved":
                    guard let source, lost.replicas.count == 1 else { throw AgentError.protocolError("a malformed merge report") }
                    report.moved.append(.init(from: source, to: name, by: ReplicaID(rawValue: lost.replicas[0]), byName: lost.name))
                case "named-back":
                    guard let source else { throw AgentError.protocolError("a malformed merge report") }
                    report.namedBack.append(.init(from: source, to: name))
                case "came-back", "kept-by":
                    guard lost.replicas.count == 2, renamedNames.count == 2, let flags = lost.version, flags < 8 else {
                        throw AgentError.protocolError("a malformed merge report")
                    }
                    let attribution = MergeReport.Attribution(
                        name: name, changer: ReplicaID(rawValue: lost.replicas[0]), changerName: renamedNames[0].isEmpty ? nil : renamedNames[0],
                        deleter: flags & 4 != 0 ? ReplicaID(rawValue: lost.replicas[1]) : nil,
                        deleterName: renamedNames[1].isEmpty ? nil : renamedNames[1], changedByYou: flags & 1 != 0, deletedByYou: flags & 2 != 0)
                    if code == "came-back" { report.cameBack.append(attribution) } else { report.keptDeletions.append(attribution) }
                case "renamed":
                    guard let source, lost.replicas.count == 2, renamedNames.count == 2, let flags = lost.version, flags < 8 else {
                        throw AgentError.protocolError("a malformed merge report")
                    }
                    report.renamed.append(.init(
                        from: source, to: name, owner: ReplicaID(rawValue: lost.replicas[0]),
                        ownerName: renamedNames[0].isEmpty ? nil : renamedNames[0], keeper: ReplicaID(rawValue: lost.replicas[1]),
                        keeperName: renamedNames[1].isEmpty ? nil : renamedNames[1],
                        yours: flags & 1 != 0, keptByYou: flags & 2 != 0, renamedIsNewer: flags & 4 != 0))
                default: throw AgentError.protocolError("a malformed merge report")
                }
            case .replica:
                guard let value = answer.number(field.range) else { throw AgentError.protocolError("a malformed merge report") }
                if ["lost", "renamed", "came-back", "kept-by"].contains(code ?? "") && lost.replicas.count < 2 || (code == "won" || code == "moved") && lost.replicas.isEmpty {
                    lost.replicas.append(value)
                } else {
                    guard code == "ahead" else { throw AgentError.protocolError("a malformed merge report") }
                    report.replicasAhead.append(ReplicaID(rawValue: value))
                }
            case .replicaName where code == "lost" || code == "won" || code == "moved": lost.name = answer.string(field.range)
            case .replicaName where code == "renamed" || code == "came-back" || code == "kept-by":
                guard renamedNames.count < 2, let name = answer.string(field.range) else { throw AgentError.protocolError("a malformed merge report") }
                renamedNames.append(name)
            case .version where ["lost", "won", "renamed", "came-back", "kept-by"].contains(code ?? ""):
                guard let value = answer.number(field.range), value <= UInt64(Int.max) else { throw AgentError.protocolError("a malformed merge report") }
                lost.version = Int(value)
            default: break
            }
        }
        // A reply that says neither (it cannot, since protocol version 4; kept as the safe reading): the other copy
        // may lack something, so a sync sends the result.
        if !sawCompleteness { report.otherLacks = true }
        return report
    }
}

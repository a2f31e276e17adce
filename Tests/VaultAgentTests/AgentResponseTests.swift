import Foundation
import Testing
@_spi(Fuzzing) @testable import VaultAgent
import VaultCore

/// The typed answer (issue 34 §3): every kind decodes, as the client reads it for its request, to what the agent
/// encoded, and typing it changed no byte of the wire.
@Suite struct AgentResponseTests {
    static let replica = ReplicaID(rawValue: 0x1234)

    static func record(_ name: String, version: Int) -> EntryRecord {
        EntryRecord(
            id: DocumentID(bytes: Array(repeating: 7, count: 16))!, name: name, version: version,
            created: HybridTimestamp(milliseconds: 1_700_000_000_000, counter: 0, replica: replica),
            modified: HybridTimestamp(milliseconds: 1_700_000_100_000, counter: 2, replica: replica), conflict: version == 1,
            fields: [.init(name: "password", isSecret: true, value: SecureBytes(string: "s3cret")),
                     .init(name: "url", isSecret: false, value: SecureBytes(string: "https://example.org"))],
            modifiedBy: "alice@laptop")
    }

    /// One answer of every kind, with the operation whose answer it is.
    static func everyKind() -> [(AgentOperation, AgentResponse)] {
        let attributes = AgentResponse.Attributes(created: 1_700_000_000_000, modified: 1_700_000_100_500, size: 6)
        // Times no date holds exactly (a fuzzed answer's): carried as the wire's integers, they come back the same.
        let extreme = AgentResponse.Attributes(created: .max - 0x1FF, modified: .min, size: .max)
        var report = MergeReport()
        report.added = ["a"]
        report.updated = ["u"]
        report.renamed = [
            .init(from: "old", to: "new", owner: replica, ownerName: "alice@laptop", keeper: ReplicaID(rawValue: 9), keeperName: nil,
                  yours: true, keptByYou: false, renamedIsNewer: true),
            .init(from: "x", to: "x~1", owner: ReplicaID(rawValue: 9), keeper: replica, keeperName: "bob@desk", yours: false, keptByYou: true, renamedIsNewer: false),
        ]
        report.moved = [.init(from: "a~12345678", to: "a-desk", by: replica, byName: "alice@desk"), .init(from: "b", to: "c", by: replica)]
        report.resurrected = ["web/site1"]
        report.cameBack = [.init(name: "web/site1", changer: replica, changerName: "bob@desk", deleter: ReplicaID(rawValue: 9), changedByYou: false, deletedByYou: true)]
        report.keptDeleted = ["web/x2", "web/x3"]
        report.keptDeletions = [
            .init(name: "web/x2", changer: ReplicaID(rawValue: 9), deleter: replica, deleterName: "bob@desk", changedByYou: true, deletedByYou: false),
            .init(name: "web/x3", changer: replica, changerName: "bob@desk", deleter: nil, changedByYou: false, deletedByYou: false),
        ]
        report.lostEdits = [.init(name: "web/gitlab", winner: replica, winnerName: "bob@desk", loser: ReplicaID(rawValue: 9), version: 1)]
        report.wonConflicts = [.init(name: "web/site3", loser: ReplicaID(rawValue: 9), loserName: "alice@desk", version: 2),
                               .init(name: "web/site4", loser: replica, loserName: nil, version: 1)]
        report.replicasAhead = [ReplicaID(rawValue: 5)]
        report.followedKey = .recipientRemoval
        report.namedBack = [.init(from: "web/site3~0a1b2c3d", to: "web/site3")]
        report.written = true
        let deleted = VaultDocument.DeletedEntry(
            id: DocumentID(bytes: Array(repeating: 3, count: 16))!, name: "gone",
            deleted: HybridTimestamp(milliseconds: 1_700_000_200_000, counter: 0, replica: replica),
            kept: HybridTimestamp(milliseconds: 1_700_000_150_000, counter: 1, replica: replica))
        return [
            (.unlock, .done), (.apply, .done),
            (.status, .status(AgentClient.Status(
                pid: 42, socketPath: "/run/user/0/vault/agent.sock",
                vaults: [.init(path: "/v.vault", idleSecondsLeft: 30, maxSecondsLeft: 600)], identityTypes: ["X25519", "mlkem768x25519"]))),
            (.lock, .existed(true)), (.remove, .existed(false)), (.lockAll, .count(3)),
            (.get, .value(SecureBytes(string: "s3cret"))), (.get, .value(nil)),
            (.list, .listing([("a", attributes), ("b", extreme)])), (.names, .names(["a", "b", "é"])),
            (.entries, .entries([(SecureBytes(string: "x"), attributes), nil, (nil, extreme)])),
            (.records, .records([record("k", version: 0), record("k", version: 1)])), (.records, .records(nil)),
            (.search, .found([record("secret-service/1", version: 0), record("secret-service/2", version: 0)])),
            (.deleted, .deleted([deleted])),
            (.merge, .merged(report, file: nil)), (.merge, .merged(report, file: [1, 2, 3])), (.mergeFiles, .mergedFiles([9], MergeReport())),
            (.describeFile, .described(["entry k", "field password"])),
            (.recipients, .recipients(RecipientEdits.Listing(recipients: ["age1a", "age1b"], labels: ["age1b": "bob@desk"], hasPassphrase: true),
                                      changed: ["web/github"])),
            (.get, .locked),
            (.get, .failure(.init(
                presented: AgentFailure(code: "corrupt", exitCode: 6, message: "the vault is corrupt", hint: "restore it"),
                errorCase: ("corrupt", ["/v.vault", "bad_clock"])))),
            (.unlock, .failure(.init(presented: AgentFailure(code: "error", exitCode: 1, message: "refused"), errorCase: nil))),
        ]
    }

    @Test func everyAnswerKindDecodesToWhatItEncoded() throws {
        for (operation, response) in Self.everyKind() {
            let message = try AgentWire.Message(payload: response.encode().buffer.secureBytes())
            #expect(message.version == AgentWire.version)
            let again = try AgentResponse(message, answering: operation)
            #expect(AgentFuzzEntryPoints.describe(again) == AgentFuzzEntryPoints.describe(response), "\(operation)")
        }
    }

    /// The bytes of a `get`'s answer as the service wrote them by hand before: version, status ok, `value`.
    @Test func aGetsAnswerIsTheSameBytesAsBefore() throws {
        let typed = AgentResponse.value(SecureBytes(string: "v")).encode().buffer.secureBytes().unprotectedBytes
        let byHand = AgentWire.Writer(kind: AgentStatus.ok.rawValue)
        byHand.field(.value, "v")
        #expect(typed == byHand.buffer.secureBytes().unprotectedBytes)
        #expect(AgentResponse.locked.encode().buffer.secureBytes().unprotectedBytes == [AgentWire.version, AgentStatus.locked.rawValue])
        // git's merge driver's answer: the merged file first, then the report, as before.
        let merged = try AgentWire.Message(payload: AgentResponse.mergedFiles([1, 2], MergeReport()).encode().buffer.secureBytes())
        #expect(merged.fields.first?.tag == AgentWire.Tag.value.rawValue)
    }

    /// A library date goes on the wire in whole milliseconds, and one beyond 64 bits is clamped, never a trap.
    @Test func attributesAreWholeMillisecondsClamped() {
        let far = EntryAttributes(created: Date(timeIntervalSince1970: 1e300), modified: Date(timeIntervalSince1970: -1e300), byteCount: 3)
        #expect(AgentResponse.Attributes(far) == .init(created: .max, modified: .min, size: 3))
        let now = EntryAttributes(created: Date(timeIntervalSince1970: 1_700_000_000.0004), modified: Date(timeIntervalSince1970: 1.5), byteCount: 0)
        #expect(AgentResponse.Attributes(now) == .init(created: 1_700_000_000_000, modified: 1500, size: 0))
        #expect(AgentResponse.Attributes(now).entryAttributes.modified == Date(timeIntervalSince1970: 1.5))
    }

    /// What does not make an answer is a protocol error, not a guess: an unknown status, a list whose columns
    /// differ in length, an entry without its times, a retired operation.
    @Test func malformedAnswersAreProtocolErrors() throws {
        func decode(_ kind: UInt8, _ operation: AgentOperation, _ fill: (AgentWire.Writer) -> Void = { _ in }) throws -> AgentResponse {
            let writer = AgentWire.Writer(kind: kind)
            fill(writer)
            return try AgentResponse(AgentWire.Message(payload: writer.buffer.secureBytes()), answering: operation)
        }
        #expect(throws: AgentError.protocolError("unknown status 7")) { try decode(7, .get) }
        #expect(throws: AgentError.protocolError("a malformed list")) {
            try decode(AgentStatus.ok.rawValue, .list) { $0.field(.name, "a") }
        }
        #expect(throws: AgentError.protocolError("a malformed entry")) {
            try decode(AgentStatus.ok.rawValue, .entries) { $0.field(.bool, true); $0.field(.value, "x") }
        }
        #expect(throws: AgentError.protocolError("a malformed status")) {
            try decode(AgentStatus.ok.rawValue, .status) { $0.field(.path, "/v.vault") }
        }
        #expect(throws: AgentError.protocolError("an answer to a retired operation")) { try decode(AgentStatus.ok.rawValue, .retiredWrite) }
        #expect(throws: AgentError.protocolError("a malformed merge report")) {
            try decode(AgentStatus.ok.rawValue, .merge) { $0.field(.code, "followed-key:lost-it"); $0.field(.bool, true) }
        }
        #expect(throws: AgentError.protocolError("a malformed merge report")) {
            try decode(AgentStatus.ok.rawValue, .merge) { $0.field(.code, "named-back"); $0.field(.name, "web/site3") }
        }
    }
}

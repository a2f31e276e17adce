import Foundation
import Testing
@_spi(Fuzzing) @testable import VaultAgent
import VaultCore

/// The typed request (issue 34 §3): every kind decodes from what it encodes to, and a request is the same bytes
/// a client sent before the wire was typed (typing it changed no field).
@Suite struct AgentRequestTests {
    static let path = "/run/v.vault"

    /// Every operation of this protocol version, 1 to 20, but 8, version 4's write, which is retired.
    static let operations = Set(1...20).subtracting([AgentOperation.retiredWrite.rawValue])

    /// One request of every operation.
    static func everyKind() throws -> [AgentRequest] {
        let unlock = AgentRequest.Unlock(
            key: .passphrase(SecureBytes(string: "pass")), keptIdentities: SecureBytes(string: "AGE-SECRET-KEY-1X\n"),
            idleSeconds: 900, maxSeconds: 28_800, insecureKDFForTesting: true, lockTimeoutMilliseconds: 1500)
        var byKey = unlock
        byKey.key = .dataKey(SecureBytes(count: 32) { $0.initializeMemory(as: UInt8.self, repeating: 7) })
        byKey.keptIdentities = nil
        byKey.lockTimeoutMilliseconds = nil
        let vault: [AgentRequest.VaultRequest] = [
            .probe, .get(name: "k"), .list, .names(withoutActivity: true), .names(withoutActivity: false),
            .remove(name: "k"), .passwd(SecureBytes(string: "new")),
            .records(name: "k", .current), .records(name: "k", .version(3)), .records(name: "k", .all),
            .apply(.document([.setField(entry: "k", field: "user", value: SecureBytes(string: "alice"), secret: false),
                    .delete(entry: "old", ifPresent: true), .rename(from: "a", to: "b", replacing: true)])),
            .entries(names: ["a", "b", "é"]),
            .merge(.init(label: "other.vault", file: [1, 2, 3], dryRun: true, otherPassphrase: SecureBytes(string: "o"), acceptDeletions: true)),
            .merge(.init(label: "other.vault", file: [], dryRun: false, otherPassphrase: nil, acceptDeletions: false)),
            .deleted, .search(prefix: "web/", required: [(field: "username", value: Array("alice".utf8))]),
            .recipients(.list), .recipients(.add(["age1a", "age1b"], label: nil)), .recipients(.add(["age1a"], label: "alice@laptop")),
            .recipients(.remove("age1a", passphrase: SecureBytes(string: "p"))), .recipients(.remove("age1a", passphrase: nil)),
        ]
        return [.status, .unlock(path: path, unlock), .unlock(path: path, byKey), .lock(path: path), .lockAll,
                .mergeFiles(ours: [1, 2], theirs: [3], labels: ("ours", "theirs")), .describeFile([9, 9], label: "f")]
            + vault.map { .vault(path: path, $0) }
    }

    @Test func everyRequestKindDecodesToWhatItEncoded() throws {
        let requests = try Self.everyKind()
        #expect(Set(requests.map(\.operation.rawValue)) == Self.operations, "every operation once at least")
        for request in requests {
            let message = try AgentWire.Message(payload: try request.encode().buffer.secureBytes())
            #expect(message.version == AgentWire.version && message.kind == request.operation.rawValue)
            let again = try AgentRequest(message)
            #expect(try AgentFuzzEntryPoints.describe(again) == AgentFuzzEntryPoints.describe(request))
        }
    }

    /// The bytes of a `get` as the client built them by hand before: version, operation 6, `path`, `name`.
    @Test func aGetIsTheSameBytesAsBefore() throws {
        let typed = try AgentRequest.vault(path: Self.path, .get(name: "k")).encode().buffer.secureBytes().unprotectedBytes
        let byHand = AgentWire.Writer(kind: AgentOperation.get.rawValue)
        byHand.field(.path, Self.path)
        byHand.field(.name, "k")
        #expect(typed == byHand.buffer.secureBytes().unprotectedBytes)
    }

    /// The fuzz target's corpus (Fuzz/corpus/FuzzAgentWire, what a 30 s run kept) replayed through its entry point:
    /// every input that decodes to a typed request encodes to one that decodes to the same (the entry point's
    /// precondition), and the corpus holds a well-formed request of every operation (seeds, so that a run starts
    /// from requests the agent takes, not only from the field parser's inputs).
    @Test func theFuzzCorpusRoundTripsThroughTheTypedRequest() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/corpus/FuzzAgentWire").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: corpus.path)
        try #require(!files.isEmpty)
        var operations = Set<UInt8>()
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: corpus.appendingPathComponent(file)))
            AgentFuzzEntryPoints.decodeRequest(bytes)
            if let message = try? AgentWire.Message(payload: SecureBytes(bytes)), let request = try? AgentRequest(message) {
                operations.insert(request.operation.rawValue)
            }
        }
        #expect(operations == Self.operations.subtracting([19, 20]), "the corpus seeds a request of every operation but search and recipients (newer than it)")
    }

    /// What a request must have is checked when it is decoded: a missing field, an unknown operation, a name that
    /// is not UTF-8.
    @Test func malformedRequestsAreRefusedWhenDecoded() throws {
        func decode(_ kind: UInt8, _ fill: (AgentWire.Writer) -> Void = { _ in }) throws -> AgentRequest {
            let writer = AgentWire.Writer(kind: kind)
            fill(writer)
            return try AgentRequest(AgentWire.Message(payload: writer.buffer.secureBytes()))
        }
        #expect(throws: AgentError.badRequest("unknown operation 99")) { try decode(99) }
        // Version 4's write of a version-1 batch (put `a`): every write is an `apply` now, of either format version.
        #expect(throws: AgentError.badRequest("operation 8 (version 4's write) is retired: writes are `apply`")) {
            try decode(8) { writer in
                writer.field(.path, Self.path)
                writer.field(.change, byte: 1)
                writer.field(.name, "a")
                writer.field(.value, "v")
            }
        }
        #expect(throws: AgentError.badRequest("a request without a required field")) { try decode(AgentOperation.get.rawValue) }
        #expect(throws: AgentError.badRequest("a request without a required field")) {
            try decode(AgentOperation.get.rawValue) { $0.field(.path, Self.path) }
        }
        #expect(throws: VaultError.invalidEntryName(reason: "the name is not valid UTF-8")) {
            try decode(AgentOperation.get.rawValue) { writer in
                writer.field(.path, Self.path)
                [UInt8(0xFF)].withUnsafeBytes { writer.field(.name, $0) }
            }
        }
        #expect(throws: AgentError.badRequest("a merge of two files needs two files")) {
            try decode(AgentOperation.mergeFiles.rawValue) { writer in [UInt8(1)].withUnsafeBytes { writer.field(.value, $0) } }
        }
    }

    /// A batch of format version 1's terms goes on the wire as the same fields its document changes make, streamed
    /// from its one region (a move as a rename, a copy keeping its time without the remove as a copy), and decodes
    /// to those changes.
    @Test func aFormatOneBatchIsTheBytesOfItsDocumentChanges() throws {
        var changes = SecureKeyValueStore.Changes()
        changes.removeAll()
        try changes.put(SecureBytes(string: "s3cret"), forKey: "a")
        changes.remove("b")
        try changes.copy("a", to: "c", keepCreated: true)
        changes.remove("a")
        try changes.copy("e", to: "f", keepCreated: true)
        try changes.copy("g", to: "h")
        changes.require("d", exists: false)
        let streamed = try AgentRequest.vault(path: Self.path, .apply(.formatOne(changes))).encode().buffer.secureBytes()
        let document = try AgentRequest.vault(path: Self.path, .apply(.document(changes.documentChanges()))).encode().buffer.secureBytes()
        #expect(streamed == document)
        let decoded = try AgentRequest(AgentWire.Message(payload: streamed))
        #expect(try AgentFuzzEntryPoints.describe(decoded) == AgentFuzzEntryPoints.describe(.vault(path: Self.path, .apply(.formatOne(changes)))))
    }
}

import Foundation
import Testing

@testable import VaultCore

/// Issue 21 (import): ``DocumentChange/insert(entry:current:history:created:)`` makes an entry whole, with its
/// history and the times another program recorded, and what it refuses.
@Suite("Document insert")
struct DocumentInsertTests {
    let replica = ReplicaID(rawValue: 0x0123_4567_89AB_CDEF)
    static let now: UInt64 = 1_764_000_000_000

    /// The values of the fields made by ``field(_:_:secret:)``, for ``values``.
    final class Bytes: @unchecked Sendable { var all: [UInt8] = [] }
    let bytes = Bytes()

    func field(_ name: String, _ value: String, secret: Bool = false) -> DocumentField {
        let start = bytes.all.count
        bytes.all += Array(value.utf8)
        return DocumentField(name: name, isSecret: secret, value: start..<bytes.all.count)
    }

    /// Every value made so far, as an insert takes them.
    var values: SecureBytes { SecureBytes(bytes.all) }

    func create() throws -> (VaultDocument, SecureBytes) {
        try VaultDocument.create(passphrase: SecureBytes(string: "pw"), parameters: .insecureForTesting, label: "test.vault")
    }

    @Test func anInsertedEntryKeepsItsFieldsOrderFlagsHistoryAndTimesThroughASeal() throws {
        let (document, key) = try create()
        let current = DocumentVersion(fields: [field("url", "https://x"), field("password", "new", secret: true), field("pin", "1234", secret: true)], modified: 1_700_000_300_000)
        let history = [
            DocumentVersion(fields: [field("password", "mid", secret: true)], modified: 1_700_000_200_000, conflict: true),
            DocumentVersion(fields: [field("password", "old", secret: true)], modified: 1_700_000_100_000),
        ]
        try document.apply([.insert(entry: "Web/x", current: current, history: history, created: 1_700_000_000_000, values: values)],
                           replica: replica, clock: SettableClock(Self.now))
        let reopened = try VaultDocument.open(try document.seal(dataKey: key), with: .dataKey(key), label: "t", policy: .insecureForTesting).document
        let versions = try #require(try reopened.records(of: "Web/x", .all))
        #expect(versions.count == 3)
        #expect(versions[0].fields.map(\.name) == ["url", "password", "pin"])
        #expect(versions[0].fields.map(\.isSecret) == [false, true, true])
        #expect(versions.map { String(decoding: $0.field("password")!.value.unprotectedBytes, as: UTF8.self) } == ["new", "mid", "old"])
        #expect(versions.map(\.modified.milliseconds) == [1_700_000_300_000, 1_700_000_200_000, 1_700_000_100_000])
        #expect(versions.map(\.conflict) == [false, true, false])
        #expect(versions[0].created.milliseconds == 1_700_000_000_000)
        #expect(versions.allSatisfy { $0.modified.replica == replica && $0.created.replica == replica })
        // The replica's clock is the batch's: a later change comes after everything inserted.
        #expect(reopened.replicas[replica]!.milliseconds == Self.now)
    }

    @Test func unknownLaterAndOutOfOrderTimesBecomeStrictlyEarlierThanTheNewerVersion() throws {
        let (document, _) = try create()
        let current = DocumentVersion(fields: [field("password", "c")], modified: Self.now + 86_400_000)  // in the future
        let history = [
            DocumentVersion(fields: [field("password", "h1")], modified: nil),
            DocumentVersion(fields: [field("password", "h2")], modified: Self.now + 5),  // later than its newer version
            DocumentVersion(fields: [field("password", "h3")], modified: 1_000),
        ]
        try document.apply([.insert(entry: "e", current: current, history: history, values: values)], replica: replica, clock: SettableClock(Self.now))
        let versions = try #require(try document.records(of: "e", .all))
        let stamps = versions.map(\.modified.packed)
        #expect(versions[0].modified.milliseconds == Self.now)  // not after the batch
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 > $1 }, "\(stamps)")
        #expect(versions[3].modified.milliseconds == 1_000)
        // No creation time: the oldest version's.
        #expect(versions[0].created == versions[3].modified)
    }

    @Test func historyIsCappedAndCreatedIsNeverAfterModified() throws {
        let (document, _) = try create()
        let history = (1...15).map { DocumentVersion(fields: [field("password", "v\($0)")], modified: Self.now - UInt64($0) * 1000) }
        try document.apply([.insert(entry: "e", current: DocumentVersion(fields: [field("password", "c")], modified: Self.now - 100),
                                    history: history, created: Self.now, values: values)],
                           replica: replica, clock: SettableClock(Self.now))
        let versions = try #require(try document.records(of: "e", .all))
        #expect(versions.count == 1 + VaultDocument.maximumHistoryVersions)
        #expect(versions[1].fields[0].value == SecureBytes(string: "v1"))
        #expect(versions[0].created == versions[0].modified)
    }

    @Test func anExistingNameABadFieldOrAFieldTwiceFailsTheWholeBatch() throws {
        let (document, _) = try create()
        let clock = SettableClock(Self.now)
        try document.apply([.setField(entry: "taken", field: "password", value: SecureBytes(string: "x"))], replica: replica, clock: clock)
        let one = DocumentVersion(fields: [field("password", "p")])
        #expect(throws: VaultError.entryExists(key: "taken", path: "test.vault")) {
            try document.apply([.insert(entry: "new", current: one, values: values), .insert(entry: "taken", current: one, values: values)], replica: replica, clock: clock)
        }
        #expect(throws: VaultError.self) {
            try document.apply([.insert(entry: "new", current: DocumentVersion(fields: [field("a\u{7}b", "p")]), values: values)], replica: replica, clock: clock)
        }
        #expect(throws: VaultError.self) {
            try document.apply([.insert(entry: "new", current: DocumentVersion(fields: [field("x", "1"), field("x", "2")]), values: values)], replica: replica, clock: clock)
        }
        #expect(throws: VaultError.self) {
            try document.apply([.insert(entry: "bad\nname", current: one, values: values)], replica: replica, clock: clock)
        }
        // A range beyond the values given.
        #expect(throws: VaultError.self) {
            try document.apply([.insert(entry: "new", current: DocumentVersion(fields: [DocumentField(name: "p", isSecret: false, value: 0..<10_000)]), values: values)],
                               replica: replica, clock: clock)
        }
        #expect(document.names == ["taken"])
    }

    @Test func aChangeAfterAnInsertInTheSameBatchMakesNoExtraVersion() throws {
        let (document, _) = try create()
        try document.apply([
            .insert(entry: "e", current: DocumentVersion(fields: [field("password", "p")], modified: 1_000_000), values: values),
            .setField(entry: "e", field: "username", value: SecureBytes(string: "u")),
        ], replica: replica, clock: SettableClock(Self.now))
        let versions = try #require(try document.records(of: "e", .all))
        #expect(versions.count == 1 && versions[0].fields.map(\.name) == ["password", "username"])
        #expect(versions[0].modified.milliseconds == Self.now)
    }
}

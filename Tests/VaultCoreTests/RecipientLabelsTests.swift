import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// Issue 35 §4: recipients' labels in the `recipient_labels` stanza (docs/FORMAT.md "Recipient labels"): sealed (the
/// header shows no teammate's name), carried by every seal and by a key rotation, dropped with the recipient they
/// label, united by a merge (the later per recipient, in any order; on one time the greater label), and a stanza that
/// does not open kept as an unknown one.
@Suite struct RecipientLabelsTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("shared.vault") }
    static let passphrase = SecureBytes(string: "correct horse battery staple")
    static let q = "age1" + String(repeating: "q", count: 58), p = "age1" + String(repeating: "p", count: 58)

    func store(replica: UInt64 = 1, clock: SettableClock = SettableClock(1_000)) -> DocumentStore {
        DocumentStore(storage: LocalFileStorage(path: path, lockTimeoutSeconds: 2), replica: ReplicaID(rawValue: replica),
                      clock: clock, policy: .insecureForTesting)
    }

    func bytes() -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path) ?? Data()) }

    /// A store of a new vault shared with `q` and `p`, `q` labelled `alice@laptop`.
    func shared() throws -> DocumentStore {
        let owner = store()
        try owner.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        try owner.update([.setField(entry: "k", field: "password", value: SecureBytes(string: "v"))])
        try owner.setRecipients(labels: [Self.q: "alice@laptop"]) { current, key in
            current + [RecipientStanzaStoreTests.stanza("q", key: key), RecipientStanzaStoreTests.stanza("p", key: key)]
        }
        return owner
    }

    @Test func aLabelIsSealedReadBackAndCarriedByARotation() throws {
        let owner = try shared()
        let file = bytes()
        #expect(file.firstRange(of: Array("alice".utf8)) == nil, "the label is sealed, not in the header's clear text")
        let header = try DocumentHeader.parse(file, label: "t", policy: .insecureForTesting)
        #expect(header.stanzas.map(\.type) == [1, 2, 2, 6])
        #expect(header.stanzaTypes == ["argon2id", "x25519", "x25519"], "not a key stanza")
        #expect(header.hasRecipientLabels)

        let reader = store(replica: 2)
        try reader.open(with: .passphrase(Self.passphrase))
        let document = try #require(reader.document)
        #expect(document.recipientLabels.mapValues(\.label) == [Self.q: "alice@laptop"])
        #expect(document.recipientLabels[Self.q]!.time >> 16 == 1_000, "the labelling replica's clock")
        #expect(document.recipientLabel(of: Self.q) == "alice@laptop" && document.recipientLabel(of: Self.p) == nil)
        #expect(!document.stanzas.contains { $0.type == KeyStanza.recipientLabels }, "taken out: each seal writes it anew")

        // A rotation that keeps q keeps its label, sealed under the new key; one that removes q drops it.
        try owner.rotateKey(passphrase: Self.passphrase, parameters: nil) { current, key in
            current.map { RecipientStanzaStoreTests.stanza(Character(String($0.recipient.last!)), key: key) }
        }
        try reader.open(with: .passphrase(Self.passphrase))
        #expect(reader.document?.recipientLabel(of: Self.q) == "alice@laptop")
        try owner.rotateKey(passphrase: Self.passphrase, parameters: nil, reason: .recipientRemoval) { current, key in
            current.filter { $0.recipient != Self.q }.map { _ in RecipientStanzaStoreTests.stanza("p", key: key) }
        }
        #expect(try DocumentHeader.parse(bytes(), label: "t", policy: .insecureForTesting).stanzas.map(\.type) == [1, 2, 4, 4],
                "no labels stanza: the one label went with its recipient")
        try reader.open(with: .passphrase(Self.passphrase))
        #expect(reader.document?.recipientLabels.isEmpty == true)
    }

    @Test func aRelabelTakesATimeAfterTheOldOneAndBadLabelsAreRefused() throws {
        let owner = try shared()
        let document = try #require(owner.document)
        let before = try #require(document.recipientLabels[Self.q])
        // The clock went back: the new label still comes after the old one.
        #expect(document.setRecipientLabel("alice@desk", of: Self.q, replica: ReplicaID(rawValue: 1), now: 10))
        #expect(document.recipientLabels[Self.q]!.time > before.time)
        #expect(!document.setRecipientLabel("alice@desk", of: Self.q, replica: ReplicaID(rawValue: 1), now: 10), "the same label: no change")
        for bad in ["", "age1looks-like-a-key", "tab\there", String(repeating: "x", count: 65)] {
            #expect(!RecipientLabel.isValid(bad), "\(bad)")
            #expect(!document.setRecipientLabel(bad, of: Self.p, replica: ReplicaID(rawValue: 1), now: 10))
        }
        #expect(RecipientLabel.isValid("bob (laptop) é"))
    }

    @Test func aMergeTakesTheLaterLabelOfEachRecipientInEitherOrder() throws {
        _ = try shared()
        let file = bytes()
        let key = try #require({ () -> SecureBytes? in
            let reader = store(replica: 9)
            try reader.open(with: .passphrase(Self.passphrase))
            return reader.dataKey
        }())
        func copy(_ label: String) throws -> VaultDocument {
            try VaultDocument.open(file, with: .dataKey(key), label: label, policy: .insecureForTesting).document
        }
        let one = try copy("one"), two = try copy("two")
        // Changed on two machines: the later label wins wherever the merge runs.
        one.setRecipientLabel("alice@old-laptop", of: Self.q, replica: ReplicaID(rawValue: 0xA), now: 5_000)
        two.setRecipientLabel("alice@new-laptop", of: Self.q, replica: ReplicaID(rawValue: 0xB), now: 6_000)
        two.setRecipientLabel("bob", of: Self.p, replica: ReplicaID(rawValue: 0xB), now: 6_000)
        let (ab, report) = try VaultDocument.merge(one, two, now: 7_000)
        let (ba, _) = try VaultDocument.merge(two, one, now: 7_000)
        #expect(ab.sealedRecipientLabels == ba.sealedRecipientLabels)
        #expect(ab.sealedRecipientLabels.mapValues(\.label) == [Self.q: "alice@new-laptop", Self.p: "bob"])
        #expect(report.otherLacks == false, "two holds every label of the result")
        let (_, lacking) = try VaultDocument.merge(two, try copy("three"), now: 7_000)
        #expect(lacking.otherLacks, "a copy without the new labels lacks something: a sync sends it")

        // On one time, the greater label as bytes, in either order.
        let three = try copy("three"), four = try copy("four")
        three.recipientLabels[Self.q] = RecipientLabel(label: "alpha", time: 42 << 16)
        four.recipientLabels[Self.q] = RecipientLabel(label: "beta", time: 42 << 16)
        #expect(try VaultDocument.merge(three, four, now: 7_000).0.recipientLabel(of: Self.q) == "beta")
        #expect(try VaultDocument.merge(four, three, now: 7_000).0.recipientLabel(of: Self.q) == "beta")
        // Sealed and opened again, the merged labels are the file's.
        let sealed = try ab.seal(dataKey: key)
        #expect(try VaultDocument.open(sealed, with: .dataKey(key), label: "t", policy: .insecureForTesting).document
            .sealedRecipientLabels.mapValues(\.label) == [Self.q: "alice@new-laptop", Self.p: "bob"])
    }

    @Test func aStanzaThatDoesNotOpenOrIsMalformedIsKeptAsAnUnknownOne() throws {
        _ = try shared()
        let reader = store(replica: 2)
        try reader.open(with: .passphrase(Self.passphrase))
        let document = try #require(reader.document), key = try #require(reader.dataKey)
        document.recipientLabels = [:]
        let garbage = KeyStanza(type: KeyStanza.recipientLabels, body: [UInt8](repeating: 7, count: 60))
        // Well sealed but malformed: recipients out of order.
        var plain: [UInt8] = []
        plain.appendLittleEndian(UInt16(2))
        for recipient in [Self.q, Self.p] {
            plain.appendLittleEndian(UInt16(recipient.utf8.count))
            plain += recipient.utf8
            plain.appendLittleEndian(UInt64(1))
            plain += [1, UInt8(ascii: "x")]
        }
        let unordered = KeyStanza(
            type: KeyStanza.recipientLabels,
            body: try SealedStanza.seal(plain, key: VaultDocument.subkey(key, RecipientLabelsStanza.context)))
        for stanza in [garbage, unordered] {
            document.stanzas.append(stanza)
            let opened = try VaultDocument.open(try document.seal(dataKey: key), with: .dataKey(key), label: "t", policy: .insecureForTesting).document
            #expect(opened.recipientLabels.isEmpty)
            #expect(opened.stanzas.last == stanza, "written back unchanged, as a stanza of a type not known")
            document.stanzas.removeLast()
        }
    }
}

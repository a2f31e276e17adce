import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// Issue 20, the core's side: `x25519` stanzas as opaque typed bytes (their shape checked at parse), set under the
/// current key, replaced with a new key (a rotation), united by a merge under one key and never brought back by a
/// merge across a rotation. The age cryptography is VaultAge's (VaultAgeTests, VaultCLITests); here a stanza is any
/// body of the right shape, "wrapping" nothing.
@Suite("Recipient stanzas in the document store")
struct RecipientStanzaStoreTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("shared.vault") }
    static let passphrase = SecureBytes(string: "correct horse battery staple")

    /// A stanza of the right shape for recipient `age1` + 58 copies of `letter`.
    static func stanza(_ letter: Character, key: SecureBytes) -> RecipientStanza {
        let recipient = "age1" + String(repeating: letter, count: 58)
        // A fake "age file" that depends on the key (so a rotation changes it), with the right prefix and length.
        let tag = key.withUnsafeBytes { Sodium.blake2b256($0) }
        let file = RecipientStanza.ageFilePrefix + tag + [UInt8](repeating: UInt8(ascii: "x"),
                                                                 count: RecipientStanza.ageFileByteCount - RecipientStanza.ageFilePrefix.count - 32)
        return RecipientStanza(recipient: recipient, ageFile: file)!
    }

    func store(replica: UInt64 = 1) -> DocumentStore {
        DocumentStore(storage: LocalFileStorage(path: path, lockTimeoutSeconds: 2), replica: ReplicaID(rawValue: replica),
                      clock: SettableClock(1_000), policy: .insecureForTesting)
    }

    func bytes() -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path) ?? Data()) }

    @Test func addingKeepsTheKeyAndEveryStanza() throws {
        let owner = store()
        try owner.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        try owner.update([.setField(entry: "k", field: "password", value: SecureBytes(string: "v"))])
        let keyID = try #require(owner.document?.dataKeyID)
        try owner.setRecipients { current, dataKey in current + [Self.stanza("q", key: dataKey), Self.stanza("p", key: dataKey)] }
        #expect(owner.document?.dataKeyID == keyID)
        let header = try DocumentHeader.parse(bytes(), label: "t", policy: .insecureForTesting)
        #expect(header.stanzaTypes == ["argon2id", "x25519", "x25519"])
        #expect(header.recipients == ["age1" + String(repeating: "q", count: 58), "age1" + String(repeating: "p", count: 58)])
        // The passphrase still opens it.
        let again = store(replica: 2)
        try again.open(with: .passphrase(Self.passphrase))
        #expect(again.document?.names == ["k"])
    }

    @Test func aRotationMakesANewKeyAndLeavesNoByteOfTheOldBody() throws {
        let owner = store()
        try owner.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        try owner.update([.setField(entry: "k", field: "password", value: SecureBytes(string: String(repeating: "secret ", count: 100)))])
        try owner.setRecipients { current, key in current + [Self.stanza("q", key: key), Self.stanza("p", key: key)] }
        let before = bytes()
        let oldID = try #require(owner.document?.dataKeyID)
        var newKey: SecureBytes?
        try owner.rotateKey(passphrase: Self.passphrase, parameters: nil) { current, key in
            newKey = key
            return current.filter { !$0.recipient.hasSuffix("p") }.map { Self.stanza(Character(String($0.recipient.last!)), key: key) }
        }
        let after = bytes()
        #expect(owner.document?.dataKeyID != oldID)
        #expect(owner.document?.recipients == ["age1" + String(repeating: "q", count: 58)])
        let headerLength = Int(before[10]) | Int(before[11]) << 8 | Int(before[12]) << 16 | Int(before[13]) << 24
        let oldSealed = Array(before[headerLength...])
        for start in stride(from: 0, to: oldSealed.count - 16, by: 16) {
            let chunk = oldSealed[start..<start + 16]
            #expect(!(0...(after.count - 16)).contains { after[$0..<$0 + 16].elementsEqual(chunk) })
        }
        // The new key opens it (as an identity's unwrapping would give it); the passphrase too.
        _ = try VaultDocument.open(after, with: .unwrapped(try #require(newKey)), label: "t", policy: .insecureForTesting)
        _ = try VaultDocument.open(after, with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting)
        // Without a passphrase and without a recipient, nothing could open the result: refused, nothing written.
        #expect(throws: VaultError.corrupt(path: path, reason: .noUsableStanza)) {
            try owner.rotateKey(passphrase: nil, parameters: nil) { _, _ in [] }
        }
        #expect(bytes() == after)
    }

    /// Sync: an addition on one side survives a merge under one key; a removal (a new key) is not undone by a
    /// copy written under the old key, whichever side merges.
    @Test func aMergeUnitesAdditionsAndNeverUndoesARemoval() throws {
        let a = store(replica: 1)
        try a.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        try a.setRecipients { current, key in current + [Self.stanza("q", key: key), Self.stanza("p", key: key)] }
        let shared = bytes()
        // B: a copy under the same key that adds a recipient and writes an entry.
        let copy = directory.file("b.vault")
        try Data(shared).write(to: URL(fileURLWithPath: copy))
        chmod(copy, 0o600)
        let b = DocumentStore(storage: LocalFileStorage(path: copy), replica: ReplicaID(rawValue: 2), clock: SettableClock(2_000), policy: .insecureForTesting)
        try b.open(with: .passphrase(Self.passphrase))
        try b.setRecipients { current, key in current + [Self.stanza("z", key: key)] }
        try b.update([.setField(entry: "from-b", field: "password", value: SecureBytes(string: "b"))])
        let bBytes = [UInt8](FileManager.default.contents(atPath: copy)!)
        // Same key: A takes B's addition.
        _ = try a.merge(bBytes, label: copy, dryRun: false)
        #expect(Set(a.document!.recipients) == Set(["q", "p", "z"].map { "age1" + String(repeating: $0, count: 58) }))
        // A removes p (a new key); B writes again under the old key; A merges B: p stays out.
        try a.rotateKey(passphrase: Self.passphrase, parameters: nil) { current, key in
            current.filter { !$0.recipient.hasSuffix("p") }.map { Self.stanza(Character(String($0.recipient.last!)), key: key) }
        }
        try b.update([.setField(entry: "later", field: "password", value: SecureBytes(string: "l"))])
        // B merges A: B follows A's new key and its recipients, and keeps its own later write. (A merging B's copy
        // under the old key is refused one level up: DocumentVault checks the rollback record's retired keys.)
        _ = try b.merge(bytes(), label: path, dryRun: false, otherPassphrase: Self.passphrase)
        #expect(b.document?.dataKeyID == a.document?.dataKeyID)
        #expect(!b.document!.recipients.contains { $0.hasSuffix("p") })
        #expect(b.document!.names.contains("later"))
        // A merges B, now under A's key: B's write arrives, p stays out.
        let report = try a.merge([UInt8](FileManager.default.contents(atPath: copy)!), label: copy, dryRun: false)
        #expect(report.written)
        #expect(!a.document!.recipients.contains { $0.hasSuffix("p") })
        #expect(a.document!.names.contains("later"))
    }

    /// A post-quantum (`mlkem768x25519`, type 3) stanza of the right shape for recipient `age1pq1` + 1,952 copies
    /// of `letter`.
    static func hybridStanza(_ letter: Character, key: SecureBytes) -> RecipientStanza {
        let kind = RecipientStanza.Kind.mlkem768x25519
        let tag = key.withUnsafeBytes { Sodium.blake2b256($0) }
        let file = kind.ageFilePrefix + tag + [UInt8](repeating: UInt8(ascii: "x"), count: kind.ageFileByteCount - kind.ageFilePrefix.count - 32)
        return RecipientStanza(recipient: "age1pq1" + String(repeating: letter, count: 1952), ageFile: file)!
    }

    /// Type 3: its exact bytes (a big-endian u16 length, then the recipient and the age file: 3,652 bytes), its
    /// shape checked as it is read, and the header's bound enforced by the writer (17 fit beside a passphrase).
    @Test func hybridStanzasHaveTheirLayoutAndTheHeaderBoundIsKept() throws {
        let owner = store()
        try owner.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        try owner.setRecipients { current, key in current + [Self.hybridStanza("q", key: key)] }
        let header = try DocumentHeader.parse(bytes(), label: "t", policy: .insecureForTesting)
        #expect(header.stanzaTypes == ["argon2id", "mlkem768x25519"])
        #expect(header.recipients == ["age1pq1" + String(repeating: "q", count: 1952)])
        let stanza = try #require(header.recipientStanzas.first)
        #expect(stanza.kind == .mlkem768x25519 && stanza.stanza.type == 3)
        #expect(stanza.stanza.body.count == 3652 && Array(stanza.stanza.body.prefix(9)) == [0x07, 0xA7] + Array("age1pq1".utf8))
        #expect(Array(stanza.stanza.body[1961..<(1961 + 40)]) == Array("age-encryption.org/v1\n-> mlkem768x25519 ".utf8))

        // Read back: a wrong length field, a recipient of the other kind's prefix, an age file of the X25519 stanza.
        func parse(_ body: [UInt8]) throws {
            let (document, dataKey) = try VaultDocument.create(passphrase: Self.passphrase, parameters: .insecureForTesting, label: "t")
            document.stanzas.append(KeyStanza(type: KeyStanza.mlkem768x25519, body: body))
            _ = try DocumentHeader.parse(try document.seal(dataKey: dataKey), label: "t", policy: .insecureForTesting)
        }
        let body = stanza.stanza.body
        try parse(body)
        #expect(throws: VaultError.corrupt(path: "t", reason: .badStanza(index: 1))) { try parse(Array(body.dropLast())) }
        #expect(throws: VaultError.corrupt(path: "t", reason: .badRecipient(index: 1))) { try parse([0x00, 0x3E] + body.dropFirst(2)) }
        var classic = body
        classic.replaceSubrange(2..<9, with: Array("age1qqq".utf8))
        #expect(throws: VaultError.corrupt(path: "t", reason: .badRecipient(index: 1))) { try parse(classic) }
        var x25519File = body
        x25519File.replaceSubrange(1961..<(1961 + 32), with: RecipientStanza.ageFilePrefix)
        #expect(throws: VaultError.corrupt(path: "t", reason: .badAgeFile(index: 1))) { try parse(x25519File) }

        // 17 beside the passphrase fit; an 18th would make a header no reader takes: refused, nothing written.
        let letters = Array("qpzry9x8gf2tvdw0s")
        try owner.setRecipients { _, key in letters.map { Self.hybridStanza($0, key: key) } }
        #expect(owner.document?.recipients.count == 17)
        let full = bytes()
        #expect(throws: VaultError.vaultTooLarge(path: path, byteCount: 56 + (6 + 104) + 18 * (6 + 3652))) {
            try owner.setRecipients { current, key in current + [Self.hybridStanza("3", key: key)] }
        }
        #expect(bytes() == full)
    }

    /// age's rule in a merge: the other copy's recipient stanzas of the other kind are not taken.
    @Test func aMergeNeverMixesTheTwoKinds() throws {
        let a = store(replica: 1)
        try a.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        try a.setRecipients { current, key in current + [Self.hybridStanza("q", key: key)] }
        let copy = directory.file("b.vault")
        try Data(bytes()).write(to: URL(fileURLWithPath: copy))
        chmod(copy, 0o600)
        let b = DocumentStore(storage: LocalFileStorage(path: copy), replica: ReplicaID(rawValue: 2), clock: SettableClock(2_000), policy: .insecureForTesting)
        try b.open(with: .passphrase(Self.passphrase))
        // B (wrongly, bypassing the CLI's check) adds an X25519 and a hybrid recipient.
        try b.setRecipients { current, key in current + [Self.stanza("z", key: key), Self.hybridStanza("p", key: key)] }
        _ = try a.merge([UInt8](FileManager.default.contents(atPath: copy)!), label: copy, dryRun: false)
        #expect(a.document!.recipients == ["age1pq1" + String(repeating: "q", count: 1952), "age1pq1" + String(repeating: "p", count: 1952)])
    }
}

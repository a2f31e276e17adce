import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// Issue 33 §1: a copy never hands the vault a key. Every key change writes a `key_link` stanza signed with the key
/// it replaces (docs/FORMAT.md, "Key changes"); a merge follows another copy's key only along links that start at
/// this vault's current key, and refuses anything else before any key of the copy is asked for.
@Suite("Key links: who may hand a vault a new key")
struct KeyLinkTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("shared.vault") }
    static let passphrase = SecureBytes(string: "correct horse battery staple")
    static let other = SecureBytes(string: "a stranger's passphrase")

    func store(_ path: String, replica: UInt64 = 1) -> DocumentStore {
        DocumentStore(storage: LocalFileStorage(path: path, lockTimeoutSeconds: 2), replica: ReplicaID(rawValue: replica),
                      clock: SettableClock(1_764_000_000_000), policy: .insecureForTesting)
    }

    func bytes(_ path: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path) ?? Data()) }

    func copy(_ from: String, to name: String) throws -> String {
        let to = directory.file(name)
        try? FileManager.default.removeItem(atPath: to)
        try FileManager.default.copyItem(atPath: from, toPath: to)
        chmod(to, 0o600)
        return to
    }

    /// `document` sealed under a data key of the stranger's own with her passphrase stanza, as she can write it from
    /// the spec and the vault id alone (the plaintext is hers to choose), at the next generation: no link, or the
    /// links given.
    static func strangersCopy(of document: VaultDocument, links: [KeyStanza] = [], key: SecureBytes? = nil) throws -> (bytes: [UInt8], key: SecureBytes) {
        let key = key ?? SecureBytes.random(count: 32)
        let stanza = try Argon2idStanza.wrap(key, passphrase: other, parameters: .insecureForTesting)
        document.stanzas = [stanza.stanza] + links
        document.dataKeyID = links.last.flatMap { KeyLink(body: $0.body)?.newKeyID } ?? .random()
        try document.apply([.setField(entry: "planted", field: "password", value: SecureBytes(string: "hers"))],
                           replica: ReplicaID(rawValue: 99), clock: SettableClock(1_764_000_100_000))
        return (try document.seal(dataKey: key), key)
    }

    @Test func everyKeyChangeAppendsALinkSignedWithTheKeyItReplaces() throws {
        let owner = store(path)
        try owner.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        let first = try #require(owner.document?.dataKeyID), firstKey = try #require(owner.dataKey)
        try owner.changePassphrase(to: SecureBytes(string: "second"), parameters: .insecureForTesting)
        try owner.rotateKey(passphrase: SecureBytes(string: "third"), parameters: nil, reason: .recipientRemoval) { _, _ in [] }
        let header = try DocumentHeader.parse(bytes(path), label: "t", policy: .insecureForTesting)
        #expect(header.stanzaTypes == ["argon2id", "key_link", "key_link"])
        let links = KeyLinks.links(in: header.stanzas).map(\.link)
        #expect(links.count == 2 && links[0].oldKeyID == first && links[1].newKeyID == header.dataKeyID)
        #expect(links.map(\.reason) == [1, 2] && links.allSatisfy { $0.body.count == 129 })
        #expect(links[1].newSigningKey == KeySigning.publicKey(of: try #require(owner.dataKey)))
        // Why the key changed, from each key on (messages name it): a passphrase change among the links needs the
        // other side's passphrase; removals alone are a removal; a key no link starts at, none.
        #expect(KeyLinks.reason(header.stanzas, from: first) == .passphraseChange)
        #expect(KeyLinks.reason(header.stanzas, from: links[1].oldKeyID) == .recipientRemoval)
        #expect(KeyLinks.reason(header.stanzas, from: header.dataKeyID) == nil && KeyLinks.reason(header.stanzas, from: .random()) == nil)
        #expect(KeyChangeReason.summary(of: [.recipientRemoval, .other]) == .other && KeyChangeReason.summary(of: []) == nil)
        // The chain starts at the first key: a holder of it may follow; a holder of another key may not.
        #expect(KeyLinks.authorizes(header, from: first, signingKey: KeySigning.publicKey(of: firstKey), vaultID: header.vaultID))
        #expect(!KeyLinks.authorizes(header, from: first, signingKey: KeySigning.publicKey(of: .random(count: 32)), vaultID: header.vaultID))
        // A write under the same key keeps the links.
        try owner.update([.setField(entry: "k", field: "password", value: SecureBytes(string: "v"))])
        #expect(try DocumentHeader.parse(bytes(path), label: "t", policy: .insecureForTesting).stanzaTypes == ["argon2id", "key_link", "key_link"])
    }

    @Test func atMost64LinksAreKeptTheOldestDropped() throws {
        let owner = store(path)
        try owner.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        for _ in 0..<66 { try owner.rotateKey(passphrase: Self.passphrase, parameters: nil) { _, _ in [] } }
        let header = try DocumentHeader.parse(bytes(path), label: "t", policy: .insecureForTesting)
        #expect(KeyLinks.links(in: header.stanzas).count == 64)
        _ = try VaultDocument.open(bytes(path), with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting)
    }

    /// The stranger's copy of the issue: her own key, her passphrase stanza, one entry, generation one above. Refused
    /// before her key is asked for (the closure is never called), nothing written, the owner's passphrase still opens.
    @Test func aStrangersKeyIsRefusedBeforeAnyKeyIsAsked() throws {
        let owner = store(path)
        try owner.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        try owner.update([.setField(entry: "mine", field: "password", value: SecureBytes(string: "v"))])
        let before = bytes(path)
        let document = try VaultDocument.open(before, with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting).document
        let (copy, key) = try Self.strangersCopy(of: document)
        var asked = false
        #expect(throws: VaultError.unauthorizedKey(path: "copy")) {
            try owner.merge(copy, label: "copy", dryRun: false, otherPassphrase: Self.other, otherKey: { _ in
                asked = true
                return .unwrapped(key)
            })
        }
        #expect(!asked && bytes(path) == before)
        // A forged link (signed with her key, not ours) from our key id to hers: refused all the same.
        let forged = KeyLink(vaultID: document.vaultID, from: key, id: try #require(owner.document?.dataKeyID), to: key, id: .random(), reason: .other)
        let (linked, _) = try Self.strangersCopy(of: document, links: [forged.stanza], key: key)
        #expect(throws: VaultError.unauthorizedKey(path: "copy")) {
            try owner.merge(linked, label: "copy", dryRun: false, otherPassphrase: Self.other)
        }
        #expect(bytes(path) == before)
        _ = try VaultDocument.open(bytes(path), with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting)
    }

    /// A removed recipient still holds the key the removal retired: a link from it to a key of his own is a valid
    /// signature, but it does not start at the vault's current key, and is refused (a fork from a retired key).
    @Test func aForkFromARetiredKeyIsRefused() throws {
        let owner = store(path)
        try owner.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        let retiredID = try #require(owner.document?.dataKeyID), retired = try #require(owner.dataKey)
        let original = bytes(path)
        let old = try VaultDocument.open(original, with: .dataKey(retired), label: "t", policy: .insecureForTesting).document
        try owner.rotateKey(passphrase: Self.passphrase, parameters: nil, reason: .recipientRemoval) { _, _ in [] }
        let current = bytes(path)
        let his = SecureBytes.random(count: 32)
        let fork = KeyLink(vaultID: old.vaultID, from: retired, id: retiredID, to: his, id: .random(), reason: .other)
        let (copy, _) = try Self.strangersCopy(of: old, links: [fork.stanza], key: his)
        #expect(throws: VaultError.unauthorizedKey(path: "fork")) {
            try owner.merge(copy, label: "fork", dryRun: false, otherPassphrase: Self.other)
        }
        // A copy under the retired key itself (from before the removal): stale, not followed, nothing merged.
        let before = try VaultDocument.open(original, with: .dataKey(retired), label: "t", policy: .insecureForTesting).document
        try before.apply([.setField(entry: "later", field: "password", value: SecureBytes(string: "l"))],
                         replica: ReplicaID(rawValue: 7), clock: SettableClock(1_764_000_200_000))
        let stale = try before.seal(dataKey: retired)
        #expect(throws: VaultError.staleKey(path: "old")) { try owner.merge(stale, label: "old", dryRun: false) }
        #expect(bytes(path) == current)
    }

    /// A legitimate change is followed along its chain: two changes made on A reach B (still on the first key) at once.
    @Test func aChainOfChangesIsFollowed() throws {
        let a = store(path)
        try a.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        let copyPath = try copy(path, to: "b.vault")
        let b = store(copyPath, replica: 2)
        try b.open(with: .passphrase(Self.passphrase))
        try b.update([.setField(entry: "from-b", field: "password", value: SecureBytes(string: "b"))])
        try a.changePassphrase(to: SecureBytes(string: "second"), parameters: .insecureForTesting)
        try a.changePassphrase(to: SecureBytes(string: "third"), parameters: .insecureForTesting)
        let report = try b.merge(bytes(path), label: "a", dryRun: false, otherPassphrase: SecureBytes(string: "third"))
        #expect(report.written && b.document?.dataKeyID == a.document?.dataKeyID)
        _ = try VaultDocument.open(bytes(copyPath), with: .passphrase(SecureBytes(string: "third")), label: "b", policy: .insecureForTesting)
        // A follows nothing back from B (same key now): B's entry arrives.
        _ = try a.merge(bytes(copyPath), label: "b", dryRun: false)
        #expect(a.document?.names.contains("from-b") == true)
    }

    /// The reader's rules: a link of another length or reason, a broken chain, a bad signature inside the chain, and
    /// a last link whose signing key is not the data key's are `bad_key_link`.
    @Test func malformedLinksAreRefused() throws {
        let owner = store(path)
        try owner.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        let k0 = try #require(owner.dataKey), id0 = try #require(owner.document?.dataKeyID)
        let document = try VaultDocument.open(bytes(path), with: .dataKey(k0), label: "t", policy: .insecureForTesting).document
        let k1 = SecureBytes.random(count: 32), id1 = DocumentID.random()
        let k2 = SecureBytes.random(count: 32), id2 = DocumentID.random()
        let link1 = KeyLink(vaultID: document.vaultID, from: k0, id: id0, to: k1, id: id1, reason: .passphraseChange)
        let link2 = KeyLink(vaultID: document.vaultID, from: k1, id: id1, to: k2, id: id2, reason: .recipientRemoval)
        func sealed(_ links: [KeyStanza], dataKeyID: DocumentID = id2, key: SecureBytes = k2) throws -> [UInt8] {
            let stanza = try Argon2idStanza.wrap(key, passphrase: Self.passphrase, parameters: .insecureForTesting)
            document.stanzas = [stanza.stanza] + links
            document.dataKeyID = dataKeyID
            return try document.seal(dataKey: key)
        }
        func outcome(_ file: [UInt8]) -> Error? {
            do {
                _ = try VaultDocument.open(file, with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting)
                return nil
            } catch { return error }
        }
        #expect(outcome(try sealed([link1.stanza, link2.stanza])) == nil)
        var badSignature = link2
        badSignature.signature[0] ^= 1
        #expect(outcome(try sealed([link1.stanza, badSignature.stanza])) as? VaultError == .corrupt(path: "t", reason: .badKeyLink(index: 2)))
        #expect(outcome(try sealed([link2.stanza, link1.stanza])) as? VaultError == .corrupt(path: "t", reason: .badKeyLink(index: 2)))
        #expect(outcome(try sealed([link1.stanza], dataKeyID: id2)) as? VaultError == .corrupt(path: "t", reason: .badKeyLink(index: 1)))
        // The chain ends at the header's key id, but the last signing key is not its key's.
        #expect(outcome(try sealed([link1.stanza], dataKeyID: id1, key: k2)) as? VaultError == .corrupt(path: "t", reason: .badKeyLink(index: 1)))
        #expect(outcome(try sealed([KeyStanza(type: 4, body: link1.body + [0])])) as? VaultError == .corrupt(path: "t", reason: .badKeyLink(index: 1)))
        var badReason = link1.body
        badReason[64] = 4
        #expect(outcome(try sealed([KeyStanza(type: 4, body: badReason)], dataKeyID: id1, key: k1)) as? VaultError == .corrupt(path: "t", reason: .badKeyLink(index: 1)))
    }

    /// Issue 33's stranded machine: A, one change behind the copy elsewhere, changes its passphrase; until that change
    /// is published, the copy under the old key is merged into A's new key as content (never its key); once published,
    /// such a copy is stale, refused with a hint that names what works.
    @Test func aCopyUnderTheKeyAPendingChangeRetiredIsMergedAsContent() throws {
        let protection = RollbackProtection(stateDirectory: directory.file("state-a"))
        try store(path).create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        let remote = try copy(path, to: "remote.vault")
        let a = try DocumentVault(path: path, key: .passphrase(Self.passphrase), replica: ReplicaID(rawValue: 1),
                                  clock: SettableClock(1_764_000_000_000), policy: .insecureForTesting, rollbackProtection: protection)
        // The remote moves on under the old key (another machine's change A has not seen).
        let other = store(remote, replica: 2)
        try other.open(with: .passphrase(Self.passphrase))
        try other.update([.setField(entry: "theirs", field: "password", value: SecureBytes(string: "t"))])
        try a.put("mine", forKey: "ours")
        let newPassphrase = SecureBytes(string: "new passphrase")
        try a.changePassphrase(to: newPassphrase, parameters: .insecureForTesting)
        let newKeyID = try #require(a.document?.dataKeyID)
        // Pending: merged as content, A keeps its new key and stanzas.
        let report = try a.merge(bytes(remote), label: "remote", dryRun: false, otherPassphrase: nil)
        #expect(report.added == ["theirs"] && report.otherLacks)
        #expect(a.document?.dataKeyID == newKeyID && a.document?.names == ["ours", "theirs"])
        _ = try VaultDocument.open(bytes(path), with: .passphrase(newPassphrase), label: "a", policy: .insecureForTesting)
        // Published (a sync wrote A's file to the remote): a copy still under the old key is stale now.
        DocumentVault.keyChangePublished(bytes(path), protection: protection)
        try other.update([.setField(entry: "late", field: "password", value: SecureBytes(string: "l"))])
        let before = bytes(path)
        #expect(throws: VaultError.staleKey(path: "remote")) { try a.merge(bytes(remote), label: "remote", dryRun: false, otherPassphrase: nil) }
        #expect(bytes(path) == before)
        // What the hint says works: the other machine follows A's change (its sync), then its copy merges.
        _ = try other.merge(bytes(path), label: "a", dryRun: false, otherPassphrase: newPassphrase)
        let again = try a.merge(bytes(remote), label: "remote", dryRun: false, otherPassphrase: nil)
        #expect(again.added == ["late"] && a.document?.dataKeyID == newKeyID)
    }

    /// The independent reader (written from docs/FORMAT.md alone) checks the links of a file the library wrote after
    /// two key changes, and reads it as the library does.
    @Test func theIndependentReaderVerifiesTheLinksTheLibraryWrote() throws {
        try #require(InteropTests.pythonReady, "python3 with PyNaCl is needed (scripts/install-deps --test)")
        let owner = store(path)
        try owner.create(passphrase: SecureBytes(string: "first"), parameters: .insecureForTesting)
        try owner.update([.setField(entry: "k", field: "password", value: SecureBytes(string: "v"))])
        try owner.changePassphrase(to: SecureBytes(string: "second"), parameters: .insecureForTesting)
        try owner.rotateKey(passphrase: SecureBytes(string: DocumentVectorTests.passphrase), parameters: nil, reason: .recipientRemoval) { _, _ in [] }
        let (document, dataKey) = try VaultDocument.open(
            bytes(path), with: .passphrase(SecureBytes(string: DocumentVectorTests.passphrase)), label: "t", policy: .insecureForTesting)
        #expect(KeyLinks.links(in: document.stanzas).count == 2)
        try DocumentVectorTests.expectTheReaderReads(document, dataKey: dataKey, formatVersion: 3)
    }

    /// A chain from our current key back to a key this vault retired (signed by a holder of the current key): a key
    /// retired here never authorizes anything, refused as unauthorized, nothing written.
    @Test func aLinkBackToARetiredKeyIsRefused() throws {
        let protection = RollbackProtection(stateDirectory: directory.file("state"))
        try store(path).create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        let vault = try DocumentVault(path: path, key: .passphrase(Self.passphrase), replica: ReplicaID(rawValue: 1),
                                      clock: SettableClock(1_764_000_000_000), policy: .insecureForTesting, rollbackProtection: protection)
        let k0 = try #require(vault.store.dataKey), id0 = try #require(vault.document?.dataKeyID)
        try vault.changePassphrase(to: SecureBytes(string: "new"), parameters: .insecureForTesting)
        DocumentVault.keyChangePublished(bytes(path), protection: protection)
        let k1 = try #require(vault.store.dataKey), id1 = try #require(vault.document?.dataKeyID)
        let document = try VaultDocument.open(bytes(path), with: .dataKey(k1), label: "t", policy: .insecureForTesting).document
        let back = KeyLink(vaultID: document.vaultID, from: k1, id: id1, to: k0, id: id0, reason: .other)
        let stanza = try Argon2idStanza.wrap(k0, passphrase: Self.passphrase, parameters: .insecureForTesting)
        document.stanzas = [stanza.stanza] + KeyLinks.links(in: document.stanzas).map(\.link.stanza) + [back.stanza]
        document.dataKeyID = id0
        let copy = try document.seal(dataKey: k0)
        let before = bytes(path)
        #expect(throws: VaultError.unauthorizedKey(path: "back")) {
            try vault.merge(copy, label: "back", dryRun: false, otherPassphrase: Self.passphrase)
        }
        #expect(bytes(path) == before && vault.document?.dataKeyID == id1)
    }
}

import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// The key a passphrase gives (``PassphraseKey``), kept by a store opened with the passphrase: a key change that
/// keeps the passphrase (a recipient's removal through the agent, issue 35 §4) wraps the new data key with it, under
/// the same salt and parameters, without the passphrase; refused (`wrong_passphrase`, nothing written) when the store
/// holds no such key or it no longer opens the vault's passphrase stanza to the data key.
@Suite("The passphrase's key kept while open")
struct PassphraseKeyTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("kept.vault") }
    static let passphrase = SecureBytes(string: "correct horse battery staple")

    func store(replica: UInt64 = 1) -> DocumentStore {
        DocumentStore(storage: LocalFileStorage(path: path, lockTimeoutSeconds: 2), replica: ReplicaID(rawValue: replica),
                      clock: SettableClock(1_000), policy: .insecureForTesting)
    }

    func bytes() -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path) ?? Data()) }

    func passphraseStanza(_ file: [UInt8]) throws -> Argon2idStanza {
        let header = try DocumentHeader.parse(file, label: "t", policy: .insecureForTesting)
        let stanzas = header.stanzas.filter { $0.type == KeyStanza.argon2id }
        try #require(stanzas.count == 1)
        return try #require(Argon2idStanza(body: stanzas[0].body))
    }

    /// A vault with one entry and a recipient (so that a removal leaves a stanza besides the passphrase's).
    func made() throws {
        let owner = store()
        try owner.create(passphrase: Self.passphrase, parameters: .insecureForTesting)
        try owner.update([.setField(entry: "k", field: "password", value: SecureBytes(string: "v"))])
        try owner.setRecipients { current, key in current + [RecipientStanzaStoreTests.stanza("q", key: key)] }
    }

    @Test func aRotationKeepsThePassphraseWithoutIt() throws {
        try made()
        let before = bytes(), oldStanza = try passphraseStanza(before)
        let opened = store(replica: 2)
        try opened.open(with: .passphrase(Self.passphrase))
        let oldKey = try #require(opened.dataKey)
        try opened.rotateKey(passphrase: nil, parameters: nil, keepingHeldPassphrase: true, reason: .recipientRemoval) { _, key in
            [RecipientStanzaStoreTests.stanza("q", key: key)]
        }
        let after = bytes(), newStanza = try passphraseStanza(after)
        // The same salt and parameters (no KDF ran), a fresh nonce, the new key wrapped.
        #expect(newStanza.salt == oldStanza.salt && newStanza.parameters == oldStanza.parameters)
        #expect(newStanza.keyNonce != oldStanza.keyNonce && newStanza.wrappedKey != oldStanza.wrappedKey)
        let reopened = try VaultDocument.open(after, with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting)
        #expect(reopened.dataKey != oldKey && reopened.dataKey == opened.dataKey)
        #expect(reopened.document.names == ["k"])
        #expect(throws: VaultError.wrongPassphrase(path: "t")) {
            try VaultDocument.open(after, with: .passphrase(SecureBytes(string: "not it")), label: "t", policy: .insecureForTesting)
        }
        // Kept across the change: a second one needs nothing either.
        try opened.rotateKey(passphrase: nil, parameters: nil, keepingHeldPassphrase: true, reason: .recipientRemoval) { _, _ in [] }
        _ = try VaultDocument.open(bytes(), with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting)
    }

    @Test func withoutThePassphrasesKeyNothingIsWritten() throws {
        try made()
        let before = bytes()
        let key = try VaultDocument.open(before, with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting).dataKey
        // Opened with the data key (an identity's, an agent's): no passphrase key.
        let byKey = store(replica: 2)
        try byKey.open(with: .unwrapped(key))
        #expect(throws: VaultError.wrongPassphrase(path: path)) {
            try byKey.rotateKey(passphrase: nil, parameters: nil, keepingHeldPassphrase: true, reason: .recipientRemoval) { _, _ in [] }
        }
        #expect(bytes() == before)
        // Closed: the key is dropped with the data key.
        let opened = store(replica: 3)
        try opened.open(with: .passphrase(Self.passphrase))
        #expect(opened.passphraseKey.withLock { $0 } != nil)
        opened.close()
        #expect(opened.passphraseKey.withLock { $0 } == nil)
    }

    /// The stanza the key was taken from is gone (the same data key, wrapped for another passphrase meanwhile): the
    /// held key would put the old passphrase back. Refused; the new passphrase given, it goes on.
    @Test func aKeyThatNoLongerOpensTheStanzaIsRefused() throws {
        try made()
        let stale = store(replica: 2)
        try stale.open(with: .passphrase(Self.passphrase))
        let other = SecureBytes(string: "another passphrase")
        let writer = store(replica: 3)
        try writer.open(with: .passphrase(Self.passphrase))
        let dataKey = try #require(writer.dataKey)
        try writer.write(attempts: 1) { stored in
            let document = try writer.openHeld(stored, dataKey: dataKey)
            document.stanzas = document.stanzas.filter { $0.type != KeyStanza.argon2id }
                + [try Argon2idStanza.wrap(dataKey, passphrase: other, parameters: .insecureForTesting).stanza]
            return (document, dataKey)
        }
        let before = bytes()
        #expect(throws: VaultError.wrongPassphrase(path: path)) {
            try stale.rotateKey(passphrase: nil, parameters: nil, keepingHeldPassphrase: true, reason: .recipientRemoval) { _, _ in [] }
        }
        #expect(bytes() == before)
        // The same salt and key, wrapping another data key (an older version's stanza put back): opens, but not to
        // the data key held: refused too.
        let kek = try #require(stale.passphraseKey.withLock { $0 })
        try writer.write(attempts: 1) { stored in
            let document = try writer.openHeld(stored, dataKey: dataKey)
            document.stanzas = document.stanzas.filter { $0.type != KeyStanza.argon2id }
                + [try Argon2idStanza.wrap(SecureBytes.random(count: 32), under: kek).stanza]
            return (document, dataKey)
        }
        let wrapsAnother = bytes()
        #expect(throws: VaultError.wrongPassphrase(path: path)) {
            try stale.rotateKey(passphrase: nil, parameters: nil, keepingHeldPassphrase: true, reason: .recipientRemoval) { _, _ in [] }
        }
        #expect(bytes() == wrapsAnother)
        try stale.rotateKey(passphrase: other, parameters: nil, keepingHeldPassphrase: true, reason: .recipientRemoval) { _, _ in [] }
        _ = try VaultDocument.open(bytes(), with: .passphrase(other), label: "t", policy: .insecureForTesting)
    }

    @Test func aPassphraseChangeKeepsTheNewPassphrasesKey() throws {
        try made()
        let opened = store(replica: 2)
        try opened.open(with: .passphrase(Self.passphrase))
        let next = SecureBytes(string: "the next passphrase")
        try opened.changePassphrase(to: next, parameters: .insecureForTesting)
        try opened.rotateKey(passphrase: nil, parameters: nil, keepingHeldPassphrase: true, reason: .recipientRemoval) { _, _ in [] }
        _ = try VaultDocument.open(bytes(), with: .passphrase(next), label: "t", policy: .insecureForTesting)
        #expect(throws: VaultError.wrongPassphrase(path: "t")) {
            try VaultDocument.open(bytes(), with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting)
        }
    }

    /// A lock while the key change waited (the store closed meanwhile): the change is written, but neither the new
    /// data key nor the passphrase's key stays in memory.
    @Test func aCloseDuringAKeyChangeLeavesNothingHeld() throws {
        try made()
        let opened = store(replica: 2)
        try opened.open(with: .passphrase(Self.passphrase))
        try opened.rotateKey(passphrase: nil, parameters: nil, keepingHeldPassphrase: true, reason: .recipientRemoval) { _, key in
            opened.close()
            return [RecipientStanzaStoreTests.stanza("q", key: key)]
        }
        #expect(opened.dataKey == nil && opened.document == nil)
        #expect(opened.passphraseKey.withLock { $0 } == nil)
        _ = try VaultDocument.open(bytes(), with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting)
    }

    /// The owner's other machine, opened with the passphrase, follows a removal made where the passphrase's key was
    /// held (the same salt) with nothing asked; a copy opened without the passphrase is asked for it as before.
    @Test func anotherMachineFollowsTheRemovalWithThePassphrasesKey() throws {
        try made()
        let otherPath = directory.file("other.vault")
        try FileManager.default.copyItem(atPath: path, toPath: otherPath)
        chmod(otherPath, 0o600)
        func otherStore(_ replica: UInt64) -> DocumentStore {
            DocumentStore(storage: LocalFileStorage(path: otherPath, lockTimeoutSeconds: 2), replica: ReplicaID(rawValue: replica),
                          clock: SettableClock(2_000), policy: .insecureForTesting)
        }
        let dataKey = try VaultDocument.open(bytes(), with: .passphrase(Self.passphrase), label: "t", policy: .insecureForTesting).dataKey
        let byKey = otherStore(4)
        try byKey.open(with: .unwrapped(dataKey))
        let machine = otherStore(5)
        try machine.open(with: .passphrase(Self.passphrase))
        try machine.update([.setField(entry: "from-machine", field: "password", value: SecureBytes(string: "m"))])

        let owner = store(replica: 2)
        try owner.open(with: .passphrase(Self.passphrase))
        try owner.rotateKey(passphrase: nil, parameters: nil, keepingHeldPassphrase: true, reason: .recipientRemoval) { _, _ in [] }
        let rotated = bytes()
        #expect(throws: VaultError.otherKey(path: "origin", reason: .recipientRemoval)) {
            try byKey.merge(rotated, label: "origin", dryRun: false)
        }
        let report = try machine.merge(rotated, label: "origin", dryRun: false)
        #expect(report.written && machine.document?.dataKeyID == owner.document?.dataKeyID)
        #expect(machine.document?.names == ["from-machine", "k"])
        _ = try VaultDocument.open(bytes(otherPath: otherPath), with: .passphrase(Self.passphrase), label: "o", policy: .insecureForTesting)
    }

    func bytes(otherPath: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: otherPath) ?? Data()) }
}

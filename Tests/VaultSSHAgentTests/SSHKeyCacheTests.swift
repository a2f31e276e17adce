import Foundation
import Testing
@testable import VaultAgent
import VaultCore
import VaultSSH
@testable import VaultSSHAgent

/// Private keys parsed once per unlock, kept in guarded memory, dropped at every kind of lock and when the entry
/// changes (``SSHKeyCache``), seen through the service's ``SSHKeyCache/count`` and ``SSHKeyCache/parses``.
struct SSHKeyCacheTests {
    let ed = try! SSHPrivateKey.generate(.ed25519, comment: "ed")
    let ec = try! SSHPrivateKey.generate(.ecdsa, comment: "ec")
    let rsa = try! SSHPrivateKey.generate(.rsa, rsaBits: 2048, comment: "rsa")
    let data = Array("the data ssh signs".utf8)

    private func flags(_ key: SSHPrivateKey) -> UInt32 { key.publicKey.kind == .rsa ? SSHPrivateKey.flagRSASHA512 : 0 }

    @Test func eachKeyIsParsedOnceOverManySignatures() throws {
        let fixture = try SSHAgentFixture()
        for (name, key) in [("ed", ed), ("ec", ec), ("rsa", rsa)] { try fixture.add(name, key) }
        try fixture.unlock()
        let connection = fixture.service.connection(0)
        #expect(fixture.service.keys.count == 0)
        for round in 0..<20 {
            for key in [ed, ec, rsa] {
                let message = data + [UInt8(round)]
                let signature = try #require(try fixture.sign(key.publicKey, message, flags: flags(key), on: connection))
                try key.publicKey.verify(signature: signature, data: message)
            }
        }
        #expect(fixture.service.keys.parses == 3)
        #expect(fixture.service.keys.count == 3)
        // Listing keys parses none.
        _ = try fixture.identities(on: connection)
        #expect(fixture.service.keys.parses == 3)
    }

    /// Every way a vault stops being held drops its keys at once (no request needed), and a signature after it is
    /// refused; the next unlock parses again.
    @Test(arguments: ["ssh-add -x", "vault lock", "vault lock --all", "re-keyed elsewhere", "idle timeout", "unlocked again"])
    func everyLockDropsTheParsedKeys(_ how: String) throws {
        let fixture = try SSHAgentFixture()
        try fixture.add("ed", ed)
        try fixture.add("ec", ec)
        try fixture.unlock()
        let connection = fixture.service.connection(0)
        for key in [ed, ec] { _ = try #require(try fixture.sign(key.publicKey, data, on: connection)) }
        #expect(fixture.service.keys.count == 2)
        switch how {
        case "ssh-add -x":
            var lock = SSHWriter()
            lock.byte(SSHAgentWire.lock)
            lock.string("password")
            #expect(fixture.answer(lock.bytes, on: connection) == [SSHAgentWire.success])
        case "vault lock": #expect(fixture.ring.lock(fixture.vaultPath))
        case "vault lock --all": #expect(fixture.ring.lockAll() == 1)
        case "re-keyed elsewhere": #expect(fixture.ring.lock(fixture.vaultPath, reason: "re-keyed elsewhere, locked"))
        case "idle timeout":
            fixture.clock.advance(by: 3600)
            fixture.ring.sweep()
        default:
            // A new unlock of the same vault replaces the store held: what was parsed from the old one goes.
            try fixture.unlock()
        }
        #expect(fixture.service.keys.count == 0)
        if how == "unlocked again" {
            _ = try #require(try fixture.sign(ed.publicKey, data, on: connection))
        } else {
            #expect(try fixture.sign(ed.publicKey, data, on: connection) == nil)
            #expect(fixture.service.keys.count == 0)
            try fixture.unlock()
            _ = try #require(try fixture.sign(ed.publicKey, data, on: connection))
        }
        #expect(fixture.service.keys.parses == 3)
        #expect(fixture.service.keys.count == 1)
    }

    @Test func aChangedEntrySignsWithItsNewKeyAndARemovedOneIsDropped() throws {
        let fixture = try SSHAgentFixture()
        try fixture.add("work", ed)
        try fixture.unlock()
        let connection = fixture.service.connection(0)
        _ = try #require(try fixture.sign(ed.publicKey, data, on: connection))
        // A new key under the same name (vault ssh import --force, or a sync bringing another replica's version).
        try fixture.add("work", ec)
        #expect(try fixture.sign(ed.publicKey, data, on: connection) == nil)
        let signature = try #require(try fixture.sign(ec.publicKey, data, on: connection))
        try ec.publicKey.verify(signature: signature, data: data)
        #expect(fixture.service.keys.parses == 2)
        #expect(fixture.service.keys.count == 1)
        try fixture.vault.apply([.delete(entry: "work")])
        #expect(try fixture.identities(on: connection).isEmpty)
        #expect(fixture.service.keys.count == 0)
    }

    /// A lock that comes while a request is between looking the vault up and parsing its key: nothing is kept.
    @Test func aParseOverlappingALockIsNotKept() throws {
        let fixture = try SSHAgentFixture()
        try fixture.add("ed", ed)
        try fixture.unlock()
        let entry = try #require(fixture.service.allKeys().first)
        let mark = fixture.service.keys.mark()
        _ = fixture.ring.lockAll()
        #expect(try fixture.service.keys.key(for: entry, since: mark) == nil)
        #expect(fixture.service.keys.count == 0)
        #expect(fixture.service.keys.parses == 0)
        // A mark taken after the lock (and a new unlock) keeps it.
        try fixture.unlock()
        let again = try #require(fixture.service.allKeys().first)
        #expect(try fixture.service.keys.key(for: again, since: fixture.service.keys.mark())?.publicKey == ed.publicKey)
        #expect(fixture.service.keys.count == 1)
    }
}

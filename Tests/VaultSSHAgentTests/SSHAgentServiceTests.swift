import Foundation
import Testing
import VaultAgent
import VaultCore
import VaultSSH
@testable import VaultSSHAgent

/// The ssh-agent protocol's requests, answered by the service over a key ring (no socket).
struct SSHAgentServiceTests {
    let ed = try! SSHPrivateKey.generate(.ed25519, comment: "ed@example")
    let ec = try! SSHPrivateKey.generate(.ecdsa, comment: "ec@example")

    @Test func identitiesAreEmptyWhileLockedAndTheVaultsKeysInNameOrderOnceUnlocked() throws {
        let fixture = try SSHAgentFixture()
        try fixture.add("b-ec", ec)
        try fixture.add("a-ed", ed)
        let connection = fixture.service.connection(0)
        #expect(try fixture.identities(on: connection).isEmpty)
        try fixture.unlock()
        let keys = try fixture.identities(on: connection)
        #expect(keys.map(\.blob) == [ed.publicKey.blob, ec.publicKey.blob])
        #expect(keys.map(\.comment) == ["ed@example", "ec@example"])
    }

    @Test func signaturesVerifyUnderTheKeysAndAreRefusedWhileLocked() throws {
        let fixture = try SSHAgentFixture()
        try fixture.add("ed", ed)
        try fixture.add("ec", ec)
        let connection = fixture.service.connection(0)
        let data = Array("the data ssh signs".utf8)
        #expect(try fixture.sign(ed.publicKey, data, on: connection) == nil)
        try fixture.unlock()
        for key in [ed, ec] {
            let signature = try #require(try fixture.sign(key.publicKey, data, on: connection))
            try key.publicKey.verify(signature: signature, data: data)
            #expect(throws: SSHError.badSignature) { try key.publicKey.verify(signature: signature, data: data + [0]) }
        }
        // A key the vault does not hold.
        let other = try SSHPrivateKey.generate(.ed25519, comment: "")
        #expect(try fixture.sign(other.publicKey, data, on: connection) == nil)
        #expect(fixture.service.signatures.last.map(\.key) == ["ed", "ec"])
    }

    @Test func rsaSignsWithSHA2WhenAskedAndRefusesSHA1() throws {
        let fixture = try SSHAgentFixture()
        let rsa = try SSHPrivateKey.generate(.rsa, rsaBits: 2048, comment: "rsa")
        try fixture.add("rsa", rsa)
        try fixture.unlock()
        let connection = fixture.service.connection(0)
        let data = Array("data".utf8)
        for (flags, algorithm) in [(SSHPrivateKey.flagRSASHA256, "rsa-sha2-256"), (SSHPrivateKey.flagRSASHA512, "rsa-sha2-512")] {
            let signature = try #require(try fixture.sign(rsa.publicKey, data, flags: flags, on: connection))
            var reader = SSHReader(signature)
            #expect(try reader.text("algorithm") == algorithm)
            try rsa.publicKey.verify(signature: signature, data: data)
        }
        #expect(try fixture.sign(rsa.publicKey, data, flags: 0, on: connection) == nil)
    }

    @Test func addRemoveAndSmartcardRequestsFailAndChangeNothing() throws {
        let fixture = try SSHAgentFixture()
        try fixture.add("ed", ed)
        try fixture.unlock()
        let connection = fixture.service.connection(0)
        for type in [SSHAgentWire.addIdentity, SSHAgentWire.removeIdentity, SSHAgentWire.removeAllIdentities,
                     SSHAgentWire.addSmartcardKey, SSHAgentWire.removeSmartcardKey, SSHAgentWire.addIdentityConstrained,
                     SSHAgentWire.addSmartcardKeyConstrained, 200] {
            #expect(fixture.answer([type, 0, 0, 0, 0], on: connection) == [SSHAgentWire.failure])
        }
        #expect(try fixture.identities(on: connection).count == 1)
    }

    @Test func lockLocksEveryVaultAndUnlockFails() throws {
        let fixture = try SSHAgentFixture()
        try fixture.add("ed", ed)
        try fixture.unlock()
        let connection = fixture.service.connection(0)
        var lock = SSHWriter()
        lock.byte(SSHAgentWire.lock)
        lock.string("password")
        #expect(fixture.answer(lock.bytes, on: connection) == [SSHAgentWire.success])
        #expect(fixture.ring.holdsNothing)
        #expect(try fixture.identities(on: connection).isEmpty)
        var unlock = SSHWriter()
        unlock.byte(SSHAgentWire.unlock)
        unlock.string("password")
        #expect(fixture.answer(unlock.bytes, on: connection) == [SSHAgentWire.failure])
    }

    @Test func queryListsTheExtensions() throws {
        let fixture = try SSHAgentFixture()
        var query = SSHWriter()
        query.byte(SSHAgentWire.extensionRequest)
        query.string("query")
        var reader = SSHReader(fixture.answer(query.bytes, on: fixture.service.connection(0)))
        #expect(try reader.byte("type") == SSHAgentWire.extensionResponse)
        #expect(try reader.text("name") == "query")
        #expect(try [reader.text("1"), reader.text("2"), reader.text("3")] == ["query", SessionBind.name, "signatures@vault"])
        #expect(reader.isAtEnd)
        var unknown = SSHWriter()
        unknown.byte(SSHAgentWire.extensionRequest)
        unknown.string("nonexistent@example.com")
        #expect(fixture.answer(unknown.bytes, on: fixture.service.connection(0)) == [SSHAgentWire.failure])
    }

    @Test func aBindIsVerifiedAndASessionIDIsBoundOnce() throws {
        let fixture = try SSHAgentFixture()
        let host = try SSHPrivateKey.generate(.ed25519, comment: "")
        let connection = fixture.service.connection(0)
        let sid = Array(repeating: UInt8(7), count: 32)
        // Signed by another key: refused.
        let impostor = try SSHPrivateKey.generate(.ed25519, comment: "")
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: sid, forwarded: false, signature: impostor.sign(sid)), on: connection)
            == [SSHAgentWire.extensionFailure])
        // Truncated: refused.
        #expect(fixture.answer(Array(try SSHAgentFixture.bind(host, sessionID: sid, forwarded: false).dropLast(2)), on: connection)
            == [SSHAgentWire.extensionFailure])
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: sid, forwarded: false), on: connection) == [SSHAgentWire.success])
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: sid, forwarded: true), on: connection) == [SSHAgentWire.extensionFailure])
        #expect(fixture.logged.lines.withLock { $0 }.contains { $0.contains("already bound") })
        // Another connection has binds of its own.
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: sid, forwarded: false), on: fixture.service.connection(1)) == [SSHAgentWire.success])
    }

    /// As OpenSSH's agent: on a bound connection, a user authentication is signed only for the session bound last.
    @Test func aUserAuthenticationIsSignedOnlyForTheSessionBoundLast() throws {
        let fixture = try SSHAgentFixture()
        try fixture.add("ed", ed)
        try fixture.unlock()
        let host = try SSHPrivateKey.generate(.ed25519, comment: "")
        let connection = fixture.service.connection(0)
        func userauth(_ sid: [UInt8], key: [UInt8]) -> [UInt8] {
            var data = SSHWriter()
            data.string(sid)
            data.byte(50)
            data.string("git")
            data.string("ssh-connection")
            data.string("publickey")
            data.bool(true)
            data.string("ssh-ed25519")
            data.string(key)
            return data.bytes
        }
        let bound = [UInt8](repeating: 1, count: 32), other = [UInt8](repeating: 2, count: 32)
        // Unbound: any session.
        #expect(try fixture.sign(ed.publicKey, userauth(other, key: ed.publicKey.blob), on: connection) != nil)
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: bound, forwarded: false), on: connection) == [SSHAgentWire.success])
        #expect(try fixture.sign(ed.publicKey, userauth(other, key: ed.publicKey.blob), on: connection) == nil)
        #expect(try fixture.sign(ed.publicKey, userauth(bound, key: ec.publicKey.blob), on: connection) == nil)
        #expect(try fixture.sign(ed.publicKey, userauth(bound, key: ed.publicKey.blob), on: connection) != nil)
        // Other data (not a user authentication) is signed as before.
        #expect(try fixture.sign(ed.publicKey, [1, 2, 3], on: connection) != nil)
    }
}

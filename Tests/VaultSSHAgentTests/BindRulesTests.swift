import Foundation
import Testing
import VaultAgent
import VaultCore
import VaultSSH
@testable import VaultSSHAgent

/// What a connection's binds allow beyond the key choice itself (a review of the agent against OpenSSH's
/// ssh-agent.c): a refused bind, a bind after an authentication bind, lock from a forwarded connection, and what
/// counts as a yes from askpass.
struct BindRulesTests {
    /// A forwarded client can hide the forwarding flag behind a bind that fails (a host certificate, a signature
    /// we cannot check): the connection is then treated as forwarded, offered only keys that may travel.
    @Test func aRefusedBindLeavesOnlyKeysThatMayTravel() throws {
        let fixture = try SSHAgentFixture()
        let host = try SSHPrivateKey.generate(.ed25519, comment: "")
        let stay = try SSHPrivateKey.generate(.ed25519, comment: "stay")
        let travel = try SSHPrivateKey.generate(.ed25519, comment: "travel")
        let travelForOneHost = try SSHPrivateKey.generate(.ed25519, comment: "travel-one-host")
        try fixture.add("stay", stay)
        try fixture.add("travel", travel, forward: true)
        try fixture.add("travel-one-host", travelForOneHost, hosts: "git.example", forward: true)
        try fixture.unlock()
        let connection = fixture.service.connection(0)
        #expect(try fixture.identities(on: connection).map(\.comment) == ["stay", "travel", "travel-one-host"])
        let impostor = try SSHPrivateKey.generate(.ed25519, comment: "")
        let refused = try SSHAgentFixture.bind(host, sessionID: [5], forwarded: false, signature: impostor.sign([5]))
        #expect(fixture.answer(refused, on: connection) == [SSHAgentWire.extensionFailure])
        #expect(try fixture.identities(on: connection).map(\.comment) == ["travel"])
        #expect(try fixture.sign(stay.publicKey, [1], on: connection) == nil)
        #expect(try fixture.sign(travelForOneHost.publicKey, [1], on: connection) == nil)
        #expect(try fixture.sign(travel.publicKey, [1], on: connection) != nil)
        #expect(fixture.service.signatures.last.last?.forwarded == true)
        // A bind that then succeeds is the connection's bind, as in OpenSSH.
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: [6], forwarded: false), on: connection) == [SSHAgentWire.success])
        #expect(try fixture.sign(stay.publicKey, [1], on: connection) != nil)
    }

    @Test func aConnectionBoundForAnAuthenticationTakesNoOtherBind() throws {
        let fixture = try SSHAgentFixture()
        let host = try SSHPrivateKey.generate(.ed25519, comment: ""), other = try SSHPrivateKey.generate(.ed25519, comment: "")
        let connection = fixture.service.connection(0)
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: [1], forwarded: false), on: connection) == [SSHAgentWire.success])
        #expect(fixture.answer(try SSHAgentFixture.bind(other, sessionID: [2], forwarded: false), on: connection) == [SSHAgentWire.extensionFailure])
        #expect(fixture.answer(try SSHAgentFixture.bind(other, sessionID: [3], forwarded: true), on: connection) == [SSHAgentWire.extensionFailure])
        // Forwarded hops may chain: a forwarded bind, then another, then the authentication's.
        let hops = fixture.service.connection(1)
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: [4], forwarded: true), on: hops) == [SSHAgentWire.success])
        #expect(fixture.answer(try SSHAgentFixture.bind(other, sessionID: [5], forwarded: false), on: hops) == [SSHAgentWire.success])
    }

    @Test func aForwardedConnectionCannotLockThisMachinesVaults() throws {
        let fixture = try SSHAgentFixture()
        let host = try SSHPrivateKey.generate(.ed25519, comment: "")
        try fixture.add("k", try SSHPrivateKey.generate(.ed25519, comment: "k"), forward: true)
        try fixture.unlock()
        let forwarded = fixture.service.connection(0)
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: [1], forwarded: true), on: forwarded) == [SSHAgentWire.success])
        var lock = SSHWriter()
        lock.byte(SSHAgentWire.lock)
        lock.string("")
        #expect(fixture.answer(lock.bytes, on: forwarded) == [SSHAgentWire.failure])
        #expect(try fixture.identities(on: forwarded).count == 1, "the vault was locked from the forwarded connection")
        #expect(fixture.answer(lock.bytes, on: fixture.service.connection(1)) == [SSHAgentWire.success])
        #expect(try fixture.identities(on: forwarded).isEmpty)
    }

    @Test(arguments: [("", true), ("\n", true), ("yes\n", true), ("YES", true), ("no\n", false), ("yess", false), ("y", false)])
    func askpassSaysYesWithNothingOrYes(output: String, yes: Bool) {
        #expect(Confirmation.isYes(Array(output.utf8)) == yes)
    }
}

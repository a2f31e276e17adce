import Foundation
import Testing
import VaultAgent
import VaultCore
import VaultSSH
@testable import VaultSSHAgent

/// Which keys a bound connection is offered (known_hosts names matched against `hosts`), and forwarding.
struct KeyChoiceTests {
    /// Seven keys: six for other hosts, named to come first, and one for the bound host.
    @Test func aBoundHostIsOfferedItsKeysFirstThenKeysForAnyHostAndNoOtherHostsKeys() throws {
        let fixture = try SSHAgentFixture()
        let host = try SSHPrivateKey.generate(.ed25519, comment: "")
        var others: [SSHPrivateKey] = []
        for index in 1...6 {
            let key = try SSHPrivateKey.generate(.ed25519, comment: "other\(index)")
            others.append(key)
            try fixture.add("a\(index)", key, hosts: "other\(index).example")
        }
        let any = try SSHPrivateKey.generate(.ed25519, comment: "any")
        try fixture.add("b-any", any)
        let mine = try SSHPrivateKey.generate(.ed25519, comment: "mine")
        try fixture.add("c-mine", mine, hosts: "*.corp, !nothing.corp")
        try fixture.unlock()
        fixture.knownHostsTexts = ["git.corp,10.0.0.5 " + host.publicKey.line(comment: "")]
        let connection = fixture.service.connection(0)
        // No bind: every key, in name order.
        #expect(try fixture.identities(on: connection).count == 8)
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: [1, 2, 3], forwarded: false), on: connection) == [SSHAgentWire.success])
        #expect(try fixture.identities(on: connection).map(\.comment) == ["mine", "any"])
        // A key for another host cannot sign here.
        #expect(try fixture.sign(others[0].publicKey, [1], on: connection) == nil)
        #expect(try fixture.sign(mine.publicKey, [1], on: connection) != nil)
    }

    @Test func hashedKnownHostsNamesMatchLiteralPatterns() throws {
        let keygen = try #require(findToolOnPath("ssh-keygen"), "ssh-keygen is not on PATH")
        let fixture = try SSHAgentFixture()
        let host = try SSHPrivateKey.generate(.ed25519, comment: "")
        let file = fixture.directory + "/known_hosts"
        try ("[10.0.0.5]:2222 " + host.publicKey.line(comment: "") + "\n").write(toFile: file, atomically: false, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: keygen)
        process.arguments = ["-q", "-H", "-f", file]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let hashed = try String(contentsOfFile: file, encoding: .utf8)
        #expect(hashed.hasPrefix("|1|"))
        let known = KnownHosts(hostKey: host.publicKey, texts: [hashed])
        #expect(known.names.isEmpty)
        #expect(known.matches("[10.0.0.5]:2222"))
        #expect(!known.matches("[10.0.0.5]:22"))
        #expect(!known.matches("10.0.0.*"))
        // Another host key's entries name nothing.
        let other = try SSHPrivateKey.generate(.ed25519, comment: "")
        #expect(KnownHosts(hostKey: other.publicKey, texts: [hashed]).isEmpty)
    }

    @Test func aForwardedConnectionIsOfferedOnlyKeysThatAllowIt() throws {
        let fixture = try SSHAgentFixture()
        let host = try SSHPrivateKey.generate(.ed25519, comment: "")
        let stay = try SSHPrivateKey.generate(.ed25519, comment: "stay")
        let travel = try SSHPrivateKey.generate(.ed25519, comment: "travel")
        try fixture.add("stay", stay)
        try fixture.add("travel", travel, forward: true)
        try fixture.unlock()
        let connection = fixture.service.connection(0)
        #expect(fixture.answer(try SSHAgentFixture.bind(host, sessionID: [9], forwarded: true), on: connection) == [SSHAgentWire.success])
        #expect(try fixture.identities(on: connection).map(\.comment) == ["travel"])
        #expect(try fixture.sign(stay.publicKey, [1], on: connection) == nil)
        #expect(try fixture.sign(travel.publicKey, [1], on: connection) != nil)
        #expect(fixture.service.signatures.last.last?.forwarded == true)
    }

    @Test(arguments: [
        ("*.corp", "git.corp", true), ("*.corp", "corp", false), ("git.c?rp", "git.corp", true), ("GitHub.com", "github.com", true),
        ("[10.0.0.5]:2222", "[10.0.0.5]:2222", true), ("*", "anything", true), ("a*b*c", "aXXbYYc", true), ("a*b*c", "aXXbYY", false),
    ])
    func patterns(pattern: String, host: String, matches: Bool) {
        #expect(HostPattern.matches(pattern, host) == matches)
    }

    func findToolOnPath(_ name: String) -> String? {
        ["/usr/bin/", "/bin/", "/usr/local/bin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

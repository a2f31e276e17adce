import Foundation
import Testing
import VaultCore
import VaultSSH
import VaultTestSupport
@testable import VaultSSHAgent

/// A server that presents a host certificate: ssh binds the certificate, signed by the certified key (as OpenSSH's
/// agent accepts it). Refused, such a bind would leave the connection treated as forwarded (BindRulesTests), and
/// the user's keys for that host would not be offered at all.
struct HostCertificateBindTests {
    static let keygen = findTool("ssh-keygen")
    static var runs: Bool { keygen != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    @Test(.enabled(if: runs, "needs ssh-keygen: scripts/install-deps --test installs openssh-client"), arguments: ["ed25519", "ecdsa", "rsa"])
    func aBindOfAHostCertificateIsCheckedWithTheCertifiedKey(type: String) throws {
        let keygen = try #require(Self.keygen, "ssh-keygen is not on PATH (CI=true)")
        let directory = TemporaryDirectory(prefix: "vault-ssh-cert")
        func run(_ arguments: [String]) throws {
            let (status, output) = try runTool(keygen, arguments)
            try #require(status == 0, "ssh-keygen \(arguments.joined(separator: " ")): \(output)")
        }
        let bits = type == "rsa" ? ["-b", "2048"] : []
        try run(["-q", "-t", "ed25519", "-N", "", "-C", "ca", "-f", directory.file("ca")])
        try run(["-q", "-t", type] + bits + ["-N", "", "-C", "host", "-f", directory.file("host")])
        try run(["-q", "-s", directory.file("ca"), "-I", "host", "-h", "-n", "git.corp", directory.file("host.pub")])
        let certificate = try String(contentsOfFile: directory.file("host-cert.pub"), encoding: .utf8).split(separator: " ")
        let blob = try #require(Base64.decode(certificate[1]))
        let hostKey = try OpenSSHKeyFile.read(try String(contentsOfFile: directory.file("host"), encoding: .utf8), passphrase: { nil })
        let plain = try String(contentsOfFile: directory.file("host.pub"), encoding: .utf8)

        // The certificate names the certified key.
        #expect(try SSHPublicKey(hostKeyBlob: blob).blob == hostKey.publicKey.blob)
        #expect(throws: SSHError.self) { try SSHPublicKey(hostKeyBlob: Array(blob.dropLast(40))).blob }

        let fixture = try SSHAgentFixture()
        let forCorp = try SSHPrivateKey.generate(.ed25519, comment: "corp"), other = try SSHPrivateKey.generate(.ed25519, comment: "other")
        try fixture.add("corp", forCorp, hosts: "git.corp")
        try fixture.add("other", other, hosts: "elsewhere.example")
        try fixture.unlock()
        fixture.knownHostsTexts = ["git.corp " + plain]
        let sid = Array(repeating: UInt8(3), count: 32)
        var bind = SSHWriter()
        bind.byte(SSHAgentWire.extensionRequest)
        bind.string(SessionBind.name)
        bind.string(blob)
        bind.string(sid)
        bind.string(try hostKey.sign(sid, flags: type == "rsa" ? 2 : 0))  // rsa-sha2-256, as sshd signs
        bind.bool(false)
        let connection = fixture.service.connection(0)
        #expect(fixture.answer(bind.bytes, on: connection) == [SSHAgentWire.success])
        #expect(try fixture.identities(on: connection).map(\.comment) == ["corp"])
        // Signed by another key than the certified one: refused.
        let impostor = try SSHPrivateKey.generate(.ed25519, comment: "")
        var forged = SSHWriter()
        forged.byte(SSHAgentWire.extensionRequest)
        forged.string(SessionBind.name)
        forged.string(blob)
        forged.string([4])
        forged.string(try impostor.sign([4]))
        forged.bool(false)
        #expect(fixture.answer(forged.bytes, on: fixture.service.connection(1)) == [SSHAgentWire.extensionFailure])
    }
}

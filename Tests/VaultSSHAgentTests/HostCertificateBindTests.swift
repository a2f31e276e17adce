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
        // rsa-sha2-256, as sshd signs
        let bind = try SSHAgentFixture.bind(hostKey, presenting: blob, sessionID: sid, forwarded: false, flags: type == "rsa" ? 2 : 0)
        let connection = fixture.service.connection(0)
        #expect(fixture.answer(bind, on: connection) == [SSHAgentWire.success])
        #expect(try fixture.identities(on: connection).map(\.comment) == ["corp"])
        // Signed by another key than the certified one: refused.
        let impostor = try SSHPrivateKey.generate(.ed25519, comment: "")
        let forged = try SSHAgentFixture.bind(hostKey, presenting: blob, sessionID: [4], forwarded: false, signature: try impostor.sign([4]))
        #expect(fixture.answer(forged, on: fixture.service.connection(1)) == [SSHAgentWire.extensionFailure])
    }

    // MARK: The host a certificate names (@cert-authority)

    /// A CA, another CA, a host key, and certificates of that host key made by ssh-keygen.
    final class Certificates {
        let directory = TemporaryDirectory(prefix: "vault-ssh-ca")
        let keygen: String
        let hostKey: SSHPrivateKey
        let caLine: String
        let otherCALine: String

        init() throws {
            keygen = try #require(HostCertificateBindTests.keygen, "ssh-keygen is not on PATH (CI=true)")
            for name in ["ca", "other-ca", "host"] {
                try Self.run(keygen, ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", directory.file(name)])
            }
            hostKey = try OpenSSHKeyFile.read(try String(contentsOfFile: directory.file("host"), encoding: .utf8), passphrase: { nil })
            caLine = try Self.publicLine(directory.file("ca.pub"))
            otherCALine = try Self.publicLine(directory.file("other-ca.pub"))
        }

        static func publicLine(_ path: String) throws -> String {
            try String(contentsOfFile: path, encoding: .utf8).split(separator: " ").prefix(2).joined(separator: " ")
        }

        static func run(_ keygen: String, _ arguments: [String]) throws {
            let (status, output) = try runTool(keygen, arguments)
            try #require(status == 0, "ssh-keygen \(arguments.joined(separator: " ")): \(output)")
        }

        /// The blob of a certificate of the host key signed by `ca`, with ssh-keygen's `options` (-h, -n, -V).
        func certificate(by ca: String = "ca", _ options: [String]) throws -> [UInt8] {
            try? FileManager.default.removeItem(atPath: directory.file("host-cert.pub"))
            try Self.run(keygen, ["-q", "-s", directory.file(ca), "-I", "host"] + options + [directory.file("host.pub")])
            let fields = try String(contentsOfFile: directory.file("host-cert.pub"), encoding: .utf8).split(separator: " ")
            return try #require(Base64.decode(fields[1]))
        }

        /// The keys a connection is offered after binding `certificate`, with `knownHosts` as the user's file:
        /// seven keys, six for other hosts first, then the host's (`hosts` *.corp-wide name) and one for any host.
        func offered(_ certificate: [UInt8], knownHosts: [String]) throws -> [String] {
            let fixture = try SSHAgentFixture()
            for index in 1...5 { try fixture.add("a\(index)", try SSHPrivateKey.generate(.ed25519, comment: "a\(index)"), hosts: "other\(index).example") }
            try fixture.add("a6", try SSHPrivateKey.generate(.ed25519, comment: "a6"), hosts: "git.example")
            try fixture.add("corp", try SSHPrivateKey.generate(.ed25519, comment: "corp"), hosts: "git.corp")
            try fixture.add("z-any", try SSHPrivateKey.generate(.ed25519, comment: "z-any"))
            try fixture.unlock()
            fixture.knownHostsTexts = [knownHosts.joined(separator: "\n") + "\n"]
            let sid = Array(repeating: UInt8(9), count: 32)
            let bind = try SSHAgentFixture.bind(hostKey, presenting: certificate, sessionID: sid, forwarded: false)
            let connection = fixture.service.connection(0)
            // The bind itself always holds (the server proved the certified key); only the host's names differ.
            try #require(fixture.answer(bind, on: connection) == [SSHAgentWire.success])
            return try fixture.identities(on: connection).map(\.comment)
        }
    }

    @Test(.enabled(if: runs, "needs ssh-keygen: scripts/install-deps --test installs openssh-client"))
    func aHostCertificateNamesItsPrincipalsThatACertAuthorityLineAccepts() throws {
        let certificates = try Certificates()
        let good = try certificates.certificate(["-h", "-n", "git.corp,build.corp,git.example"])
        let parsed = try #require(try HostCertificate(blob: good))
        #expect(parsed.type == HostCertificate.hostType && parsed.principals == ["git.corp", "build.corp", "git.example"])
        #expect(parsed.isSignedBySignatureKey && parsed.isValidHostCertificate(at: KnownHosts.now()))
        // Only the @cert-authority line: the host is git.corp and build.corp (not git.example: not *.corp).
        #expect(try certificates.offered(good, knownHosts: ["@cert-authority *.corp " + certificates.caLine]) == ["corp", "z-any"])
        // Hashed patterns name a principal too; a negation takes it out.
        let hashedLine = try KnownHostsHashing.hashed(["git.corp"], certificates.caLine, keygen: certificates.keygen, in: certificates.directory)
        #expect(try certificates.offered(good, knownHosts: ["@cert-authority " + hashedLine]) == ["corp", "z-any"])
        #expect(try certificates.offered(good, knownHosts: ["@cert-authority *.corp,!git.corp " + certificates.caLine]) == ["z-any"])
        #expect(try certificates.offered(good, knownHosts: ["@cert-authority *.corp,*.example " + certificates.caLine]) == ["a6", "corp", "z-any"])
        // A plain line of the certified key names the host as well.
        let plain = try HostCertificateBindTests.Certificates.publicLine(certificates.directory.file("host.pub"))
        #expect(try certificates.offered(good, knownHosts: ["git.example " + plain]) == ["a6", "z-any"])
    }

    /// What a certificate must be to name a host: signed by the CA of the line, a host certificate, valid now,
    /// a principal the patterns accept, neither it nor its CA revoked. Otherwise the host is unknown: only the keys
    /// without `hosts` are offered, and nothing else changes (the bind holds).
    @Test(.enabled(if: runs, "needs ssh-keygen: scripts/install-deps --test installs openssh-client"),
          arguments: ["another CA", "expired", "not yet valid", "user certificate", "principal not matching", "forged CA signature",
                      "CA revoked", "host key revoked"])
    func aCertificateThatDoesNotHoldLeavesTheHostUnknown(_ problem: String) throws {
        let certificates = try Certificates()
        var knownHosts = ["@cert-authority *.corp " + certificates.caLine]
        let certificate: [UInt8]
        switch problem {
        case "another CA": certificate = try certificates.certificate(by: "other-ca", ["-h", "-n", "git.corp"])
        case "expired": certificate = try certificates.certificate(["-h", "-n", "git.corp", "-V", "20200101:20200102"])
        case "not yet valid": certificate = try certificates.certificate(["-h", "-n", "git.corp", "-V", "+52w:+104w"])
        case "user certificate": certificate = try certificates.certificate(["-n", "git.corp"])
        case "principal not matching": certificate = try certificates.certificate(["-h", "-n", "git.example"])
        case "forged CA signature":
            var blob = try certificates.certificate(["-h", "-n", "git.corp"])
            blob[blob.count - 5] ^= 0x01
            certificate = blob
        case "CA revoked":
            certificate = try certificates.certificate(["-h", "-n", "git.corp"])
            knownHosts.append("@revoked * " + certificates.caLine)
        default:
            certificate = try certificates.certificate(["-h", "-n", "git.corp"])
            knownHosts.append("@revoked * " + (try Certificates.publicLine(certificates.directory.file("host.pub"))))
            // Revoked, the key's own plain line names nothing either.
            knownHosts.append("git.corp " + (try Certificates.publicLine(certificates.directory.file("host.pub"))))
        }
        #expect(try certificates.offered(certificate, knownHosts: knownHosts) == ["z-any"])
    }
}

/// known_hosts' hashed names as ssh-keygen -H writes them.
enum KnownHostsHashing {
    /// `names`' line for `keyLine`, hashed by ssh-keygen -H: `|1|salt|hash keytype key`.
    static func hashed(_ names: [String], _ keyLine: String, keygen: String, in directory: TemporaryDirectory) throws -> String {
        let file = directory.file("hash_known_hosts")
        try (names.joined(separator: ",") + " " + keyLine + "\n").write(toFile: file, atomically: false, encoding: .utf8)
        let (status, output) = try runTool(keygen, ["-q", "-H", "-f", file])
        try #require(status == 0, "ssh-keygen -H: \(output)")
        let line = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(line.hasPrefix("|1|"), "\(line)")
        return line
    }
}

import Foundation
import Testing
import VaultCore
@testable import VaultSSH
import VaultTestSupport

/// openssh-key-v1 files as ssh-keygen writes them, read back, compared with ssh-keygen's own view of them.
@Suite(.enabled(if: OpenSSH.runs, "ssh-keygen is not on PATH"))
struct OpenSSHKeyFileTests {
    static func secret(_ text: String) -> SecureBytes { SecureBytes(count: text.utf8.count) { $0.copyBytes(from: Array(text.utf8)) } }

    @Test(arguments: ["ed25519", "ecdsa", "rsa"])
    func aKeySshKeygenWroteReadsAsItsPublicKeyAndFingerprint(type: String) throws {
        let directory = try OpenSSH.Directory()
        let path = try OpenSSH.newKey(type, in: directory)
        var asked = 0
        let key = try OpenSSHKeyFile.read(try directory.read("id")) { asked += 1; return nil }
        #expect(asked == 0)
        #expect(key.comment == "alice@example")
        let pub = try directory.read("id.pub").trimmingCharacters(in: .newlines)
        #expect(key.publicKey.line(comment: key.comment) == pub)
        let listed = try OpenSSH.keygen(["-l", "-f", path + ".pub"]).trimmingCharacters(in: .newlines)
        #expect(key.publicKey.fingerprintLine(comment: key.comment) == listed)
    }

    @Test(arguments: ["ed25519", "ecdsa", "rsa"])
    func whatWeWriteSshKeygenReadsAsTheSameKey(type: String) throws {
        let directory = try OpenSSH.Directory()
        _ = try OpenSSH.newKey(type, in: directory)
        let key = try OpenSSHKeyFile.read(try directory.read("id")) { nil }
        let written = OpenSSHKeyFile.write(key)
        try directory.write("ours", String(decoding: written.unprotectedBytes, as: UTF8.self))
        let derived = try OpenSSH.keygen(["-y", "-f", directory.path + "/ours"]).trimmingCharacters(in: .newlines)
        #expect(derived == key.publicKey.line(comment: "alice@example"))
        let again = try OpenSSHKeyFile.read(String(decoding: written.unprotectedBytes, as: UTF8.self)) { nil }
        #expect(again.publicKey == key.publicKey)
        #expect(again.comment == key.comment)
    }

    @Test(arguments: ["ed25519", "ecdsa", "rsa"])
    func anEncryptedKeyOpensWithItsPassphraseAskedOnce(type: String) throws {
        let directory = try OpenSSH.Directory()
        _ = try OpenSSH.newKey(type, in: directory, passphrase: "correct horse", extra: ["-a", "4"])
        let text = try directory.read("id")
        #expect(try OpenSSHKeyFile.header(text)?.cipher == "aes256-ctr")
        var asked = 0
        let key = try OpenSSHKeyFile.read(text) { asked += 1; return Self.secret("correct horse") }
        #expect(asked == 1)
        #expect(key.publicKey.line(comment: key.comment) == (try directory.read("id.pub")).trimmingCharacters(in: .newlines))
        #expect(throws: SSHError.wrongPassphrase) { try OpenSSHKeyFile.read(text) { Self.secret("wrong horse") } }
        #expect(throws: SSHError.passphraseRequired) { try OpenSSHKeyFile.read(text) { nil } }
    }

    @Test func aPassphraseChangedBySshKeygenDashPStillOpens() throws {
        let directory = try OpenSSH.Directory()
        let path = try OpenSSH.newKey("ed25519", in: directory)
        try OpenSSH.keygen(["-q", "-p", "-a", "8", "-N", "new pass", "-P", "", "-f", path])
        let key = try OpenSSHKeyFile.read(try directory.read("id")) { Self.secret("new pass") }
        #expect(key.publicKey.line(comment: key.comment) == (try directory.read("id.pub")).trimmingCharacters(in: .newlines))
    }

    @Test func corruptAndTruncatedFilesGiveErrorsNotCrashes() throws {
        let directory = try OpenSSH.Directory()
        _ = try OpenSSH.newKey("ed25519", in: directory)
        let text = try directory.read("id")
        let lines = text.split(separator: "\n").map(String.init)
        // Truncated: the END line gone.
        #expect(throws: SSHError.truncated(field: "the key file's END line")) {
            try OpenSSHKeyFile.read(lines.dropLast().joined(separator: "\n")) { nil }
        }
        // A body cut short.
        let short = ([lines[0], String(lines[1].prefix(40)), lines.last!]).joined(separator: "\n")
        #expect(throws: SSHError.self) { try OpenSSHKeyFile.read(short) { nil } }
        // Every byte of the binary body changed in turn: an error each time, or (padding, check words, comment) a key.
        let body = try #require(try Self.body(of: text))
        for index in stride(from: 0, to: body.count, by: 3) {
            var changed = body
            changed[index] ^= 0x5A
            let armored = OpenSSHKeyFile.begin + "\n" + Base64.encode(changed) + "\n" + OpenSSHKeyFile.end + "\n"
            _ = try? OpenSSHKeyFile.read(armored) { nil }
        }
        #expect(throws: SSHError.notAPrivateKey) { try OpenSSHKeyFile.read("hello") { nil } }
    }

    @Test func aKeyWhosePrivatePartIsAnotherKeysIsRefused() throws {
        let directory = try OpenSSH.Directory()
        _ = try OpenSSH.newKey("ed25519", in: directory, name: "a")
        _ = try OpenSSH.newKey("ed25519", in: directory, name: "b")
        let a = try #require(try Self.body(of: try directory.read("a")))
        let b = try #require(try Self.body(of: try directory.read("b")))
        // Both files have the same layout; a's public key with b's private section.
        var reader = SSHReader(a, offset: OpenSSHKeyFile.magic.count)
        for _ in 0..<3 { _ = try reader.string("x") }
        _ = try reader.uint32("n")
        let publicEnd = reader.offset + 4 + 51
        let mixed = Array(a[..<publicEnd] + b[publicEnd...])
        let armored = OpenSSHKeyFile.begin + "\n" + Base64.encode(mixed) + "\n" + OpenSSHKeyFile.end + "\n"
        #expect(throws: SSHError.keyMismatch) { try OpenSSHKeyFile.read(armored) { nil } }
    }

    @Test func anUnsupportedKeyTypeIsNamed() throws {
        let directory = try OpenSSH.Directory()
        // ssh-keygen no longer makes DSA keys on every build; a key type it makes that we do not read: ECDSA P-384.
        _ = try OpenSSH.newKey("ecdsa", in: directory, extra: ["-b", "384"])
        #expect(throws: SSHError.unsupportedKeyType("ecdsa-sha2-nistp384")) { try OpenSSHKeyFile.read(try directory.read("id")) { nil } }
    }

    @Test(arguments: [("ecdsa", "PKCS8"), ("rsa", "PKCS8"), ("ecdsa", "PEM"), ("rsa", "PEM")])
    func pemAndPKCS8KeysReadAsTheSameKey(type: String, format: String) throws {
        let directory = try OpenSSH.Directory()
        let path = try OpenSSH.newKey(type, in: directory)
        try OpenSSH.keygen(["-q", "-p", "-m", format, "-N", "", "-P", "", "-f", path])
        let text = try directory.read("id")
        #expect(!text.contains("OPENSSH PRIVATE KEY"))
        let key = try #require(try PEMKey.read(text, comment: "alice@example"))
        #expect(key.publicKey.line(comment: key.comment) == (try directory.read("id.pub")).trimmingCharacters(in: .newlines))
    }

    /// ssh-keygen keeps Ed25519 keys in its own format (and Debian 12's does not read them as PKCS#8); openssl
    /// writes them as PKCS#8 and says their public key.
    @Test func anEd25519PKCS8KeyFromOpenSSLReadsAsTheKeyOpenSSLDerives() throws {
        let openssl = try #require(findTool("openssl"), "openssl is not on PATH")
        let directory = try OpenSSH.Directory()
        let (status, output) = try runTool(openssl, ["genpkey", "-algorithm", "ed25519", "-out", directory.path + "/id"])
        try #require(status == 0, "\(output)")
        chmod(directory.path + "/id", 0o600)
        let key = try #require(try PEMKey.read(try directory.read("id"), comment: ""))
        let (derivedStatus, _) = try runTool(openssl, ["pkey", "-in", directory.path + "/id", "-pubout", "-outform", "DER", "-out", directory.path + "/pub.der"])
        try #require(derivedStatus == 0)
        let der = try #require(FileManager.default.contents(atPath: directory.path + "/pub.der"))
        #expect(der.count == 44)
        #expect(key.publicKey.blob.suffix(32).elementsEqual(der.suffix(32)))
    }

    /// The key file the vault stores goes through guarded memory only and reads back as the same key.
    @Test func theStoredFileRoundTripsThroughGuardedMemory() throws {
        let data = Array("the data ssh signs".utf8)
        for key in [try SSHPrivateKey.generate(.ed25519, comment: "ed"), try SSHPrivateKey.generate(.ecdsa, comment: "ec"),
                    try SSHPrivateKey.generate(.rsa, rsaBits: 2048, comment: "rsa")] {
            let file = OpenSSHKeyFile.write(key)
            let text = try #require(file.stringValue)
            #expect(text.hasPrefix("-----BEGIN OPENSSH PRIVATE KEY-----\n"))
            #expect(text.hasSuffix("\n-----END OPENSSH PRIVATE KEY-----\n"))
            #expect(text.split(separator: "\n").allSatisfy { $0.count <= 70 || $0.hasPrefix("-----") })
            let again = try file.withUnsafeBytes { try OpenSSHKeyFile.read(armored: $0) { nil } }
            #expect(again.publicKey == key.publicKey)
            #expect(again.comment == key.comment)
            #expect(again.privateFields() == key.privateFields())
            let signature = try again.sign(data, flags: SSHPrivateKey.flagRSASHA256)
            try key.publicKey.verify(signature: signature, data: data)
        }
    }

    /// The binary body of an armored key file (decoded into guarded memory, copied out for the test to change).
    static func body(of text: String) throws -> [UInt8]? {
        try Array(text.utf8).withUnsafeBytes { try OpenSSHKeyFile.body(of: $0)?.unprotectedBytes }
    }
}

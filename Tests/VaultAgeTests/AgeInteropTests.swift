import Foundation
import Testing
import VaultCore
import VaultTestSupport

@testable import VaultAge

/// Against the real `age` and `age-keygen` (Debian's `age` package, 1.1.1 here): files age encrypts to our
/// recipients open with our identities; identities age-keygen makes are ours too; files we write, age decrypts to
/// the exact bytes.
@Suite("interop with age")
struct AgeInteropTests {
    static let needsAge: Comment = "needs age: scripts/install-deps --test"

    static func run(_ tool: String?, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let (status, output) = try runTool(try #require(tool, needsAge), arguments)
        return (status, output)
    }

    static func write(_ bytes: some Collection<UInt8>, to path: String) throws {
        try #require(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
    }

    static func read(_ path: String) throws -> [UInt8] {
        [UInt8](try #require(FileManager.default.contents(atPath: path)))
    }

    /// What `age -d -o path` wrote: age opens its output at the first byte, so an empty plaintext leaves no file.
    static func readDecrypted(_ path: String) throws -> [UInt8] {
        FileManager.default.fileExists(atPath: path) ? try read(path) : []
    }

    /// Opens an age file with our code alone: header, stanza, MAC, payload.
    static func open(_ file: [UInt8], with identities: [AgeIdentity]) throws -> [UInt8] {
        let (header, byteCount) = try AgeHeader.parse(file)
        let fileKey = try header.unwrapFileKey(with: identities)
        return try AgePayload.decrypt(Array(file[byteCount...]), fileKey: fileKey).unprotectedBytes
    }

    static let sizes = [0, 1, 1000, 65_536, 65_537, 150_000]

    @Test(.enabled(if: AgeTestSupport.ageIsInstalled, needsAge), arguments: sizes)
    func aFileAgeEncryptedToOurRecipientOpensWithOurIdentity(size: Int) throws {
        try AgeTestSupport.withTemporaryDirectory { directory in
            let identity = AgeIdentity.generate(), other = AgeIdentity.generate()
            let plaintext = AgeTestSupport.pattern(count: size, seed: 11)
            try Self.write(plaintext, to: directory + "/plain")
            let encrypted = try Self.run(AgeTestSupport.age, ["-e", "-r", identity.recipient.description, "-o", directory + "/one.age", directory + "/plain"])
            #expect(encrypted.status == 0, "\(encrypted.output)")
            let file = try Self.read(directory + "/one.age")
            #expect(try Self.open(file, with: [identity]) == plaintext)

            let (header, _) = try AgeHeader.parse(file)
            #expect(header.stanzas.count == 1 && header.stanzas[0].type == "X25519")
            #expect(try X25519Stanza(header.stanzas[0]).unwrap(with: identity).count == 16)
            #expect(throws: AgeError.noMatch) { try header.unwrapFileKey(with: [other]) }

            // Two recipients, ours second: age writes a stanza for each.
            let two = try Self.run(AgeTestSupport.age, ["-e", "-r", other.recipient.description, "-r", identity.recipient.description,
                                                         "-o", directory + "/two.age", directory + "/plain"])
            #expect(two.status == 0, "\(two.output)")
            let twoFile = try Self.read(directory + "/two.age")
            #expect(try AgeHeader.parse(twoFile).header.stanzas.count == 2)
            #expect(try Self.open(twoFile, with: [identity]) == plaintext)
            #expect(try Self.open(twoFile, with: [other]) == plaintext)
        }
    }

    @Test(.enabled(if: AgeTestSupport.ageIsInstalled, needsAge))
    func anIdentityMadeByAgeKeygenIsReadAsAgeReadsIt() throws {
        try AgeTestSupport.withTemporaryDirectory { directory in
            let keyPath = directory + "/key.txt"
            let made = try Self.run(AgeTestSupport.ageKeygen, ["-o", keyPath])
            #expect(made.status == 0, "\(made.output)")
            let identities = try AgeIdentity.parseIdentityFile(SecureBytes(try Self.read(keyPath)))
            #expect(identities.count == 1)
            let printed = try Self.run(AgeTestSupport.ageKeygen, ["-y", keyPath])
            #expect(printed.status == 0)
            #expect(identities[0].recipient.description + "\n" == printed.output)
            // The "# public key:" comment age-keygen writes above the key says the same.
            let text = String(decoding: try Self.read(keyPath), as: UTF8.self)
            #expect(text.contains("# public key: \(identities[0].recipient)\n"))
            // The key encodes back to the very line age-keygen wrote.
            #expect(text.contains("\n" + identities[0].encoded().stringValue! + "\n"))
        }
    }

    @Test(.enabled(if: AgeTestSupport.ageIsInstalled, needsAge))
    func anIdentityWeMakeIsReadByAge() throws {
        try AgeTestSupport.withTemporaryDirectory { directory in
            let identity = AgeIdentity.generate()
            let keyPath = directory + "/ours.txt"
            try Self.write(Array("# made by VaultAge\n".utf8) + identity.encoded().unprotectedBytes + [0x0A], to: keyPath)
            let printed = try Self.run(AgeTestSupport.ageKeygen, ["-y", keyPath])
            #expect(printed.status == 0 && printed.output == identity.recipient.description + "\n", "\(printed.output)")
            // age encrypts to our recipient and decrypts with our identity file.
            let plaintext = AgeTestSupport.pattern(count: 777)
            try Self.write(plaintext, to: directory + "/plain")
            #expect(try Self.run(AgeTestSupport.age, ["-e", "-r", identity.recipient.description, "-o", directory + "/f.age", directory + "/plain"]).status == 0)
            let decrypted = try Self.run(AgeTestSupport.age, ["-d", "-i", keyPath, "-o", directory + "/out", directory + "/f.age"])
            #expect(decrypted.status == 0, "\(decrypted.output)")
            #expect(try Self.read(directory + "/out") == plaintext)
        }
    }

    @Test(.enabled(if: AgeTestSupport.ageIsInstalled, needsAge), arguments: sizes)
    func aFileWeWriteIsDecryptedByAge(size: Int) throws {
        try AgeTestSupport.withTemporaryDirectory { directory in
            let keyPath = directory + "/key.txt"
            #expect(try Self.run(AgeTestSupport.ageKeygen, ["-o", keyPath]).status == 0)
            let recipientLine = try Self.run(AgeTestSupport.ageKeygen, ["-y", keyPath]).output
            let recipient = try AgeRecipient(parsing: recipientLine.trimmingCharacters(in: .newlines))

            let plaintext = AgeTestSupport.pattern(count: size, seed: 13)
            let fileKey = SecureBytes.random(count: 16)
            let stanzas = [
                try X25519Stanza.wrap(fileKey, for: AgeIdentity.generate().recipient).stanza,  // someone else's
                AgeStanza(type: "vault.example/grease", arguments: ["a", "b"], body: AgeTestSupport.pattern(count: 50)),
                try X25519Stanza.wrap(fileKey, for: recipient).stanza,
            ]
            let header = try AgeHeader(stanzas: stanzas, fileKey: fileKey)
            let file = header.serialized() + (try AgePayload.encrypt(SecureBytes(plaintext), fileKey: fileKey))
            try Self.write(file, to: directory + "/ours.age")
            let decrypted = try Self.run(AgeTestSupport.age, ["-d", "-i", keyPath, "-o", directory + "/out", directory + "/ours.age"])
            #expect(decrypted.status == 0, "\(decrypted.output)")
            #expect(try Self.readDecrypted(directory + "/out") == plaintext)

            // age checks our MAC: one bit of it flipped and age refuses the file.
            var mac = header.mac
            mac[0] ^= 0x01
            let forged = AgeHeader(stanzas: header.stanzas, mac: mac).serialized() + file[header.serialized().count...]
            try Self.write(forged, to: directory + "/forged.age")
            let refused = try Self.run(AgeTestSupport.age, ["-d", "-i", keyPath, "-o", directory + "/forged-out", directory + "/forged.age"])
            #expect(refused.status != 0 && refused.output.contains("MAC"), "\(refused.output)")
        }
    }
}

import Foundation
import Testing
import VaultCore
import VaultTestSupport

@testable import VaultAge

/// A vault's `x25519` stanza (docs/FORMAT.md, "The x25519 stanza"): made here, its exact size and shape, opened with
/// the identity, refused to a stranger, each full check of VaultAge, the vectors of `Tests/Vectors/v2` made by the
/// Python generator, and recovery with the stock `age -d`.
@Suite("vault recipient stanzas")
struct VaultRecipientStanzaTests {
    static let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors/v2").path
    /// The generator's data key (`BLAKE2b-256(key = seed, "data key")`).
    static let vectorDataKey = AgeTestSupport.bytes(hex: "203113fd7f64ccb679a7991467ea49f1cd642c7b90deec6564a6e3a7a7423daa")

    static func identityOfVectors() throws -> AgeIdentity {
        let text = try String(contentsOfFile: vectors + "/identity.txt", encoding: .utf8)
        return try AgeIdentity.parseIdentityFile(SecureBytes(string: text))[0]
    }

    @Test func aStanzaWrapsTheDataKeyInAMinimalAgeFileAndOpensWithTheIdentity() throws {
        let identity = AgeIdentity.generate(), stranger = AgeIdentity.generate()
        let dataKey = SecureBytes.random(count: 32)
        let stanza = try VaultRecipientStanza.wrap(dataKey, for: identity.recipient)
        #expect(stanza.recipient == identity.recipient.description)
        #expect(stanza.ageFile.count == RecipientStanza.ageFileByteCount)
        #expect(stanza.stanza.body.count == RecipientStanza.byteCount && stanza.stanza.body.count == 295)
        #expect(try VaultRecipientStanza.unwrap(stanza, index: 0, with: identity, label: "t") == dataKey)
        #expect(throws: VaultError.wrongIdentity(path: "t")) {
            try VaultRecipientStanza.unwrap(stanza, index: 0, with: stranger, label: "t")
        }
        // Two wraps of one key for one recipient share nothing (fresh ephemeral share, file key, nonce).
        let again = try VaultRecipientStanza.wrap(dataKey, for: identity.recipient)
        #expect(again.ageFile != stanza.ageFile)
    }

    @Test func theFullChecksRefuseWhatTheShapeLetsThrough() throws {
        let identity = AgeIdentity.generate()
        let stanza = try VaultRecipientStanza.wrap(SecureBytes.random(count: 32), for: identity.recipient)
        // A Bech32 checksum broken (the shape's characters are all allowed).
        var recipient = Array(stanza.recipient.utf8)
        recipient[recipient.count - 1] = recipient[recipient.count - 1] == UInt8(ascii: "q") ? UInt8(ascii: "p") : UInt8(ascii: "q")
        let badChecksum = try #require(RecipientStanza(recipient: String(decoding: recipient, as: UTF8.self), ageFile: stanza.ageFile))
        #expect(throws: VaultError.corrupt(path: "t", reason: .badRecipient(index: 3))) {
            try VaultRecipientStanza.check(badChecksum, index: 3, label: "t")
        }
        // The age header's MAC line damaged (still 232 bytes, the same first line): the grammar refuses it.
        var file = stanza.ageFile
        file[167] = UInt8(ascii: " ")
        let badFile = try #require(RecipientStanza(recipient: stanza.recipient, ageFile: file))
        #expect(throws: VaultError.corrupt(path: "t", reason: .badAgeFile(index: 1))) {
            try VaultRecipientStanza.check(badFile, index: 1, label: "t")
        }
        // The payload altered: the identity's stanza, no longer opening: one answer for altered and not ours.
        var payload = stanza.ageFile
        payload[payload.count - 1] ^= 1
        let altered = try #require(RecipientStanza(recipient: stanza.recipient, ageFile: payload))
        #expect(throws: VaultError.wrongIdentity(path: "t")) {
            try VaultRecipientStanza.unwrap(altered, index: 0, with: identity, label: "t")
        }
    }

    /// Unlocking a vault of 20 recipients costs one stanza's work plus a scan: the identity's stanza is found by its
    /// recipient, and the 19 others are never checked or tried (here each has an age file that would fail every check).
    @Test func anIdentityOpensItsOwnStanzaAmongTwentyWithoutTouchingTheOthers() throws {
        try AgeTestSupport.withTemporaryDirectory { directory in
            let identity = AgeIdentity.generate()
            let filler = RecipientStanza.ageFilePrefix
                + [UInt8](repeating: UInt8(ascii: "!"), count: RecipientStanza.ageFileByteCount - RecipientStanza.ageFilePrefix.count)
            let store = DocumentStore(storage: LocalFileStorage(path: directory + "/v.vault"), replica: .random(), policy: .insecureForTesting)
            try store.create(passphrase: SecureBytes(string: "p"), parameters: .insecureForTesting)
            var held: SecureBytes?
            try store.setRecipients { _, dataKey in
                held = dataKey
                var stanzas = (0..<19).map { _ in RecipientStanza(recipient: AgeIdentity.generate().recipient.description, ageFile: filler)! }
                stanzas.insert(try VaultRecipientStanza.wrap(dataKey, for: identity.recipient), at: 13)
                return stanzas
            }
            let file = [UInt8](try #require(FileManager.default.contents(atPath: directory + "/v.vault")))
            let header = try DocumentHeader.parse(file, label: "t", policy: .insecureForTesting)
            #expect(header.recipients.count == 20)
            let dataKey = try VaultRecipientStanza.dataKey(of: header, identities: [identity], label: "t")
            #expect(dataKey == (try #require(held)))
            _ = try VaultDocument.open(file, with: .unwrapped(dataKey), label: "t", policy: .insecureForTesting)
        }
    }

    /// The generator's stanzas (Python, `cryptography`) open here: the same format from two implementations.
    @Test(arguments: ["valid-recipient.vault", "valid-recipients-only.vault"])
    func theVectorsOpenWithTheirIdentity(file: String) throws {
        let bytes = [UInt8](try #require(FileManager.default.contents(atPath: Self.vectors + "/" + file)))
        let header = try DocumentHeader.parse(bytes, label: file, policy: .insecureForTesting)
        let identity = try Self.identityOfVectors()
        let dataKey = try VaultRecipientStanza.dataKey(of: header, identities: [identity], label: file)
        #expect(dataKey.unprotectedBytes == Self.vectorDataKey)
        let (document, _) = try VaultDocument.open(bytes, with: .unwrapped(dataKey), label: file, policy: .insecureForTesting)
        #expect(document.names.count == 3)
        #expect(throws: VaultError.wrongIdentity(path: file)) {
            try VaultRecipientStanza.dataKey(of: header, identities: [AgeIdentity.generate()], label: file)
        }
    }

    /// Recovery with stock tools: the stanza's age file, given to `age -d -i key.txt` (a key from `age-keygen`),
    /// is the data key.
    @Test(.enabled(if: AgeTestSupport.ageIsInstalled, "needs age: scripts/install-deps --test"))
    func ageDecryptsTheStanzasAgeFileToTheDataKey() throws {
        try AgeTestSupport.withTemporaryDirectory { directory in
            let made: (status: Int32, output: String) = try runTool(try #require(AgeTestSupport.ageKeygen), ["-o", directory + "/key.txt"])
            #expect(made.status == 0, "\(made.output)")
            let identity = try AgeIdentity.parseIdentityFile(SecureBytes(Array(try #require(FileManager.default.contents(atPath: directory + "/key.txt")))))[0]
            let dataKey = SecureBytes.random(count: 32)
            let stanza = try VaultRecipientStanza.wrap(dataKey, for: identity.recipient)
            try #require(FileManager.default.createFile(atPath: directory + "/stanza.age", contents: Data(stanza.ageFile)))
            let decrypted: (status: Int32, output: String) = try runTool(try #require(AgeTestSupport.age), ["-d", "-i", directory + "/key.txt", "-o", directory + "/key.bin", directory + "/stanza.age"])
            #expect(decrypted.status == 0, "\(decrypted.output)")
            #expect([UInt8](try #require(FileManager.default.contents(atPath: directory + "/key.bin"))) == dataKey.unprotectedBytes)
        }
    }
}

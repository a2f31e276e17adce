import Crypto
import Foundation
@testable import SecretService
import Testing
import VaultCore

/// The Diffie-Hellman session of dh-ietf1024-sha256-aes128-cbc-pkcs7 against an independent computation: Python's
/// pow() for the group arithmetic and its hmac module for HKDF-SHA-256 (no salt, no info, 16 bytes), as libsecret
/// derives the key from the shared secret padded to the prime's 128 bytes.
@Suite struct SecretSessionTests {
    static let python = "/usr/bin/python3"

    /// Runs `script` with `arguments`; its stdout without the trailing newline.
    static func python(_ script: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script] + arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static let oracle = """
        import sys, hmac, hashlib
        p = int.from_bytes(bytes.fromhex(sys.argv[1]), 'big')
        x = int(sys.argv[2], 16)
        if sys.argv[3] == 'public':
            y = pow(2, x, p)
            print(y.to_bytes((y.bit_length() + 7) // 8, 'big').hex())
        else:
            peer = int(sys.argv[4], 16)
            shared = pow(peer, x, p).to_bytes(128, 'big')
            prk = hmac.new(b'\\0' * 32, shared, hashlib.sha256).digest()
            print(hmac.new(prk, b'\\x01', hashlib.sha256).digest()[:16].hex())
        """

    @Test func theKeyIsLibsecretsDerivationOfTheSharedSecret() throws {
        for _ in 0..<4 {
            let clientPrivate = Self.hex((0..<128).map { _ in UInt8.random(in: 0...255) }.enumerated().map { $0 == 0 ? $1 & 0x7F : $1 })
            let clientPublic = try Self.python(Self.oracle, [Self.hex(SecretSession.prime), clientPrivate, "public"])
            let (key, serverPublic) = try SecretSession.agree(peer: SecretSession.hex(clientPublic.count % 2 == 0 ? clientPublic : "0" + clientPublic))
            #expect(serverPublic.first != 0, "a public value is sent without leading zeros")
            #expect(serverPublic.count <= 128)
            let expected = try Self.python(Self.oracle, [Self.hex(SecretSession.prime), clientPrivate, "key", Self.hex(serverPublic)])
            #expect(key.withUnsafeBytes { Self.hex($0) } == expected)
        }
    }

    @Test func degenerateOrOversizedPublicValuesAreRefused() {
        let p = SecretSession.prime
        var pMinusOne = p
        pMinusOne[pMinusOne.count - 1] -= 1
        for value in [[], [0], [1], [0, 1], pMinusOne, p, [UInt8](repeating: 0xFF, count: 128), [1] + p] as [[UInt8]] {
            #expect(throws: SecretServiceError.invalidArguments("the client's Diffie-Hellman public value is malformed")) {
                try SecretSession.agree(peer: value)
            }
        }
        #expect(throws: Never.self) { try SecretSession.agree(peer: [2]) }
    }

    @Test func aSecretMakesTheRoundTripAndATamperedOneIsRefused() throws {
        let key = SymmetricKey(size: .bits128)
        let session = SecretSession(path: "/s/1", owner: ":1.1", kind: .aes(key))
        let secret = SecureBytes(count: 33) { $0.copyBytes(from: Array("the secret of thirty-three bytes!".utf8)) }
        let (iv, value) = try session.encode(secret)
        #expect(iv.count == 16 && value.count == 48, "AES-128-CBC with PKCS#7 pads 33 bytes to 48")
        let back = try iv.withUnsafeBytes { i in try value.withUnsafeBytes { v in try session.decode(parameters: i, value: v) } }
        #expect(back == secret)
        // Another key: the padding does not check (or, 1 time in 256, the bytes are not the secret).
        let other = SecretSession(path: "/s/2", owner: ":1.1", kind: .aes(SymmetricKey(size: .bits128)))
        let wrong = try? iv.withUnsafeBytes { i in try value.withUnsafeBytes { v in try other.decode(parameters: i, value: v) } }
        #expect(wrong != secret)
        #expect(throws: SecretServiceError.invalidArguments("the secret is not AES-128-CBC with a 16-byte IV")) {
            try [UInt8](repeating: 0, count: 8).withUnsafeBytes { i in try value.withUnsafeBytes { v in try session.decode(parameters: i, value: v) } }
        }
        let plain = SecretSession(path: "/s/3", owner: ":1.1", kind: .plain)
        #expect(try plain.encode(secret).value == secret.unprotectedBytes)
        #expect(try plain.encode(secret).parameters.isEmpty)
    }
}

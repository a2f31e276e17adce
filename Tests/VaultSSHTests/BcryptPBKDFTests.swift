import Testing
@testable import VaultSSH

/// OpenBSD's bcrypt_pbkdf vectors (as RustCrypto's bcrypt-pbkdf crate carries them); ssh-keygen's own output is
/// OpenSSHKeyFileTests'.
struct BcryptPBKDFTests {
    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = [], characters = Array(text)
        while characters.count >= 2 {
            bytes.append(UInt8(String(characters[0..<2]), radix: 16)!)
            characters.removeFirst(2)
        }
        return bytes
    }

    @Test(arguments: [
        ("password", [UInt8]("salt".utf8), "5bbf0cc293587f1c3635555c27796598d47e579071bf427e9d8fbe842aba34d9"),
        ("password", [0], "c12b566235eee04c212598970a579a67"),
        ("\0", [UInt8]("salt".utf8), "6051be18c2f4f82cbf0efee5471b4bb9"),
        ("password\0", [UInt8]("salt\0".utf8), "7410e44cf4fa07bfaac8a928b1727fac001375e7bf7384370f48efd121743050"),
    ])
    func theOpenBSDVectors(password: String, salt: [UInt8], expected: String) {
        let key = Array(password.utf8).withUnsafeBytes {
            BcryptPBKDF.derive(passphrase: $0, salt: salt, rounds: 4, keyLength: expected.count / 2)
        }
        #expect(key == Self.hex(expected))
    }

    @Test func blowfishsTablesArePisDigits() {
        #expect(Blowfish.initialP.count == 18 && Blowfish.initialS.count == 1024)
        #expect(Blowfish.initialP[0] == 0x243F_6A88 && Blowfish.initialP[17] == 0x8979_FB1B)
        #expect(Blowfish.initialS[0] == 0xD131_0BA6 && Blowfish.initialS[1023] == 0x3AC3_72E6)
    }
}

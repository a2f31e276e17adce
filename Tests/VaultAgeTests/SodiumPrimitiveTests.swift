import Testing
import VaultSodium

/// The primitives VaultAge adds to VaultSodium, against their RFCs' test vectors (each checked against Python's
/// `cryptography` too): HKDF-SHA-256 (RFC 5869 appendix A), ChaCha20-Poly1305 (RFC 8439 §2.8.2), X25519
/// (RFC 7748 §6.1), and the all-zero shared secret refused.
@Suite("VaultSodium: HKDF, ChaCha20-Poly1305, X25519")
struct SodiumPrimitiveTests {
    static func hex(_ string: String) -> [UInt8] { AgeTestSupport.bytes(hex: string) }

    struct HKDFCase: Sendable, CustomTestStringConvertible {
        let name: String, ikm: [UInt8], salt: [UInt8], info: [UInt8], prk: String, okm: String
        var testDescription: String { name }
    }

    static let rfc5869: [HKDFCase] = [
        HKDFCase(
            name: "A.1 basic", ikm: [UInt8](repeating: 0x0b, count: 22), salt: hex("000102030405060708090a0b0c"),
            info: hex("f0f1f2f3f4f5f6f7f8f9"),
            prk: "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
            okm: "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
        HKDFCase(
            name: "A.2 longer inputs and outputs", ikm: Array(0x00...0x4f), salt: Array(0x60...0xaf), info: Array(0xb0...0xff),
            prk: "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
            okm: "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"),
        HKDFCase(
            name: "A.3 empty salt and info", ikm: [UInt8](repeating: 0x0b, count: 22), salt: [], info: [],
            prk: "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
            okm: "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
    ]

    @Test(arguments: rfc5869)
    func hkdfMatchesRFC5869(_ vector: HKDFCase) {
        var prk = [UInt8](repeating: 0, count: Sodium.hkdfSHA256PseudorandomKeyByteCount)
        vector.salt.withUnsafeBytes { salt in
            vector.ikm.withUnsafeBytes { ikm in
                prk.withUnsafeMutableBytes { Sodium.hkdfSHA256Extract(salt: salt, inputKeyingMaterial: ikm, into: $0) }
            }
        }
        #expect(AgeTestSupport.hex(prk) == vector.prk)

        let okmCount = vector.okm.count / 2
        var expanded = [UInt8](repeating: 0, count: okmCount)
        prk.withUnsafeBytes { prk in
            vector.info.withUnsafeBytes { info in
                expanded.withUnsafeMutableBytes { Sodium.hkdfSHA256Expand(pseudorandomKey: prk, info: info, into: $0) }
            }
        }
        #expect(AgeTestSupport.hex(expanded) == vector.okm)

        var okm = [UInt8](repeating: 0, count: okmCount)
        vector.ikm.withUnsafeBytes { ikm in
            vector.salt.withUnsafeBytes { salt in
                vector.info.withUnsafeBytes { info in
                    okm.withUnsafeMutableBytes { Sodium.hkdfSHA256(inputKeyingMaterial: ikm, salt: salt, info: info, into: $0) }
                }
            }
        }
        #expect(AgeTestSupport.hex(okm) == vector.okm)
    }

    /// Every length from 1 to 8,160 bytes (255 blocks) is a prefix of the longest output: the partial last block is
    /// the start of the block it cuts.
    @Test func hkdfOutputsOfEveryLengthArePrefixesOfTheLongest() {
        let ikm = [UInt8](repeating: 7, count: 32), salt = [UInt8](repeating: 9, count: 16), info = Array("age".utf8)
        func derive(_ count: Int) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: count)
            ikm.withUnsafeBytes { ikm in
                salt.withUnsafeBytes { salt in
                    info.withUnsafeBytes { info in
                        out.withUnsafeMutableBytes { Sodium.hkdfSHA256(inputKeyingMaterial: ikm, salt: salt, info: info, into: $0) }
                    }
                }
            }
            return out
        }
        let longest = derive(Sodium.hkdfSHA256MaximumOutputByteCount)
        for count in [1, 31, 32, 33, 63, 64, 65, 100, 4096, 8159] {
            #expect(derive(count) == Array(longest[..<count]), "\(count) bytes")
        }
        #expect(Set(stride(from: 0, to: longest.count, by: 32).map { Array(longest[$0..<$0 + 32]) }).count == 255, "255 distinct blocks")
    }

    @Test func chaCha20Poly1305MatchesRFC8439() throws {
        let key = [UInt8](0x80...0x9f), nonce = Self.hex("070000004041424344454647"), aad = Self.hex("50515253c0c1c2c3c4c5c6c7")
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let expected = "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116"
            + "1ae10b594f09e26a7e902ecbd0600691"
        var sealed = [UInt8](repeating: 0, count: plaintext.count + Sodium.chaCha20Poly1305TagByteCount)
        try plaintext.withUnsafeBytes { p in
            try aad.withUnsafeBytes { a in
                try nonce.withUnsafeBytes { n in
                    try key.withUnsafeBytes { k in
                        try sealed.withUnsafeMutableBytes { try Sodium.chaCha20Poly1305Seal(p, additionalData: a, nonce: n, key: k, into: $0) }
                    }
                }
            }
        }
        #expect(AgeTestSupport.hex(sealed) == expected)

        func open(_ sealed: [UInt8], aad: [UInt8]) -> [UInt8]? {
            var out = [UInt8](repeating: 0xAA, count: sealed.count - Sodium.chaCha20Poly1305TagByteCount)
            let ok = sealed.withUnsafeBytes { s in
                aad.withUnsafeBytes { a in
                    nonce.withUnsafeBytes { n in
                        key.withUnsafeBytes { k in out.withUnsafeMutableBytes { Sodium.chaCha20Poly1305Open(s, additionalData: a, nonce: n, key: k, into: $0) } }
                    }
                }
            }
            if !ok { #expect(out.allSatisfy { $0 == 0 }, "the output is zeroed on failure") }
            return ok ? out : nil
        }
        #expect(open(sealed, aad: aad) == plaintext)
        var tampered = sealed
        tampered[10] ^= 1
        #expect(open(tampered, aad: aad) == nil)
        #expect(open(sealed, aad: []) == nil, "the additional data is authenticated")
    }

    @Test func x25519MatchesRFC7748() throws {
        let alice = Self.hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
        let bob = Self.hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
        func publicKey(_ scalar: [UInt8]) throws -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 32)
            try scalar.withUnsafeBytes { s in try out.withUnsafeMutableBytes { try Sodium.x25519PublicKey(scalar: s, into: $0) } }
            return out
        }
        func shared(_ scalar: [UInt8], _ point: [UInt8]) throws -> [UInt8] {
            var out = [UInt8](repeating: 0xAA, count: 32)
            try scalar.withUnsafeBytes { s in
                try point.withUnsafeBytes { p in try out.withUnsafeMutableBytes { try Sodium.x25519(scalar: s, point: p, into: $0) } }
            }
            return out
        }
        #expect(AgeTestSupport.hex(try publicKey(alice)) == "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        #expect(AgeTestSupport.hex(try publicKey(bob)) == "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let expected = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
        #expect(AgeTestSupport.hex(try shared(alice, publicKey(bob))) == expected)
        #expect(AgeTestSupport.hex(try shared(bob, publicKey(alice))) == expected)

        // Points of small order give an all-zero secret, which is refused: the identity (0), 1, and the order-8
        // point of CCTV's x25519_low_order vector.
        for point in [[UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31),
                      Self.hex("5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f11d7")] {
            let failure = #expect(throws: SodiumFailure.self) { try shared(alice, point) }
            #expect(failure?.function == "crypto_scalarmult_curve25519")
        }
    }
}

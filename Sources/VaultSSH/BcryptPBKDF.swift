import Crypto

/// OpenSSH's bcrypt_pbkdf (openbsd-compat/bcrypt_pbkdf.c): PBKDF2's structure with bcrypt's expensive Blowfish
/// key schedule as the hash, and the output bytes spread over the blocks (each block gives every `stride`-th byte),
/// so that all rounds must be computed for any byte. What derives an `openssh-key-v1` file's aes256-ctr key and IV.
public enum BcryptPBKDF {
    /// The most rounds accepted from a key file (ssh-keygen's default is 16, `-a` sets more): past it a hostile
    /// file could keep the importer busy for hours.
    public static let maxRounds: UInt32 = 1 << 14

    private static let magic = Array("OxychromaticBlowfishSwatDynamite".utf8)

    /// bcrypt's hash of two SHA-512 digests: 32 bytes.
    static func hash(sha2Pass: [UInt8], sha2Salt: [UInt8]) -> [UInt8] {
        var state = Blowfish()
        defer { state.wipe() }
        sha2Pass.withUnsafeBytes { pass in
            sha2Salt.withUnsafeBytes { salt in
                state.expand(data: salt, key: pass)
                for _ in 0..<64 {
                    state.expand(key: salt)
                    state.expand(key: pass)
                }
            }
        }
        var words = (0..<8).map { index in
            magic[index * 4..<index * 4 + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        for _ in 0..<64 {
            for block in stride(from: 0, to: 8, by: 2) {
                var left = words[block], right = words[block + 1]
                state.encipher(&left, &right)
                words[block] = left
                words[block + 1] = right
            }
        }
        return words.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8 & 0xFF), UInt8($0 >> 16 & 0xFF), UInt8($0 >> 24)] }
    }

    /// `keyLength` bytes derived from `passphrase` and `salt` with `rounds` rounds.
    public static func derive(passphrase: UnsafeRawBufferPointer, salt: [UInt8], rounds: UInt32, keyLength: Int) -> [UInt8] {
        precondition(rounds >= 1 && keyLength > 0 && keyLength <= 32 * 32)
        let stride = (keyLength + 31) / 32
        let amount = (keyLength + stride - 1) / stride
        // The passphrase's digest and each block's output are zeroed when done (the caller zeroes the key).
        var sha2Pass = Array(SHA512.hash(data: passphrase))
        defer { wipe(&sha2Pass) }
        var key = [UInt8](repeating: 0, count: keyLength)
        var count: UInt32 = 1
        var left = keyLength
        while left > 0 {
            let countSalt = salt + [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
            var temporary = hash(sha2Pass: sha2Pass, sha2Salt: Array(SHA512.hash(data: countSalt)))
            var out = temporary
            defer { wipe(&out); wipe(&temporary) }
            for _ in 1..<rounds {
                let next = hash(sha2Pass: sha2Pass, sha2Salt: Array(SHA512.hash(data: temporary)))
                wipe(&temporary)
                temporary = next
                for index in out.indices { out[index] ^= temporary[index] }
            }
            var written = 0
            for index in 0..<Swift.min(amount, left) {
                let destination = index * stride + Int(count - 1)
                if destination >= keyLength { break }
                key[destination] = out[index]
                written += 1
            }
            left -= written
            count += 1
        }
        return key
    }
}

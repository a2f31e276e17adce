internal import CSecretService
import Crypto
import _CryptoExtras
import FoundationEssentials
import VaultCore

/// A session of the Secret Service (`OpenSession`): how secrets travel between the provider and one client.
///
/// `plain`: as they are (offered only on a bus of this user's own: ``DBusConnection/isThisUsersOwnBus``).
/// `dh-ietf1024-sha256-aes128-cbc-pkcs7` (libsecret's default), exactly as libsecret does it (egg-dh, secret-session.c):
/// the group of RFC 2409 §6.2 (the 1024-bit MODP prime, generator 2); public values as unsigned big-endian integers
/// (sent without padding); the shared secret padded with zeros to the prime's 128 bytes; HKDF-SHA-256 with no salt and
/// no info giving 16 bytes; AES-128-CBC with PKCS#7 padding, a fresh 16-byte IV per secret sent as its `parameters`.
struct SecretSession {
    static let dhAlgorithm = "dh-ietf1024-sha256-aes128-cbc-pkcs7"

    enum Kind {
        case plain
        case aes(SymmetricKey)
    }

    let path: String
    /// The unique bus name of the client that opened it: only that client may use it.
    let owner: String
    let kind: Kind

    /// RFC 2409 §6.2, the second Oakley group: 2^1024 - 2^960 - 1 + 2^64 * (floor(2^894 pi) + 129093).
    static let prime: [UInt8] = hex(
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
            + "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
            + "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF")
    static let generator: [UInt8] = [2]

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// base^exponent mod the prime, as 128 big-endian bytes (GMP's constant-time powm).
    static func power(_ base: [UInt8], _ exponent: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: prime.count)
        let status = base.withUnsafeBufferPointer { b in
            prime.withUnsafeBufferPointer { p in
                vault_dh_powm(b.baseAddress, b.count, exponent.bindMemory(to: UInt8.self).baseAddress, exponent.count,
                              p.baseAddress, p.count, &out)
            }
        }
        precondition(status == 0, "the DH prime is odd and the private exponent is not zero")
        return out
    }

    /// The provider's half of the exchange for the client's public value `peer`: the session key and the provider's
    /// public value (unpadded, as libsecret sends its own).
    ///
    /// - Throws: ``SecretServiceError/invalidArguments(_:)`` for a value that is empty, longer than the prime, or
    ///   outside 2 … p-2 (0, 1 and p-1 would make the secret guessable).
    static func agree(peer: [UInt8]) throws(SecretServiceError) -> (key: SymmetricKey, publicValue: [UInt8]) {
        guard !peer.isEmpty, peer.count <= prime.count,
              vault_dh_public_is_valid(peer, peer.count, prime, prime.count) == 1 else {
            throw .invalidArguments("the client's Diffie-Hellman public value is malformed")
        }
        // A private exponent below 2^1023 and not zero (libsecret's own is drawn the same way), in guarded memory.
        let random = SecureBytes.random(count: prime.count)
        let exponent = SecureBytes(count: prime.count) { out in
            random.withUnsafeBytes { out.copyMemory(from: $0) }
            out[0] &= 0x7F
            if out.allSatisfy({ $0 == 0 }) { out[out.count - 1] = 1 }
        }
        var ours: [UInt8] = [], shared: [UInt8] = []
        exponent.withUnsafeBytes { bytes in
            ours = power(generator, bytes)
            shared = power(peer, bytes)
        }
        defer { for index in shared.indices { shared[index] = 0 } }
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: shared), salt: [UInt8](), info: [UInt8](), outputByteCount: 16)
        let first = ours.firstIndex(where: { $0 != 0 }) ?? ours.count - 1
        return (key, Array(ours[first...]))
    }

    /// `secret` as it is sent in this session: its `parameters` (the IV, or nothing for `plain`) and `value`.
    func encode(_ secret: SecureBytes) throws(SecretServiceError) -> (parameters: [UInt8], value: [UInt8]) {
        switch kind {
        case .plain:
            return ([], secret.withUnsafeBytes { Array($0) })
        case .aes(let key):
            let iv = AES._CBC.IV()
            do {
                let sealed = try secret.withUnsafeBytes { try AES._CBC.encrypt($0, using: key, iv: iv) }
                return (Array(iv), Array(sealed))
            } catch {
                throw .failed("cannot encrypt the secret")
            }
        }
    }

    /// The secret a client sent in this session (`parameters`, `value`), in guarded memory.
    ///
    /// - Throws: ``SecretServiceError/invalidArguments(_:)`` for an IV that is not 16 bytes or a value that does not
    ///   decrypt (a wrong key, a bad padding).
    func decode(parameters: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(SecretServiceError) -> SecureBytes {
        switch kind {
        case .plain:
            guard parameters.isEmpty else { throw .invalidArguments("a plain session's secret has no parameters") }
            return SecureBytes(count: value.count) { $0.copyMemory(from: value) }
        case .aes(let key):
            guard parameters.count == 16, !value.isEmpty, value.count % 16 == 0 else {
                throw .invalidArguments("the secret is not AES-128-CBC with a 16-byte IV")
            }
            var opened: Data
            do {
                opened = try AES._CBC.decrypt(value, using: key, iv: try AES._CBC.IV(ivBytes: parameters))
            } catch {
                throw .invalidArguments("the secret does not decrypt with this session's key")
            }
            defer { opened.resetBytes(in: opened.startIndex..<opened.endIndex) }
            return opened.withUnsafeBytes { plain in SecureBytes(count: plain.count) { $0.copyMemory(from: plain) } }
        }
    }
}

import VaultSodium

/// The key a passphrase wraps a data key under (format 1's header, a format-2 `argon2id` stanza): Argon2id of the
/// passphrase with a salt and parameters, in guarded memory, and the secretbox that wraps and unwraps with it.
///
/// A store opened with a passphrase keeps it while open (``DocumentStore``) so that a key change that keeps the
/// passphrase (a recipient's removal through the agent) wraps the new data key for it without asking for the
/// passphrase again: under the same salt and parameters, with a fresh nonce. It opens what the passphrase opens
/// under that salt and no more; it is zeroed when the store is closed.
struct PassphraseKey: Sendable {
    let parameters: Argon2id.Parameters
    let salt: [UInt8]
    let key: SecureBytes

    /// Runs the KDF: the key of `passphrase` under `salt` and `parameters`.
    static func derive(from passphrase: SecureBytes, salt: [UInt8], parameters: Argon2id.Parameters) throws -> PassphraseKey {
        PassphraseKey(parameters: parameters, salt: salt, key: try Argon2id.deriveKey(from: passphrase, salt: salt, parameters: parameters))
    }

    /// The key of `passphrase` under a fresh salt.
    static func fresh(from passphrase: SecureBytes, parameters: Argon2id.Parameters) throws -> PassphraseKey {
        try derive(from: passphrase, salt: Sodium.randomBytes(count: Argon2id.saltByteCount), parameters: parameters)
    }

    /// `dataKey` wrapped under this key with a fresh nonce: the nonce and the box.
    func wrap(_ dataKey: SecureBytes) throws -> (nonce: [UInt8], wrapped: [UInt8]) {
        let nonce = Sodium.randomBytes(count: VaultFormat.nonceByteCount)
        var wrapped = [UInt8](repeating: 0, count: VaultFormat.wrappedKeyByteCount)
        try wrapped.withUnsafeMutableBytes { (out) throws in
            try dataKey.withUnsafeBytes { (plain) throws in
                try key.withUnsafeBytes { (kek) throws in
                    try nonce.withUnsafeBytes { (nonce) throws in try sodium { try Sodium.secretBoxSeal(plain, nonce: nonce, key: kek, into: out) } }
                }
            }
        }
        return (nonce, wrapped)
    }

    /// The data key `wrapped` (under `nonce`) holds, `nil` when it does not open under this key.
    func unwrap(_ wrapped: [UInt8], nonce: [UInt8]) -> SecureBytes? {
        try? SecureBytes(count: VaultFormat.dataKeyByteCount) { (out) throws in
            let opened = wrapped.withUnsafeBytes { box in
                key.withUnsafeBytes { kek in nonce.withUnsafeBytes { Sodium.secretBoxOpen(box, nonce: $0, key: kek, into: out) } }
            }
            guard opened else { throw VaultError.wrongPassphrase(path: "") }
        }
    }
}

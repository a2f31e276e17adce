/// Every failure of VaultSSH: a key file or blob that does not parse, a passphrase that does not open it, a key
/// type this library does not take, a signature or bind that does not verify.
///
/// No case carries a secret or bytes of the input: a field is named by what it should have been.
public enum SSHError: Error, Equatable, Sendable {
    /// The bytes end before `field` does, or a length runs past the end.
    case truncated(field: String)
    /// `field` is there but malformed; `reason` says how (in this library's words).
    case malformed(field: String, reason: String)
    /// A key type (`ssh-dss`, `sk-ssh-ed25519@openssh.com`, …) this library does not take.
    case unsupportedKeyType(String)
    /// An `openssh-key-v1` cipher or KDF other than none / aes256-ctr with bcrypt.
    case unsupportedCipher(String)
    /// The file is neither `openssh-key-v1` nor a PEM private key this library reads.
    case notAPrivateKey
    /// The key file is encrypted and no passphrase was given.
    case passphraseRequired
    /// The passphrase given does not open the key file (its check words differ).
    case wrongPassphrase
    /// The file holds several keys; `vault ssh import` takes one.
    case severalKeys(Int)
    /// The private key does not match the public key stored beside it.
    case keyMismatch
    /// A signature does not verify.
    case badSignature
    /// Swift-crypto refused the key or the operation.
    case crypto(String)
}

extension SSHError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .truncated(let field): return "the data ends inside \(field)"
        case .malformed(let field, let reason): return "malformed \(field): \(reason)"
        case .unsupportedKeyType(let type): return "unsupported key type '\(type.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? String($0) : "?" }.joined().prefix(64))'"
        case .unsupportedCipher(let name): return "unsupported cipher or KDF '\(name.prefix(64))' (vault reads none, and aes256-ctr with bcrypt)"
        case .notAPrivateKey: return "not an OpenSSH or PEM private key"
        case .passphraseRequired: return "the key is encrypted and needs its passphrase"
        case .wrongPassphrase: return "wrong passphrase for the key"
        case .severalKeys(let count): return "the file holds \(count) keys; one at a time"
        case .keyMismatch: return "the private key does not match its public key"
        case .badSignature: return "the signature does not verify"
        case .crypto(let reason): return "the key was refused: \(reason)"
        }
    }
}

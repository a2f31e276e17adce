@_exported import OTPAuth
import Crypto
import VaultCore

// The code of a ``TOTP``: HMAC from swift-crypto (BoringSSL), in this target of its own so that the verbs that only
// parse or store an `otpauth://` URI do not link it.
extension TOTP {
    /// The code at `time` (seconds since the Unix epoch), as ASCII in guarded memory: 6–8 digits, or Steam's
    /// five characters.
    ///
    /// - Throws: ``OTPError/timeOutOfRange(_:)``.
    public func code(at time: Int64) throws(OTPError) -> SecureBytes {
        let counter = try counter(at: time)
        var message = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { message[index] = UInt8(truncatingIfNeeded: counter >> UInt64(56 - 8 * index)) }
        let truncated = secret.withUnsafeBytes { key in
            let key = SymmetricKey(data: key)
            switch algorithm {
            case .sha1: return Self.truncate(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: key))
            case .sha256: return Self.truncate(HMAC<SHA256>.authenticationCode(for: message, using: key))
            case .sha512: return Self.truncate(HMAC<SHA512>.authenticationCode(for: message, using: key))
            }
        }
        switch encoding {
        case let .decimal(digits):
            var value = truncated % Self.powersOfTen[digits]
            return SecureBytes(count: digits) { output in
                for index in stride(from: digits - 1, through: 0, by: -1) {
                    output[index] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
        case .steam:
            var value = truncated
            return SecureBytes(count: 5) { output in
                for index in 0..<5 {
                    output[index] = Self.steamAlphabet[Int(value % UInt32(Self.steamAlphabet.count))]
                    value /= UInt32(Self.steamAlphabet.count)
                }
            }
        }
    }

    /// RFC 4226 §5.3's dynamic truncation: 31 bits from the offset the last nibble names.
    private static func truncate<MAC: MessageAuthenticationCode>(_ mac: MAC) -> UInt32 {
        mac.withUnsafeBytes { bytes in
            let offset = Int(bytes[bytes.count - 1] & 0x0F)
            return (UInt32(bytes[offset] & 0x7F) << 24) | (UInt32(bytes[offset + 1]) << 16)
                | (UInt32(bytes[offset + 2]) << 8) | UInt32(bytes[offset + 3])
        }
    }

    private static let powersOfTen: [UInt32] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]
    private static let steamAlphabet = Array("23456789BCDFGHJKMNPQRTVWXY".utf8)
}

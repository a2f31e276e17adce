import VaultCore

/// Time-based one-time passwords (RFC 6238) from an `otpauth://` URI, the form authenticator apps, KeePassXC,
/// Bitwarden and pass-otp keep them in (google-authenticator's "Key Uri Format").
///
/// ```swift
/// let totp = try TOTP(uri: entryField)              // otpauth://totp/Example:alice?secret=JBSWY3DPEHPK3PXP
/// let code = try totp.code(at: Int64(Date().timeIntervalSince1970))
/// ```
///
/// The secret is kept in guarded memory (``SecureBytes``). This target parses and checks (`vault put --field otp`
/// uses it without linking any HMAC); the code itself, ``code(at:)``, is in VaultOTP: HMAC-SHA-1, which nearly
/// every issuer uses, is not in libsodium and comes from swift-crypto (BoringSSL), which only the verbs that compute
/// a code link.
public struct TOTP: Sendable {
    /// The HMAC hash of the code.
    public enum Algorithm: String, Sendable, CaseIterable {
        case sha1 = "SHA1", sha256 = "SHA256", sha512 = "SHA512"
    }

    /// How the truncated HMAC becomes the code shown.
    public enum Encoding: Equatable, Sendable {
        /// `digits` decimal digits, zero-padded (RFC 4226 §5.3).
        case decimal(digits: Int)
        /// Steam Guard's five characters from `23456789BCDFGHJKMNPQRTVWXY` (`encoder=steam`, or `otpauth://steam/`).
        case steam
    }

    /// The shared secret (the decoded base32 of the URI's `secret`).
    public let secret: SecureBytes
    public let algorithm: Algorithm
    public let encoding: Encoding
    /// Seconds a code is valid (the time step X of RFC 6238), 30 unless the URI says otherwise.
    public let period: Int64
    /// The URI's issuer (its `issuer` parameter, else the label's part before `:`), if any: not secret.
    public let issuer: String?
    /// The URI's account name (the label after `issuer:`), if any: not secret.
    public let account: String?

    /// A generator from a decoded secret and explicit parameters.
    ///
    /// - Precondition: `secret` is not empty, `period` is 1...3600, decimal digits are 6...8.
    public init(
        secret: SecureBytes, algorithm: Algorithm = .sha1, encoding: Encoding = .decimal(digits: 6), period: Int64 = 30,
        issuer: String? = nil, account: String? = nil
    ) {
        precondition(secret.count > 0 && (1...3600).contains(period))
        if case let .decimal(digits) = encoding { precondition((6...8).contains(digits)) }
        self.secret = secret
        self.algorithm = algorithm
        self.encoding = encoding
        self.period = period
        self.issuer = issuer
        self.account = account
    }

    /// Parses an `otpauth://totp/LABEL?secret=…&issuer=…&algorithm=…&digits=…&period=…` URI (also
    /// `encoder=steam` and `otpauth://steam/`), or a bare base32 secret (then SHA-1, 6 digits, 30 s).
    ///
    /// Unknown parameters (`image`, `color`, …) are ignored; a known one given twice, or with a value outside the
    /// supported range, is refused rather than guessed at.
    ///
    /// - Throws: ``OTPError``; never a message that holds the secret.
    public init(uri: SecureBytes) throws(OTPError) {
        self = try uri.withUnsafeBytes { (bytes) throws(OTPError) -> TOTP in try OTPAuthURI.parse(bytes) }
    }

    /// The counter of RFC 6238 at `time` (seconds since the Unix epoch): `time / period`.
    ///
    /// - Throws: ``OTPError/timeOutOfRange(_:)`` for a negative time or one past 2^62.
    public func counter(at time: Int64) throws(OTPError) -> UInt64 {
        guard time >= 0, time <= 1 << 62 else { throw .timeOutOfRange(time) }
        return UInt64(time / period)
    }

    /// Seconds until the code of `time` changes (1...period).
    public func secondsLeft(at time: Int64) -> Int64 {
        period - (time >= 0 ? time % period : 0)
    }
}

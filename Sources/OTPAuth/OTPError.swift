/// Every failure of VaultOTP: what is wrong with an `otpauth://` URI or a base32 secret, or a time out of range.
///
/// No case carries the secret, nor the URI (which holds the secret): only the name of the parameter at fault.
public enum OTPError: Error, Equatable, Sendable {
    /// The text is not an `otpauth://totp/…` (or `otpauth://steam/…`) URI, nor a bare base32 secret.
    case notAnOTPURI
    /// An `otpauth://hotp/…` URI: counter-based codes need a counter written back on every use; only time-based
    /// codes are supported.
    case counterBasedNotSupported
    /// The URI has no `secret` parameter, or an empty one.
    case missingSecret
    /// The secret is not base32 (RFC 4648: `A`–`Z`, `2`–`7`, any case, optional `=` padding, spaces ignored).
    case invalidBase32
    /// A parameter has a value outside what is supported (`algorithm` SHA1/SHA256/SHA512, `digits` 6–8, `period`
    /// 1–3600 seconds, `encoder` steam); `name` is the parameter, `reason` says what is allowed.
    case unsupportedParameter(name: String, reason: String)
    /// A parameter appears twice (which one counts would be a guess).
    case repeatedParameter(String)
    /// A time before the Unix epoch, or too far ahead for a 64-bit counter.
    case timeOutOfRange(Int64)
}

extension OTPError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .notAnOTPURI:
            return "not an otpauth://totp/ URI nor a base32 secret"
        case .counterBasedNotSupported:
            return "otpauth://hotp/ (counter-based) codes are not supported; only time-based (totp) ones are"
        case .missingSecret:
            return "the otpauth URI has no secret"
        case .invalidBase32:
            return "the secret is not base32 (A-Z and 2-7, optional '=' padding)"
        case let .unsupportedParameter(name, reason):
            return "unsupported \(name) in the otpauth URI: \(reason)"
        case let .repeatedParameter(name):
            return "the otpauth URI gives \(name) twice"
        case let .timeOutOfRange(time):
            return "time \(time) is out of range (0 to 2^62 seconds since the Unix epoch)"
        }
    }
}

import FoundationEssentials
import VaultCore

/// A username and password for HTTP Basic authentication.
///
/// The password lives in ``SecureBytes`` (guarded memory, wiped when freed) and is never printed:
/// `description` shows the username only.
public struct Credential: Sendable, CustomStringConvertible {
    /// The user id. It may appear in messages; it must not contain `:` or control characters (RFC 7617).
    public let username: String
    /// The password, as UTF-8 bytes.
    public let password: SecureBytes

    public init(username: String, password: SecureBytes) {
        self.username = username
        self.password = password
    }

    /// Copies `password` into guarded memory. Swift strings cannot be wiped: prefer ``init(username:password:)``.
    public init(username: String, password: String) {
        self.init(username: username, password: SecureBytes(string: password))
    }

    public var description: String { "Credential(username: \"\(username)\", password: redacted)" }

    /// Checks the username against RFC 7617: no `:`, no control characters, not empty.
    ///
    /// - Throws: ``AuthenticationError/invalidUsername(_:)``.
    public func validate() throws(AuthenticationError) {
        try Self.validate(username: username)
    }

    /// Checks `username` against RFC 7617 before any credential is made (e.g. a command line's `--username`).
    ///
    /// - Throws: ``AuthenticationError/invalidUsername(_:)``, which does not repeat the username.
    public static func validate(username: String) throws(AuthenticationError) {
        if username.isEmpty { throw .invalidUsername(.empty) }
        if username.unicodeScalars.contains(":") { throw .invalidUsername(.containsColon) }
        if username.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw .invalidUsername(.containsControlCharacter)
        }
    }

    /// The value of an `Authorization` header for this credential: `Basic base64(username ":" password)`,
    /// both in UTF-8 (RFC 7617 with `charset="UTF-8"`).
    ///
    /// Header values are `String`s (``HTTPHeaderFields``), so this value is an ordinary (unwiped) copy of the
    /// encoded password: build it just before sending and let it go right after.
    public func authorizationHeaderValue() -> String {
        let user = Array(username.utf8)
        let total = user.count + 1 + password.count
        // The plaintext "user:password" is assembled in guarded memory.
        let plain = SecureBytes(capacity: total) { out in
            user.withUnsafeBytes { out.append($0) }
            out.append(UInt8(ascii: ":"))
            out.append(password)
        }
        return "Basic " + plain.withUnsafeBytes { Base64.encode($0) }
    }
}

enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let b0 = UInt32(bytes[i])
            let b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
            let b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
            let n = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(i + 1 < bytes.count ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(n & 63)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Stores, looks up and deletes the credential of a protection space (the SAP SDK's `BasicCredentialStoring`).
///
/// Implementations: ``VaultCredentialStore`` (the encrypted vault); `InMemoryCredentialStore` of the
/// `VaultAuthTesting` library (tests).
public protocol CredentialStoring: Sendable {
    /// The credential stored for `space`, or `nil` when there is none.
    func credential(for space: ProtectionSpace) throws -> Credential?
    /// Stores `credential` for `space`, replacing any earlier one, in one atomic write.
    func store(_ credential: Credential, for space: ProtectionSpace) throws
    /// Deletes the credential of `space`; no error when there is none.
    func removeCredential(for space: ProtectionSpace) throws
    /// The spaces that have a credential, sorted by ``ProtectionSpace/key`` (e.g. to log out of every realm of
    /// an origin).
    func storedSpaces() throws -> [ProtectionSpace]
}

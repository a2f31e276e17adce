import VaultCore
import VaultSodium

/// An age X25519 identity: the private key that unwraps stanzas addressed to its ``recipient``, written
/// `AGE-SECRET-KEY-1…` (Bech32, human-readable part `AGE-SECRET-KEY-`, upper case), as `age-keygen` writes it.
///
/// The private scalar lives in ``SecureBytes`` only; the encoded form too (``encoded()``). `description` shows the
/// recipient, never the key.
///
/// C2SP `age.md`, "The X25519 recipient type": `identity = read(CSPRNG, 32)`.
public struct AgeIdentity: Sendable, CustomStringConvertible {
    /// The Bech32 human-readable part of an identity.
    public static let humanReadablePart = "AGE-SECRET-KEY-"
    /// How every X25519 identity starts.
    public static let prefix = "AGE-SECRET-KEY-1"
    /// How age's post-quantum hybrid identities start (VaultAgePQ's `AgeHybridIdentity`, not this type).
    public static let hybridPrefix = "AGE-SECRET-KEY-PQ-1"
    /// The size of the private scalar.
    public static let secretKeyByteCount = 32

    /// The private scalar (32 bytes, used as X25519 clamps it).
    let secretKey: SecureBytes
    /// The public key that goes with it.
    public let recipient: AgeRecipient

    /// An identity from its raw private scalar.
    ///
    /// - Throws: ``AgeError/wrongKeyLength(expected:actual:)`` unless `secretKey` is 32 bytes.
    public init(secretKey: SecureBytes) throws(AgeError) {
        guard secretKey.count == Self.secretKeyByteCount else {
            throw .wrongKeyLength(expected: Self.secretKeyByteCount, actual: secretKey.count)
        }
        self.secretKey = secretKey
        self.recipient = try secretKey.withUnsafeBytes { (scalar) throws(AgeError) in try AgeRecipient(secretKey: scalar) }
    }

    /// A new identity: 32 bytes from the kernel's CSPRNG, as `age-keygen` makes one.
    public static func generate() -> AgeIdentity {
        do {
            return try AgeIdentity(secretKey: .random(count: secretKeyByteCount))
        } catch {
            // The length is right, and X25519 with the base point does not fail for a 32-byte scalar.
            fatalError("a generated X25519 identity was refused: \(error)")
        }
    }

    /// Parses one `AGE-SECRET-KEY-1…` held as bytes (from a file read into guarded memory), as age's
    /// `ParseX25519Identity` does: the human-readable part `AGE-SECRET-KEY-` exactly (so a lower-case identity is
    /// refused, as age refuses it) and 32 bytes of data. Nothing else may be on the line, spaces included.
    ///
    /// - Throws: ``AgeError/unsupportedKeyType(prefix:)`` for a post-quantum `AGE-SECRET-KEY-PQ-1…` identity,
    ///   ``AgeError/wrongKeyType(expected:)`` for anything else that does not start with `AGE-SECRET-KEY-1`,
    ///   ``AgeError/invalidBech32(_:)``, ``AgeError/wrongKeyLength(expected:actual:)``.
    public init(parsing text: UnsafeRawBufferPointer) throws(AgeError) {
        if text.starts(with: Self.hybridPrefix.utf8) { throw .unsupportedKeyType(prefix: Self.hybridPrefix) }
        guard text.starts(with: Self.prefix.utf8) else { throw .wrongKeyType(expected: Self.prefix) }
        let (humanReadablePart, data) = try Bech32.decode(text)
        guard humanReadablePart == Self.humanReadablePart else { throw .wrongKeyType(expected: Self.prefix) }
        try self.init(secretKey: data)
    }

    /// Parses one `AGE-SECRET-KEY-1…` held in guarded memory; see ``init(parsing:)-(UnsafeRawBufferPointer)``.
    public init(parsing text: SecureBytes) throws(AgeError) {
        self = try text.withUnsafeBytes { (bytes) throws(AgeError) in try AgeIdentity(parsing: bytes) }
    }

    /// Parses one `AGE-SECRET-KEY-1…` given as a `String`; see ``init(parsing:)-(UnsafeRawBufferPointer)``.
    ///
    /// A Swift string cannot be wiped: prefer reading identities as bytes into ``SecureBytes``. The key's bytes
    /// are decoded straight into guarded memory all the same.
    public init(parsing string: String) throws(AgeError) {
        self = try AgeIdentity(parsing: SecureBytes(string: string))
    }

    /// The `AGE-SECRET-KEY-1…` encoding (upper case, as age writes it) in guarded memory.
    public func encoded() -> SecureBytes {
        let count = Bech32.encodedByteCount(
            humanReadablePartByteCount: Self.humanReadablePart.utf8.count, dataByteCount: Self.secretKeyByteCount)
        return SecureBytes(count: count) { output in
            secretKey.withUnsafeBytes { Bech32.encode(humanReadablePart: Self.humanReadablePart, data: $0, into: output) }
        }
    }

    /// `AgeIdentity(age1…)`: the recipient; the key is never shown.
    public var description: String { "AgeIdentity(\(recipient), secret key redacted)" }

    // MARK: Identity files

    /// Parses an age identity file, as age's `ParseIdentities` does: one identity a line; lines that are empty or
    /// start with `#` are skipped (`age-keygen` writes `# created: …` and `# public key: age1…` above the key); a
    /// line may end in CR LF or LF, the last one in nothing.
    ///
    /// - Throws: ``AgeError/invalidIdentityLine(line:reason:)`` for the first line that is not an identity, with
    ///   its number (from 1) and why, never its content; ``AgeError/noIdentities`` when no line is an identity.
    public static func parseIdentityFile(_ contents: UnsafeRawBufferPointer) throws(AgeError) -> [AgeIdentity] {
        try parseIdentityLines(contents) { (line) throws(AgeError) in try AgeIdentity(parsing: line) }
    }

    /// The lines of an age identity file, each read by `parse`, with the rules of ``parseIdentityFile(_:)-(UnsafeRawBufferPointer)``:
    /// for identity types defined above this library (VaultAgePQ's hybrid identities) and files that mix them.
    ///
    /// - Throws: ``AgeError/invalidIdentityLine(line:reason:)`` with what `parse` threw for the first line it
    ///   refuses; ``AgeError/noIdentities``.
    public static func parseIdentityLines<T>(
        _ contents: UnsafeRawBufferPointer, _ parse: (UnsafeRawBufferPointer) throws(AgeError) -> T
    ) throws(AgeError) -> [T] {
        var identities: [T] = []
        var lineNumber = 0
        var start = 0
        while start < contents.count {
            lineNumber += 1
            let newline = contents[start...].firstIndex(of: UInt8(ascii: "\n"))
            var end = newline ?? contents.count
            if end > start && contents[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            let line = UnsafeRawBufferPointer(rebasing: contents[start..<end])
            start = (newline ?? contents.count) + 1
            if line.isEmpty || line.first == UInt8(ascii: "#") { continue }
            do throws(AgeError) {
                identities.append(try parse(line))
            } catch {
                throw .invalidIdentityLine(line: lineNumber, reason: error)
            }
        }
        guard !identities.isEmpty else { throw .noIdentities }
        return identities
    }

    /// Parses an age identity file held in guarded memory; see ``parseIdentityFile(_:)-(UnsafeRawBufferPointer)``.
    public static func parseIdentityFile(_ contents: SecureBytes) throws(AgeError) -> [AgeIdentity] {
        try contents.withUnsafeBytes { (bytes) throws(AgeError) in try parseIdentityFile(bytes) }
    }
}

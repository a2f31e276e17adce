import VaultAge
import VaultCore

/// An age recipient of either native public-key type: X25519 (`age1…`) or the post-quantum hybrid (`age1pq1…`).
public enum AnyAgeRecipient: Hashable, Sendable, CustomStringConvertible {
    case x25519(AgeRecipient)
    case hybrid(AgeHybridRecipient)

    /// Parses `age1pq1…` as a hybrid recipient and any other `age1…` as an X25519 one.
    ///
    /// - Throws: what ``AgeHybridRecipient/init(parsing:)`` or ``VaultAge/AgeRecipient/init(parsing:)`` throws.
    public init(parsing string: String) throws(AgeError) {
        if string.hasPrefix(AgeHybridRecipient.prefix) {
            self = .hybrid(try AgeHybridRecipient(parsing: string))
        } else {
            self = .x25519(try AgeRecipient(parsing: string))
        }
    }

    /// Whether it is post-quantum (age's rule: never in one file with classic recipients).
    public var isPostQuantum: Bool {
        if case .hybrid = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .x25519(let recipient): return recipient.description
        case .hybrid(let recipient): return recipient.description
        }
    }
}

/// Reading identities of either type.
public enum AgeIdentities {
    /// Parses one identity line: `AGE-SECRET-KEY-PQ-1…` as a hybrid identity, anything else as X25519.
    ///
    /// - Throws: what ``AgeHybridIdentity/init(parsing:)-(UnsafeRawBufferPointer)`` or
    ///   ``VaultAge/AgeIdentity/init(parsing:)-(UnsafeRawBufferPointer)`` throws.
    public static func parse(_ line: UnsafeRawBufferPointer) throws(AgeError) -> any AgeStanzaIdentity {
        if line.starts(with: AgeHybridIdentity.prefix.utf8) { return try AgeHybridIdentity(parsing: line) }
        return try AgeIdentity(parsing: line)
    }

    /// Parses an age identity file whose lines may hold identities of both types, with age's rules (comments,
    /// blank lines, CR LF; ``VaultAge/AgeIdentity/parseIdentityLines(_:_:)``).
    public static func parseFile(_ contents: SecureBytes) throws(AgeError) -> [any AgeStanzaIdentity] {
        try contents.withUnsafeBytes { (bytes) throws(AgeError) in try AgeIdentity.parseIdentityLines(bytes, parse) }
    }
}

extension AgeHybridRecipient: AgeStanzaRecipient {
    public var isPostQuantum: Bool { true }

    public func wrapStanza(_ dataKey: SecureBytes) throws(AgeError) -> RecipientStanza {
        try VaultRecipientStanza.wrap(dataKey, for: self)
    }
}

/// The post-quantum keys of this library for ``VaultAge/AgeKeys``: a program that links VaultAgePQ calls
/// ``install()`` once at start (`vault-net`), and from then on every recipient, identity and stanza path of
/// VaultAge, VaultAgent and the CLI takes `age1pq1…` and `AGE-SECRET-KEY-PQ-1…` too.
public struct AgePostQuantum: AgePostQuantumKeys {
    public init() {}

    /// Installs these keys in ``VaultAge/AgeKeys``.
    public static func install() {
        AgeKeys.install(postQuantum: AgePostQuantum())
    }

    public func recipient(parsing string: String) throws(AgeError) -> any AgeStanzaRecipient {
        try AgeHybridRecipient(parsing: string)
    }

    public func identity(parsing line: UnsafeRawBufferPointer) throws(AgeError) -> any AgeStanzaIdentity {
        try AgeHybridIdentity(parsing: line)
    }

    public func generateIdentity() -> any AgeStanzaIdentity { AgeHybridIdentity.generate() }

    public var stanzaType: String { MLKEM768X25519Stanza.stanzaType }
}

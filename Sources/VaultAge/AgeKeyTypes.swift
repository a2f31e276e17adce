import Synchronization
import VaultCore

/// A recipient a vault's key stanza can be made for: an X25519 ``AgeRecipient`` here, a post-quantum one through
/// ``AgePostQuantumKeys``.
public protocol AgeStanzaRecipient: Sendable, CustomStringConvertible {
    /// Whether it is post-quantum (age's rule: never in one vault with classic recipients).
    var isPostQuantum: Bool { get }
    /// `dataKey` wrapped for it: a vault's recipient stanza (docs/FORMAT.md).
    func wrapStanza(_ dataKey: SecureBytes) throws(AgeError) -> RecipientStanza
}

extension AgeRecipient: AgeStanzaRecipient {
    public var isPostQuantum: Bool { false }

    public func wrapStanza(_ dataKey: SecureBytes) throws(AgeError) -> RecipientStanza {
        try VaultRecipientStanza.wrap(dataKey, for: self)
    }
}

extension AgeStanzaIdentity {
    /// Whether it reads post-quantum stanzas (any type but age's `X25519`).
    public var isPostQuantum: Bool { Self.stanzaType != X25519Stanza.stanzaType }
}

/// age's post-quantum hybrid keys (`age1pq1…`, `AGE-SECRET-KEY-PQ-1…`, the `mlkem768x25519` stanza), which this
/// library does not implement: X-Wing is swift-crypto's, and linking it costs every start of a program (its
/// relocations). VaultAgePQ implements this; a program that links it installs it once at start
/// (``AgeKeys/install(postQuantum:)``: `vault-net` does), and one that does not (`vault`) reads no such key:
/// ``AgeKeys`` then refuses them with ``AgeError/unsupportedKeyType(prefix:)``.
public protocol AgePostQuantumKeys: Sendable {
    /// Parses an `age1pq1…` recipient.
    func recipient(parsing string: String) throws(AgeError) -> any AgeStanzaRecipient
    /// Parses one `AGE-SECRET-KEY-PQ-1…` line.
    func identity(parsing line: UnsafeRawBufferPointer) throws(AgeError) -> any AgeStanzaIdentity
    /// A new identity, from the kernel's CSPRNG.
    func generateIdentity() -> any AgeStanzaIdentity
    /// The age stanza type its identities read (`mlkem768x25519`).
    var stanzaType: String { get }
}

/// Recipients and identities of every type this program knows: X25519 always, post-quantum once installed.
public enum AgeKeys {
    private static let postQuantumKeys = Mutex<(any AgePostQuantumKeys)?>(nil)

    /// Makes post-quantum keys known to this program, from now on (VaultAgePQ's, at the start of `vault-net`).
    public static func install(postQuantum keys: any AgePostQuantumKeys) {
        postQuantumKeys.withLock { $0 = keys }
    }

    /// The post-quantum keys installed, if any.
    public static var postQuantum: (any AgePostQuantumKeys)? { postQuantumKeys.withLock { $0 } }

    /// The age stanza types of the identities this program reads (`X25519`, and `mlkem768x25519` once installed).
    public static var identityStanzaTypes: [String] {
        [X25519Stanza.stanzaType] + (postQuantum.map { [$0.stanzaType] } ?? [])
    }

    /// Whether `text` names a post-quantum recipient (its prefix only: nothing is checked).
    public static func isPostQuantum(recipient text: some StringProtocol) -> Bool {
        text.hasPrefix(AgeRecipient.hybridPrefix)
    }

    /// `text` as a recipient of either type: `age1pq1…` post-quantum, any other X25519.
    ///
    /// - Throws: ``AgeError/unsupportedKeyType(prefix:)`` for `age1pq1…` when no post-quantum keys are installed;
    ///   what the type's parser throws.
    public static func recipient(parsing text: String) throws(AgeError) -> any AgeStanzaRecipient {
        guard isPostQuantum(recipient: text) else { return try AgeRecipient(parsing: text) }
        guard let postQuantum else { throw .unsupportedKeyType(prefix: AgeRecipient.hybridPrefix) }
        return try postQuantum.recipient(parsing: text)
    }

    /// One identity line of either type: `AGE-SECRET-KEY-PQ-1…` post-quantum, any other X25519.
    ///
    /// - Throws: ``AgeError/unsupportedKeyType(prefix:)`` for a post-quantum identity when none are installed;
    ///   what the type's parser throws.
    public static func identity(parsing line: UnsafeRawBufferPointer) throws(AgeError) -> any AgeStanzaIdentity {
        guard line.starts(with: AgeIdentity.hybridPrefix.utf8) else { return try AgeIdentity(parsing: line) }
        guard let postQuantum else { throw .unsupportedKeyType(prefix: AgeIdentity.hybridPrefix) }
        return try postQuantum.identity(parsing: line)
    }

    /// An age identity file whose lines may be of either type (age's rules:
    /// ``AgeIdentity/parseIdentityLines(_:_:)``).
    public static func parseIdentityFile(_ contents: SecureBytes) throws(AgeError) -> [any AgeStanzaIdentity] {
        try contents.withUnsafeBytes { (bytes) throws(AgeError) in try AgeIdentity.parseIdentityLines(bytes, identity(parsing:)) }
    }

    /// Whether an identity file holds a post-quantum identity: a line that starts with `AGE-SECRET-KEY-PQ-1`
    /// (nothing is decoded; for deciding which program reads it).
    public static func holdsPostQuantumIdentity(_ contents: UnsafeRawBufferPointer) -> Bool {
        var start = 0
        while start < contents.count {
            let newline = contents[start...].firstIndex(of: UInt8(ascii: "\n")) ?? contents.count
            if UnsafeRawBufferPointer(rebasing: contents[start..<newline]).starts(with: AgeIdentity.hybridPrefix.utf8) { return true }
            start = newline + 1
        }
        return false
    }
}

/// Every failure of VaultAge: a malformed key, identity file, header, stanza or payload, an identity that
/// matches no stanza, a header MAC that does not verify.
///
/// No case carries a secret, nor text from the input: an identity file's line is named by its number, a key by
/// the prefix that was expected (one of this library's constants). The cases map onto the outcomes of C2SP's
/// age test vectors (CCTV `age/`, `expect:`):
///
/// | `expect:` | cases |
/// |---|---|
/// | `no match` | ``noMatch`` |
/// | `HMAC failure` | ``headerMACMismatch`` |
/// | `header failure` | ``malformedHeader(line:reason:)``, ``malformedStanza(_:)`` |
/// | `payload failure` | ``malformedPayload(_:)`` |
public enum AgeError: Error, Equatable, Sendable {
    /// A Bech32 string (a recipient or an identity) is malformed; `reason` says how.
    case invalidBech32(Bech32Failure)
    /// A string that is not a key of the type wanted; `expected` is that type's prefix (``AgeRecipient/prefix``,
    /// ``AgeIdentity/prefix``). The string itself is not repeated: it may be a secret.
    case wrongKeyType(expected: String)
    /// A key of a type age defines that this parser does not take (`prefix` is age's, e.g. `age1pq1`,
    /// `AGE-SECRET-KEY-PQ-1`: the post-quantum hybrid keys, which VaultAgePQ parses).
    case unsupportedKeyType(prefix: String)
    /// A key, or a file key, of the wrong length (`expected` and `actual` in bytes).
    case wrongKeyLength(expected: Int, actual: Int)
    /// A recipient's public key is a point of small order: no shared secret can be agreed with it.
    case invalidRecipientKey
    /// An `age1pq1…` recipient's key is not a well-formed ML-KEM-768 + X25519 (X-Wing) public key (an ML-KEM
    /// coefficient out of range).
    case invalidHybridRecipientKey
    /// Line `line` (from 1) of an identity file is not an identity; `reason` is the error parsing it gave. The
    /// line's content is never part of the error.
    indirect case invalidIdentityLine(line: Int, reason: AgeError)
    /// An identity file holds no identity (only comments and blank lines).
    case noIdentities
    /// The header is not an age v1 header by the spec's grammar; `line` (from 1) is where the parser stopped.
    case malformedHeader(line: Int, reason: HeaderFailure)
    /// An `X25519` or `mlkem768x25519` stanza is malformed (C2SP `age.md`: the identity implementation MUST
    /// reject it).
    case malformedStanza(StanzaFailure)
    /// No stanza of the header could be unwrapped with the identities given (none is addressed to them, or
    /// their ciphertext was altered: the two cannot be told apart).
    case noMatch
    /// A stanza gave the file key, but the header's MAC does not verify under it: the header was altered.
    case headerMACMismatch
    /// The payload is malformed or does not decrypt under the file key; `reason` says where.
    case malformedPayload(PayloadFailure)
    /// libsodium (or, in VaultAgePQ, swift-crypto) reported a failure in `function`.
    case cryptoFailure(function: String)

    /// How a Bech32 string is malformed (BIP 173, without its 90-character limit, as age uses it).
    public enum Bech32Failure: Equatable, Sendable {
        /// Upper- and lower-case letters together.
        case mixedCase
        /// No `1` separating the human-readable part from the data, or nothing before it.
        case missingSeparator
        /// Fewer than the six checksum characters after the separator.
        case tooShort
        /// A character outside the human-readable part's range (`!` to `~`) or the data alphabet.
        case invalidCharacter
        /// The checksum does not match.
        case invalidChecksum
        /// The data's last character holds bits that do not make a byte and are not zero, or a whole unused group.
        case invalidPadding
    }

    /// Where an age header breaks the spec's grammar (`age.md`, "ABNF definition of file header").
    public enum HeaderFailure: Equatable, Sendable {
        /// The first line is not `age-encryption.org/…` (an empty file, or not an age file at all).
        case notAnAgeFile
        /// The first line is `age-encryption.org/` with a version other than `v1`.
        case unsupportedVersion
        /// The input ends before the MAC line's line feed.
        case truncated
        /// A line that starts neither a stanza (`->`) nor the MAC (`---`) where one must start.
        case unexpectedLine
        /// A stanza's first line is not `-> ` followed by arguments of 1 or more of the characters `!` to `~`
        /// separated by single spaces.
        case malformedStanzaLine
        /// A body line is longer than 64 columns or not canonical unpadded base64 (including a stanza that ends
        /// without a line shorter than 64 columns).
        case malformedBodyLine
        /// The last line is not `--- ` followed by the canonical unpadded base64 of 32 bytes.
        case malformedMACLine
        /// A header without a stanza (the grammar asks for at least one).
        case noStanzas
    }

    /// How an `X25519` (or, for the last four cases, an `mlkem768x25519`) stanza is malformed.
    public enum StanzaFailure: Equatable, Sendable {
        /// The stanza's type is not `X25519` (not a malformation in a header: such stanzas are skipped).
        case notX25519
        /// Not exactly one argument after the type.
        case wrongArgumentCount
        /// The share is not canonical unpadded base64.
        case shareNotCanonical
        /// The share does not decode to 32 bytes.
        case wrongShareLength
        /// The body is not 32 bytes (checked before any decryption, against partitioning oracles).
        case wrongBodyLength
        /// The share is a point of small order: the shared secret is all zero, which the spec says to abort on.
        case lowOrderShare
        /// The stanza's type is not `mlkem768x25519` (skipped in a header, like ``notX25519``).
        case notMLKEM768X25519
        /// An `mlkem768x25519` stanza's encapsulated key (`enc`) is not canonical unpadded base64.
        case encapsulationNotCanonical
        /// An `mlkem768x25519` stanza's `enc` does not decode to 1,120 bytes (ML-KEM-768's 1,088 and X25519's 32).
        case wrongEncapsulationLength
        /// X-Wing's decapsulation refused `enc`: its X25519 part is a point of small order (the shared secret is
        /// all zero, which X25519 implementations abort on).
        case decapsulationFailed
    }

    /// How an age payload (STREAM, `age.md` "Payload") is malformed.
    public enum PayloadFailure: Equatable, Sendable {
        /// Shorter than the 16-byte nonce.
        case missingNonce
        /// The payload ends without a final chunk (no chunk at all, or only non-final ones).
        case truncated
        /// A final chunk that is empty although it is not the only chunk.
        case emptyFinalChunk
        /// Chunk `index` (from 0) does not decrypt under the payload key: altered, or another file key.
        case chunkAuthenticationFailed(index: Int)
        /// Bytes after a final chunk.
        case trailingData
    }
}

extension AgeError: CustomStringConvertible {
    /// A one-line message that starts with what failed; it never holds a secret nor a line of an identity file.
    public var description: String {
        switch self {
        case .invalidBech32(let reason):
            return "malformed key: \(reason)"
        case .wrongKeyType(let expected):
            return "not an age key of the expected type (\(expected)…)"
        case .unsupportedKeyType(let prefix):
            return "\(prefix)… keys are not supported (only X25519 keys: age1…, AGE-SECRET-KEY-1…)"
        case .wrongKeyLength(let expected, let actual):
            return "wrong key length: \(actual) bytes instead of \(expected)"
        case .invalidRecipientKey:
            return "invalid recipient: its public key is a point of small order"
        case .invalidHybridRecipientKey:
            return "invalid post-quantum recipient: not a well-formed ML-KEM-768 + X25519 public key"
        case .invalidIdentityLine(let line, let reason):
            return "identity file, line \(line): \(reason)"
        case .noIdentities:
            return "the identity file holds no identity"
        case .malformedHeader(let line, let reason):
            return "malformed age header at line \(line): \(reason)"
        case .malformedStanza(let reason):
            return "malformed \(reason.stanzaType) stanza: \(reason)"
        case .noMatch:
            return "no identity matched any of the recipients"
        case .headerMACMismatch:
            return "the age header's MAC does not verify: the header was altered"
        case .malformedPayload(let reason):
            return "age payload: \(reason)"
        case .cryptoFailure(let function):
            return "the cryptographic library reported a failure in \(function)"
        }
    }
}

extension AgeError.Bech32Failure: CustomStringConvertible {
    public var description: String {
        switch self {
        case .mixedCase: return "upper- and lower-case letters mixed"
        case .missingSeparator: return "no '1' separator after a prefix"
        case .tooShort: return "too short for its checksum"
        case .invalidCharacter: return "a character outside the Bech32 alphabet"
        case .invalidChecksum: return "invalid checksum (a typo?)"
        case .invalidPadding: return "invalid padding bits"
        }
    }
}

extension AgeError.HeaderFailure: CustomStringConvertible {
    public var description: String {
        switch self {
        case .notAnAgeFile: return "not an age file"
        case .unsupportedVersion: return "unsupported age format version"
        case .truncated: return "the header ends before its MAC line does"
        case .unexpectedLine: return "a line that starts neither a stanza nor the MAC"
        case .malformedStanzaLine: return "malformed stanza line"
        case .malformedBodyLine: return "malformed stanza body line"
        case .malformedMACLine: return "malformed MAC line"
        case .noStanzas: return "no recipient stanza"
        }
    }
}

extension AgeError.StanzaFailure: CustomStringConvertible {
    public var description: String {
        switch self {
        case .notX25519: return "not an X25519 stanza"
        case .wrongArgumentCount: return "wrong number of arguments"
        case .shareNotCanonical: return "the ephemeral share is not canonical base64"
        case .wrongShareLength: return "the ephemeral share is not 32 bytes"
        case .wrongBodyLength: return "the body is not 32 bytes"
        case .lowOrderShare: return "the ephemeral share is a point of small order"
        case .notMLKEM768X25519: return "not an mlkem768x25519 stanza"
        case .encapsulationNotCanonical: return "the encapsulated key is not canonical base64"
        case .wrongEncapsulationLength: return "the encapsulated key is not 1120 bytes"
        case .decapsulationFailed: return "the encapsulated key's X25519 part is a point of small order"
        }
    }

    /// The stanza type a failure is about.
    var stanzaType: String {
        switch self {
        case .notX25519, .shareNotCanonical, .wrongShareLength, .lowOrderShare: return "X25519"
        case .notMLKEM768X25519, .encapsulationNotCanonical, .wrongEncapsulationLength, .decapsulationFailed: return "mlkem768x25519"
        case .wrongArgumentCount, .wrongBodyLength: return "recipient"
        }
    }
}

extension AgeError.PayloadFailure: CustomStringConvertible {
    public var description: String {
        switch self {
        case .missingNonce: return "shorter than its nonce"
        case .truncated: return "the payload ends without a final chunk (truncated)"
        case .emptyFinalChunk: return "an empty final chunk after other chunks"
        case .chunkAuthenticationFailed(let index): return "chunk \(index) does not decrypt (altered, or another key)"
        case .trailingData: return "data after the final chunk"
        }
    }
}

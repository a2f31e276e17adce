import VaultCore
import VaultSodium

/// One recipient stanza of an age header: a type (the spec's first argument, e.g. `X25519`), further
/// arguments, and a binary body (C2SP `age.md`, "Recipient stanza").
///
/// A stanza of a type nobody here knows is kept as it is: identities ignore stanzas that are not theirs.
public struct AgeStanza: Equatable, Sendable {
    /// The first argument: the stanza's type (`X25519`, `scrypt`, `mlkem768x25519`, `example.com/enigma`, …).
    public let type: String
    /// The arguments after the type (the spec counts the type as the first argument: an `X25519` stanza has
    /// "two arguments", so one here).
    public let arguments: [String]
    /// The body, written as base64 wrapped at 64 columns.
    public let body: [UInt8]

    /// A stanza with `type`, `arguments` and `body`.
    ///
    /// The type and every argument must be 1 or more of the characters `!` to `~` (the grammar's `1*VCHAR`; a
    /// programming error otherwise).
    public init(type: String, arguments: [String], body: [UInt8]) {
        precondition(([type] + arguments).allSatisfy(Self.isValidArgument), "an age stanza argument is 1*VCHAR")
        self.type = type
        self.arguments = arguments
        self.body = body
    }

    static func isValidArgument(_ argument: some Collection<UInt8>) -> Bool {
        !argument.isEmpty && argument.allSatisfy { $0 >= 0x21 && $0 <= 0x7E }
    }

    static func isValidArgument(_ argument: String) -> Bool { isValidArgument(argument.utf8) }
}

/// The text header of an age v1 file: the version line, one or more recipient stanzas, and the MAC line
/// (C2SP `age.md`, "Header"):
///
///     age-encryption.org/v1
///     -> X25519 XEl0dJ6y3C7KZkgmgWUicg63EyXJiwBJW8PdYJ/cYBE
///     qRS0AMjdjPvZ/WT08U2KL4G+PIooA3hy38SvLpvaC1E
///     --- HK2NmOBN9Dpq0Gw6xMCuhFcQlQLvZ/wQUi/2scLG75s
///
/// Parsing follows the spec's grammar exactly and refuses everything else (CR LF line ends, padding,
/// non-canonical base64, long or missing short body lines, a MAC line with other spacing), so a parsed header
/// serialises back to the same bytes (``serialized()``) and its MAC covers exactly what was read.
public struct AgeHeader: Equatable, Sendable {
    /// The first line of every v1 header, without its line feed.
    public static let versionLine = "age-encryption.org/v1"
    /// What every version line starts with, whatever the version.
    static let versionPrefix = "age-encryption.org/"
    /// The size of the header MAC (HMAC-SHA-256).
    public static let macByteCount = 32
    /// The size of an age file key.
    public static let fileKeyByteCount = 16
    /// Body lines are wrapped at this many columns; a stanza ends with a shorter line, which may be empty.
    public static let columnsPerLine = 64

    static let stanzaPrefix = Array("->".utf8)
    static let macPrefix = Array("---".utf8)
    static let lineFeed = UInt8(ascii: "\n")
    static let space = UInt8(ascii: " ")

    /// The recipient stanzas, in order.
    public let stanzas: [AgeStanza]
    /// The header MAC: HMAC-SHA-256 under `HKDF-SHA-256(ikm = file key, salt = empty, info = "header")` of
    /// ``serializedWithoutMAC()``.
    public let mac: [UInt8]

    init(stanzas: [AgeStanza], mac: [UInt8]) {
        self.stanzas = stanzas
        self.mac = mac
    }

    /// A header of `stanzas` (at least one: a programming error otherwise) with its MAC under `fileKey`.
    ///
    /// - Throws: ``AgeError/wrongKeyLength(expected:actual:)`` unless `fileKey` is 16 bytes.
    public init(stanzas: [AgeStanza], fileKey: SecureBytes) throws(AgeError) {
        precondition(!stanzas.isEmpty, "an age header has at least one stanza")
        let unsigned = AgeHeader(stanzas: stanzas, mac: [])
        self.init(stanzas: stanzas, mac: try Self.mac(of: unsigned.serializedWithoutMAC(), fileKey: fileKey))
    }

    // MARK: Writing

    /// The header's bytes up to and including `---` (without the space after it): what the MAC covers.
    public func serializedWithoutMAC() -> [UInt8] {
        var output = Array(Self.versionLine.utf8)
        output.append(Self.lineFeed)
        for stanza in stanzas {
            output += Self.stanzaPrefix
            for argument in [stanza.type] + stanza.arguments {
                output.append(Self.space)
                output += argument.utf8
            }
            output.append(Self.lineFeed)
            var encoded: [UInt8] = []
            AgeBase64.encode(stanza.body, appendingTo: &encoded)
            var start = 0
            // Full lines, then one shorter line: empty when the body fills its last line exactly (or is empty).
            while true {
                let end = min(start + Self.columnsPerLine, encoded.count)
                output += encoded[start..<end]
                output.append(Self.lineFeed)
                if end - start < Self.columnsPerLine { break }
                start = end
            }
        }
        output += Self.macPrefix
        return output
    }

    /// The whole header: ``serializedWithoutMAC()``, a space, the base64 MAC and a line feed. The payload follows.
    public func serialized() -> [UInt8] {
        var output = serializedWithoutMAC()
        output.append(Self.space)
        AgeBase64.encode(mac, appendingTo: &output)
        output.append(Self.lineFeed)
        return output
    }

    // MARK: The MAC

    /// `HMAC-SHA-256(key = HKDF-SHA-256(ikm = fileKey, salt = empty, info = "header"), headerWithoutMAC)`; the
    /// HMAC key only in guarded memory.
    ///
    /// - Throws: ``AgeError/wrongKeyLength(expected:actual:)`` unless `fileKey` is 16 bytes.
    public static func mac(of headerWithoutMAC: [UInt8], fileKey: SecureBytes) throws(AgeError) -> [UInt8] {
        guard fileKey.count == fileKeyByteCount else {
            throw .wrongKeyLength(expected: fileKeyByteCount, actual: fileKey.count)
        }
        return withGuardedScratch(byteCount: Sodium.hmacSHA256ByteCount) { hmacKey in
            fileKey.withUnsafeBytes { ikm in
                Array("header".utf8).withUnsafeBytes { info in
                    Sodium.hkdfSHA256(
                        inputKeyingMaterial: ikm, salt: UnsafeRawBufferPointer(start: nil, count: 0), info: info, into: hmacKey)
                }
            }
            return headerWithoutMAC.withUnsafeBytes { Sodium.hmacSHA256(key: UnsafeRawBufferPointer(hmacKey), message: $0) }
        }
    }

    /// Checks the MAC under `fileKey`, in constant time.
    ///
    /// - Throws: ``AgeError/headerMACMismatch`` when it does not verify: the header was altered (or `fileKey` is not
    ///   this file's); ``AgeError/wrongKeyLength(expected:actual:)`` unless `fileKey` is 16 bytes.
    public func verifyMAC(fileKey: SecureBytes) throws(AgeError) {
        let expected = try Self.mac(of: serializedWithoutMAC(), fileKey: fileKey)
        let matches = expected.withUnsafeBytes { a in mac.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) } }
        guard matches else { throw .headerMACMismatch }
    }

    // MARK: Unwrapping

    /// The file key: the first stanza that one of `identities` unwraps (identities in order, each over the
    /// stanzas of its type in order, as age's `Decrypt` does), after the header's MAC is verified under it. Stanzas
    /// of other types are skipped.
    ///
    /// Every stanza of a type known here (`X25519`, and the types of the identities given) has its form checked
    /// before any is tried, so that whether a header is refused depends as little as possible on the identities
    /// held; age checks a stanza only when it reaches it, and so opens a file whose malformed stanza comes after the
    /// one that matches (no age writes such a file). A share of small order is found only when its stanza is tried.
    ///
    /// - Throws: ``AgeError/malformedStanza(_:)`` for a malformed stanza (the spec's MUST reject; a share of small
    ///   order included), ``AgeError/noMatch`` when no stanza unwraps, ``AgeError/headerMACMismatch`` when one
    ///   does but the MAC does not verify.
    public func unwrapFileKey(with identities: [any AgeStanzaIdentity]) throws(AgeError) -> SecureBytes {
        var kinds: [String: any AgeStanzaIdentity.Type] = [AgeIdentity.stanzaType: AgeIdentity.self]
        for identity in identities { kinds[type(of: identity).stanzaType] = type(of: identity) }
        for stanza in stanzas {
            if let kind = kinds[stanza.type] { try kind.checkForm(of: stanza) }
        }
        for identity in identities {
            for stanza in stanzas where stanza.type == type(of: identity).stanzaType {
                let fileKey: SecureBytes
                do throws(AgeError) {
                    fileKey = try identity.unwrap(stanza)
                } catch .noMatch {
                    continue
                }
                try verifyMAC(fileKey: fileKey)
                return fileKey
            }
        }
        throw .noMatch
    }

    // MARK: Parsing

    /// Parses the header at the start of `bytes`; returns it and its length in bytes (the payload starts there).
    ///
    /// - Throws: ``AgeError/malformedHeader(line:reason:)`` with the line (from 1) where the grammar broke.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(AgeError) -> (header: AgeHeader, byteCount: Int) {
        var parser = Parser(bytes: bytes)
        return try parser.parse()
    }

    /// Parses the header at the start of `bytes`; see ``parse(_:)-(UnsafeRawBufferPointer)``.
    public static func parse(_ bytes: [UInt8]) throws(AgeError) -> (header: AgeHeader, byteCount: Int) {
        try bytes.withBytes { (buffer) throws(AgeError) in try parse(buffer) }
    }

    /// The grammar of `age.md`, line by line.
    private struct Parser {
        let bytes: UnsafeRawBufferPointer
        var position = 0
        var lineNumber = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        func failure(_ reason: AgeError.HeaderFailure) -> AgeError {
            .malformedHeader(line: lineNumber, reason: reason)
        }

        /// The next line without its line feed, or nil at the end of the input or if it has no line feed (the
        /// position is then left at the line's start).
        mutating func nextLine() -> UnsafeRawBufferPointer? {
            lineNumber += 1
            guard let end = bytes[position...].firstIndex(of: lineFeed) else { return nil }
            let line = UnsafeRawBufferPointer(rebasing: bytes[position..<end])
            position = end + 1
            return line
        }

        mutating func parse() throws(AgeError) -> (header: AgeHeader, byteCount: Int) {
            let expected = Array(versionLine.utf8)
            guard let version = nextLine() else {
                // No line feed at all: the start of a v1 header cut short, or something else.
                let isCut = !bytes.isEmpty && (expected.starts(with: bytes) || bytes.starts(with: expected))
                throw failure(isCut ? .truncated : .notAnAgeFile)
            }
            if !version.elementsEqual(expected) {
                // `version-line = "age-encryption.org/" version LF`, `version = 1*VCHAR`.
                let prefix = Array(versionPrefix.utf8)
                let isVersionLine = version.starts(with: prefix) && AgeStanza.isValidArgument(version.dropFirst(prefix.count))
                throw failure(isVersionLine ? .unsupportedVersion : .notAnAgeFile)
            }

            var stanzas: [AgeStanza] = []
            while true {
                guard let line = nextLine() else { throw failure(.truncated) }
                if line.starts(with: macPrefix) {
                    let mac = try macValue(of: line)
                    guard !stanzas.isEmpty else { throw failure(.noStanzas) }
                    return (AgeHeader(stanzas: stanzas, mac: mac), position)
                }
                guard line.starts(with: stanzaPrefix) else { throw failure(.unexpectedLine) }
                stanzas.append(try stanza(opening: line))
            }
        }

        /// `end = "--- " 43base64char LF`.
        func macValue(of line: UnsafeRawBufferPointer) throws(AgeError) -> [UInt8] {
            guard line.count == macPrefix.count + 1 + AgeBase64.encodedCount(macByteCount),
                  line[macPrefix.count] == space else { throw failure(.malformedMACLine) }
            return try AgeBase64.decode(line[(macPrefix.count + 1)...], failure: failure(.malformedMACLine))
        }

        /// `stanza = arg-line *full-line final-line`, `arg-line = "-> " argument *(SP argument) LF`.
        mutating func stanza(opening line: UnsafeRawBufferPointer) throws(AgeError) -> AgeStanza {
            guard line.count > stanzaPrefix.count, line[stanzaPrefix.count] == space else {
                throw failure(.malformedStanzaLine)
            }
            let arguments = line[(stanzaPrefix.count + 1)...].split(separator: space, omittingEmptySubsequences: false)
            guard arguments.allSatisfy(AgeStanza.isValidArgument) else { throw failure(.malformedStanzaLine) }
            let strings = arguments.map { String(decoding: $0, as: UTF8.self) }

            var body: [UInt8] = []
            while true {
                guard let bodyLine = nextLine() else { throw failure(.truncated) }
                guard bodyLine.count <= columnsPerLine else { throw failure(.malformedBodyLine) }
                body += try AgeBase64.decode(bodyLine, failure: failure(.malformedBodyLine))
                if bodyLine.count < columnsPerLine { break }
            }
            return AgeStanza(type: strings[0], arguments: Array(strings.dropFirst()), body: body)
        }
    }
}

/// An age identity of one stanza type: what ``AgeHeader/unwrapFileKey(with:)`` tries
/// the header's stanzas with. ``AgeIdentity`` (`X25519`) is one; VaultAgePQ's hybrid identity (`mlkem768x25519`)
/// another.
public protocol AgeStanzaIdentity: Sendable {
    /// The stanza type (first argument) this identity reads; stanzas of other types are not its own.
    static var stanzaType: String { get }
    /// Checks the form of a stanza of ``stanzaType`` as the spec requires of an identity implementation, without
    /// any key.
    ///
    /// - Throws: ``AgeError/malformedStanza(_:)``.
    static func checkForm(of stanza: AgeStanza) throws(AgeError)
    /// The file key in `stanza` (of ``stanzaType``, its form checked).
    ///
    /// - Throws: ``AgeError/noMatch`` when it is not for this identity (or was altered);
    ///   ``AgeError/malformedStanza(_:)`` when it is malformed in a way only the key can tell.
    func unwrap(_ stanza: AgeStanza) throws(AgeError) -> SecureBytes
    /// The encoding of its recipient (`age1…`, `age1pq1…`): how a vault's recipient stanza for it is found.
    var recipientEncoding: String { get }
    /// Whether `recipient` is a valid recipient of this kind (Bech32 checksum and key included).
    static func isValidRecipient(_ recipient: String) -> Bool
    /// The identity's own encoding (`AGE-SECRET-KEY-1…`, `AGE-SECRET-KEY-PQ-1…`), in guarded memory.
    func encoded() -> SecureBytes
}

extension AgeIdentity: AgeStanzaIdentity {
    public static var stanzaType: String { X25519Stanza.stanzaType }

    public static func checkForm(of stanza: AgeStanza) throws(AgeError) {
        _ = try X25519Stanza(stanza)
    }

    public func unwrap(_ stanza: AgeStanza) throws(AgeError) -> SecureBytes {
        try X25519Stanza(stanza).unwrap(with: self)
    }

    public var recipientEncoding: String { recipient.description }

    public static func isValidRecipient(_ recipient: String) -> Bool { (try? AgeRecipient(parsing: recipient)) != nil }
}

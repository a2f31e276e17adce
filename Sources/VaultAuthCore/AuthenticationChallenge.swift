/// One challenge from a `WWW-Authenticate` header (RFC 9110 section 11.6.1).
///
/// ```
/// challenge  = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
/// auth-param = token BWS "=" BWS ( token / quoted-string )
/// ```
public struct AuthenticationChallenge: Hashable, Sendable {
    /// The scheme as sent (compare with ``hasScheme(_:)``, which ignores case).
    public let scheme: String
    /// The parameters, names lower-cased (they are case-insensitive); quoted values unescaped.
    /// When a name occurs more than once, the first value is kept.
    public let parameters: [String: String]
    /// The `token68` form of the challenge data, if the challenge used it instead of parameters.
    public let token68: String?

    public init(scheme: String, parameters: [String: String] = [:], token68: String? = nil) {
        self.scheme = scheme
        self.parameters = parameters
        self.token68 = token68
    }

    /// `true` if the scheme is `name`, ignoring ASCII case.
    public func hasScheme(_ name: String) -> Bool { scheme.lowercased() == name.lowercased() }

    /// Parses every challenge in `headerValues`, the values of all `WWW-Authenticate` fields of one response in
    /// order (a server may send several fields, and several challenges in one field).
    ///
    /// Parsing never fails: a malformed challenge (an unterminated quoted string, a parameter without a value,
    /// junk after a value) is dropped and ends the field it is in; the challenges read before it are kept.
    public static func parse(_ headerValues: [String]) -> [AuthenticationChallenge] {
        headerValues.flatMap { value in
            var parser = ChallengeParser(Array(value.unicodeScalars))
            return parser.parseAll()
        }
    }
}

/// A `Basic` challenge (RFC 7617).
public struct BasicChallenge: Hashable, Sendable {
    /// The realm; RFC 7617 requires it. A challenge without one has realm `""`.
    public let realm: String
    /// The `charset` parameter (`UTF-8` is the only value RFC 7617 allows); `nil` when absent.
    public let charset: String?

    public init(realm: String, charset: String? = nil) {
        self.realm = realm
        self.charset = charset
    }

    /// The first `Basic` challenge among `headerValues` (all `WWW-Authenticate` values of one response), or `nil`.
    /// A `Basic` challenge in token68 form is malformed and skipped.
    public static func first(in headerValues: [String]) -> BasicChallenge? {
        guard let challenge = AuthenticationChallenge.parse(headerValues)
            .first(where: { $0.hasScheme("Basic") && $0.token68 == nil })
        else { return nil }
        return BasicChallenge(realm: challenge.parameters["realm"] ?? "", charset: challenge.parameters["charset"])
    }
}

/// A tolerant recursive-descent parser over Unicode scalars.
private struct ChallengeParser {
    let input: [Unicode.Scalar]
    var position = 0

    init(_ input: [Unicode.Scalar]) { self.input = input }

    private var atEnd: Bool { position >= input.count }
    private var current: Unicode.Scalar? { atEnd ? nil : input[position] }

    private static func isTchar(_ c: Unicode.Scalar) -> Bool {
        switch c {
        case "a"..."z", "A"..."Z", "0"..."9": return true
        case "!", "#", "$", "%", "&", "'", "*", "+", "-", ".", "^", "_", "`", "|", "~": return true
        default: return false
        }
    }

    private static func isToken68Char(_ c: Unicode.Scalar) -> Bool {
        switch c {
        case "a"..."z", "A"..."Z", "0"..."9", "-", ".", "_", "~", "+", "/": return true
        default: return false
        }
    }

    private mutating func skipWhitespace() {
        while let c = current, c == " " || c == "\t" { position += 1 }
    }

    private mutating func skipWhitespaceAndCommas() {
        while let c = current, c == " " || c == "\t" || c == "," { position += 1 }
    }

    private mutating func readToken() -> String? {
        let start = position
        while let c = current, Self.isTchar(c) { position += 1 }
        guard position > start else { return nil }
        var s = ""
        s.unicodeScalars.append(contentsOf: input[start..<position])
        return s
    }

    /// At a `"`: reads the quoted string, unescaping quoted-pairs; `nil` if it is not terminated.
    private mutating func readQuotedString() -> String? {
        position += 1  // opening quote
        var s = ""
        while let c = current {
            position += 1
            switch c {
            case "\"":
                return s
            case "\\":
                guard let escaped = current else { return nil }
                position += 1
                s.unicodeScalars.append(escaped)
            default:
                s.unicodeScalars.append(c)
            }
        }
        return nil
    }

    /// Looks ahead from the current position: is this `token BWS "=" BWS` followed by something other than
    /// `=`, `,` or the end? That is an auth-param; anything else starts a token68 or a new challenge.
    private func looksLikeParameter() -> Bool {
        var p = position
        let start = p
        while p < input.count, Self.isTchar(input[p]) { p += 1 }
        guard p > start else { return false }
        while p < input.count, input[p] == " " || input[p] == "\t" { p += 1 }
        guard p < input.count, input[p] == "=" else { return false }
        p += 1
        while p < input.count, input[p] == " " || input[p] == "\t" { p += 1 }
        guard p < input.count else { return false }
        return input[p] != "=" && input[p] != ","
    }

    mutating func parseAll() -> [AuthenticationChallenge] {
        var challenges: [AuthenticationChallenge] = []
        while true {
            skipWhitespaceAndCommas()
            guard !atEnd else { break }
            guard let scheme = readToken() else { break }  // junk where a scheme should be: stop here
            var parameters: [String: String] = [:]
            var token68: String?
            var malformed = false
            let hadSpace = current == " " || current == "\t"
            skipWhitespace()
            if hadSpace, let c = current, c != "," {
                if looksLikeParameter() {
                    // #auth-param, comma separated, until a token that is not followed by "=".
                    paramLoop: while true {
                        guard let name = readToken() else { malformed = true; break }
                        skipWhitespace()
                        position += 1  // "=" (checked by looksLikeParameter)
                        skipWhitespace()
                        let value: String
                        if current == "\"" {
                            guard let quoted = readQuotedString() else { malformed = true; break paramLoop }
                            value = quoted
                        } else if let token = readToken() {
                            value = token
                        } else {
                            malformed = true
                            break paramLoop
                        }
                        let key = name.lowercased()
                        if parameters[key] == nil { parameters[key] = value }
                        skipWhitespace()
                        guard !atEnd else { break }
                        guard current == "," else { malformed = true; break }
                        // Commas may be repeated (empty list elements); then either another parameter or a
                        // new challenge.
                        let save = position
                        skipWhitespaceAndCommas()
                        if atEnd { break }
                        if !looksLikeParameter() { position = save; break }
                    }
                } else if Self.isToken68Char(c) {
                    let start = position
                    while let d = current, Self.isToken68Char(d) { position += 1 }
                    while current == "=" { position += 1 }
                    var s = ""
                    s.unicodeScalars.append(contentsOf: input[start..<position])
                    token68 = s
                    skipWhitespace()
                    if !atEnd && current != "," { malformed = true }
                } else {
                    malformed = true
                }
            } else if !atEnd && current != "," {
                malformed = true  // e.g. `Basic"x"`
            }
            if malformed { break }  // drop the half-read challenge and the rest of the field
            challenges.append(AuthenticationChallenge(scheme: scheme, parameters: parameters, token68: token68))
        }
        return challenges
    }
}

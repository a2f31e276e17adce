import FoundationEssentials

/// The origin of a URL: scheme, host and port, lower-cased and with the default port filled in.
///
/// Two URLs are the same origin when all three agree (RFC 6454). Credentials are never sent to another origin
/// than the one that challenged for them.
public struct Origin: Hashable, Sendable, CustomStringConvertible {
    /// `http` or `https` (lower case).
    public let scheme: String
    /// The host, lower case; an IPv6 literal without brackets.
    public let host: String
    /// The port, with the scheme's default filled in.
    public let port: Int

    /// Makes the origin of `url`; `nil` when the URL has no scheme or host, or a scheme other than `http`/`https`.
    public init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              var host = url.host?.lowercased(), !host.isEmpty
        else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.scheme = scheme
        self.host = host
        self.port = url.port ?? (scheme == "https" ? 443 : 80)
    }

    /// Makes an origin from its parts; `scheme` and `host` are lower-cased.
    public init(scheme: String, host: String, port: Int) {
        self.scheme = scheme.lowercased()
        self.host = host.lowercased()
        self.port = port
    }

    /// Makes the origin of `scheme` (`http` or `https`, any case) and `authority`, exactly `host` or
    /// `host:port` with nothing else: a DNS name or IPv4 address of ASCII letters, digits, `-`, `.` and `_`, or
    /// an IPv6 literal in brackets; a port of 1 to 65535. `nil` for anything else (user info, a path, a query,
    /// percent escapes, spaces, non-ASCII), so that the origin is the host the caller named and never another
    /// one a URL parser would have read into it (`a.example#@b.example`).
    public init?(scheme: String, authority: String) {
        let scheme = scheme.lowercased()
        guard scheme == "http" || scheme == "https", !authority.isEmpty else { return nil }
        var host: Substring
        var rest: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            rest = authority[authority.index(after: close)...]
            guard host.contains(":"), host.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0 == ":" || $0 == ".") }) else { return nil }
        } else {
            let colon = authority.firstIndex(of: ":") ?? authority.endIndex
            host = authority[..<colon]
            rest = authority[colon...]
            guard host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") })
            else { return nil }
        }
        guard !host.isEmpty else { return nil }
        var port = scheme == "https" ? 443 : 80
        if !rest.isEmpty {
            let digits = rest.dropFirst()
            guard rest.first == ":", !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let number = Int(digits), (1...65535).contains(number)
            else { return nil }
            port = number
        }
        self.init(scheme: scheme, host: String(host), port: port)
    }

    /// `true` for `https`.
    public var isSecure: Bool { scheme == "https" }

    /// `true` when the host is a loopback address: `localhost`, `127.0.0.0/8` or `::1`.
    ///
    /// Only literal addresses and the name `localhost` count; no name is resolved.
    public var isLoopback: Bool {
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ $0.count <= 3 && UInt8($0) != nil }) else { return false }
        return parts[0] == "127"
    }

    /// The host as it appears in a URL (IPv6 literals in brackets).
    public var urlHost: String { host.contains(":") ? "[\(host)]" : host }

    /// `scheme://host:port`, always with the port.
    public var description: String { "\(scheme)://\(urlHost):\(port)" }
}

/// Where a credential is valid: scheme, host, port and the server's realm (RFC 7617 section 2.2).
///
/// A server may protect several realms on one origin; each has its own credential.
public struct ProtectionSpace: Hashable, Sendable, CustomStringConvertible {
    /// The origin (scheme, host, port).
    public let origin: Origin
    /// The realm the server named in its challenge, exactly as sent (case-sensitive).
    public let realm: String

    /// Makes the protection space of `origin` and `realm`.
    public init(origin: Origin, realm: String) {
        self.origin = origin
        self.realm = realm
    }

    /// Makes the protection space of `url`'s origin and `realm`; `nil` when `url` is not an `http`/`https` URL.
    public init?(url: URL, realm: String) {
        guard let origin = Origin(url) else { return nil }
        self.init(origin: origin, realm: realm)
    }

    public var scheme: String { origin.scheme }
    public var host: String { origin.host }
    public var port: Int { origin.port }

    /// The space as one string, `scheme://host:port/realm`, with the realm percent-encoded
    /// (everything but ASCII letters, digits and `-._~` is written `%XX` of its UTF-8 bytes).
    ///
    /// This is the form stored in the vault (see docs/AUTH.md); ``init(key:)`` reads it back.
    public var key: String { "\(origin)/\(Self.percentEncode(realm))" }

    /// Reads a space back from ``key``; `nil` if the string is not in that form.
    public init?(key: String) {
        guard let schemeEnd = key.firstRange(of: "://") else { return nil }
        let scheme = String(key[..<schemeEnd.lowerBound])
        let rest = key[schemeEnd.upperBound...]
        guard scheme == "http" || scheme == "https" else { return nil }
        // host:port/realm; the host may be an IPv6 literal in brackets.
        var host: Substring
        var afterHost: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            host = rest[rest.index(after: rest.startIndex)..<close]
            afterHost = rest[rest.index(after: close)...]
        } else {
            guard let colon = rest.firstIndex(of: ":") else { return nil }
            host = rest[..<colon]
            afterHost = rest[colon...]
        }
        guard afterHost.hasPrefix(":"), let slash = afterHost.firstIndex(of: "/"),
              let port = Int(afterHost[afterHost.index(after: afterHost.startIndex)..<slash]),
              (1...65535).contains(port), !host.isEmpty,
              let realm = Self.percentDecode(afterHost[afterHost.index(after: slash)...])
        else { return nil }
        self.init(origin: Origin(scheme: scheme, host: String(host), port: port), realm: realm)
        guard self.key == key else { return nil }  // only the canonical form round-trips
    }

    /// `scheme://host:port` and the realm in quotes, for messages. The realm is the server's text, exact: whoever
    /// shows it on a terminal escapes it (the CLI's error report and prompts do, with `TerminalText`).
    public var description: String {
        "\(origin) (realm \"\(realm)\")"
    }

    /// Every byte of `string`'s UTF-8 except `A-Z a-z 0-9 - . _ ~` as `%XX` (upper-case hex): the encoding of
    /// realms in ``key``.
    public static func percentEncode(_ string: String) -> String {
        var out = ""
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 0xF)])
            }
        }
        return out
    }

    /// The inverse of ``percentEncode(_:)``; `nil` for a malformed escape or bytes that are not UTF-8.
    public static func percentDecode(_ string: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(string.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard iterator.count >= 2,
                      let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

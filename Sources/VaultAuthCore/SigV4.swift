import Foundation
import VaultCore
import VaultCredentials
import VaultSodium

/// Signs requests with AWS Signature Version 4 in the `Authorization` header (`AWS4-HMAC-SHA256`), for S3 by
/// default: https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html
///
/// HMAC-SHA-256 and SHA-256 come from libsodium (VaultSodium); the secret access key and the keys derived from it
/// stay in guarded memory (``SecureBytes``). Neither the secret key nor the session token appears in
/// `description`.
///
/// What is signed: `host` (from the URL, with the port when it is not the scheme's default, as the transport
/// sends it), every field already on the request except the ones a hop may change (`connection`, `keep-alive`,
/// `proxy-authenticate`, `proxy-authorization`, `te`, `trailer`, `transfer-encoding`, `upgrade`, `expect`,
/// `user-agent`, `x-amzn-trace-id`: botocore's list) and a `Host` field (the transport writes its own), plus the
/// fields signing adds: `X-Amz-Date`, `x-amz-content-sha256` and `X-Amz-Security-Token`.
///
/// The path: S3 signs the object key URI-encoded once and not normalised (`a/./b` and `a//b` are other keys);
/// every other service normalises the path (dot segments and empty segments go) and encodes the already
/// percent-encoded path once more. The defaults are S3's; pass `normalizePath: true, doubleEncodePath: true` for
/// other services.
public struct SigV4Signer: Sendable {
    /// The access key id (not a secret: it is in every `Authorization` field).
    public let accessKeyID: String
    let secretAccessKey: SecureBytes
    /// The session token of temporary credentials, sent as `X-Amz-Security-Token`.
    let sessionToken: String?
    public let region: String
    public let service: String
    /// Remove dot segments and empty segments from the path before encoding it (not for S3).
    public let normalizePath: Bool
    /// Encode the request's percent-encoded path once more, so that `%20` is signed as `%2520` (not for S3, which
    /// signs the key encoded once).
    public let doubleEncodePath: Bool
    /// Whether `X-Amz-Security-Token` is signed (it is, except for the few services that want it added after
    /// signing).
    let signsSessionToken: Bool

    /// A signer for `service` (S3 by default) in `region`; `secretAccessKey` is kept as it is (not copied).
    public init(
        accessKeyID: String, secretAccessKey: SecureBytes, sessionToken: String? = nil, region: String,
        service: String = "s3", normalizePath: Bool = false, doubleEncodePath: Bool = false
    ) {
        self.init(
            accessKeyID: accessKeyID, secretAccessKey: secretAccessKey, sessionToken: sessionToken, region: region,
            service: service, normalizePath: normalizePath, doubleEncodePath: doubleEncodePath,
            signsSessionToken: true)
    }

    init(
        accessKeyID: String, secretAccessKey: SecureBytes, sessionToken: String?, region: String, service: String,
        normalizePath: Bool, doubleEncodePath: Bool, signsSessionToken: Bool
    ) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.region = region
        self.service = service
        self.normalizePath = normalizePath
        self.doubleEncodePath = doubleEncodePath
        self.signsSessionToken = signsSessionToken
    }

    /// The `x-amz-content-sha256` value of a body that is not signed (S3 over HTTPS).
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    // MARK: Signing

    /// Signs `request` at `date`: sets `X-Amz-Security-Token` (with a session token), `X-Amz-Date`,
    /// `x-amz-content-sha256` (`payloadHash`, or the hex SHA-256 of the body, empty when there is none) and
    /// `Authorization`, replacing any earlier values of these fields.
    ///
    /// Sign last: a field added or changed afterwards (other than the ones a hop may change) breaks the signature.
    public func sign(_ request: inout HTTPRequest, date: Date, payloadHash: String? = nil) {
        sign(&request, date: date, payloadHash: payloadHash, contentSHA256Field: true)
    }

    /// ``sign(_:date:payloadHash:)``, optionally without the `x-amz-content-sha256` field (only the generic test
    /// suite's cases leave it out; S3 requires it).
    func sign(_ request: inout HTTPRequest, date: Date, payloadHash: String?, contentSHA256Field: Bool) {
        let plan = plan(for: request, date: date, payloadHash: payloadHash, contentSHA256Field: contentSHA256Field)
        let stringToSign = stringToSign(canonicalRequest: plan.canonicalRequest, date: date)
        let signature = signature(stringToSign: stringToSign, date: date)
        for field in plan.addedFields { request.headers.set(field.name, field.value) }
        request.headers.set(
            "Authorization",
            "AWS4-HMAC-SHA256 Credential=\(accessKeyID)/\(credentialScope(date: date)), "
                + "SignedHeaders=\(plan.signedHeaders), Signature=\(signature)")
    }

    /// The canonical request that ``sign(_:date:payloadHash:)`` signs for `request` (with the fields it adds):
    /// what S3 returns in a `SignatureDoesNotMatch` error, to compare.
    public func canonicalRequest(for request: HTTPRequest, date: Date, payloadHash: String? = nil) -> String {
        plan(for: request, date: date, payloadHash: payloadHash, contentSHA256Field: true).canonicalRequest
    }

    /// `AWS4-HMAC-SHA256`, the time, the credential scope and the hex SHA-256 of the canonical request, one a line.
    public func stringToSign(canonicalRequest: String, date: Date) -> String {
        "AWS4-HMAC-SHA256\n\(Self.amzDate(date))\n\(credentialScope(date: date))\n"
            + Self.hex(Self.sha256(Array(canonicalRequest.utf8)))
    }

    /// The hex HMAC-SHA-256 of `stringToSign` under the signing key of `date`, region and service.
    public func signature(stringToSign: String, date: Date) -> String {
        let key = signingKey(dateStamp: Self.dateStamp(date))
        let mac = key.withUnsafeBytes { key in
            Array(stringToSign.utf8).withUnsafeBytes { Sodium.hmacSHA256(key: key, message: $0) }
        }
        return Self.hex(mac)
    }

    /// `yyyymmdd/region/service/aws4_request`.
    public func credentialScope(date: Date) -> String {
        "\(Self.dateStamp(date))/\(region)/\(service)/aws4_request"
    }

    /// HMAC("AWS4" + secret, date) → region → service → "aws4_request", each step in guarded memory.
    func signingKey(dateStamp: String) -> SecureBytes {
        var key = secretAccessKey.withUnsafeBytes { secret in
            SecureBytes(capacity: 4 + secret.count) { out in
                out.append("AWS4")
                out.append(secret)
            }
        }
        for part in [dateStamp, region, service, "aws4_request"] {
            key = key.withUnsafeBytes { previous in
                SecureBytes(count: Sodium.hmacSHA256ByteCount) { out in
                    Array(part.utf8).withUnsafeBytes { Sodium.hmacSHA256(key: previous, message: $0, into: out) }
                }
            }
        }
        return key
    }

    /// The fields signing adds, in the order it adds them, the canonical request and the signed header names.
    struct Plan {
        var addedFields: [(name: String, value: String)]
        var canonicalRequest: String
        var signedHeaders: String
    }

    func plan(for request: HTTPRequest, date: Date, payloadHash: String?, contentSHA256Field: Bool) -> Plan {
        let hash = payloadHash ?? Self.hex(Self.sha256(request.body ?? []))
        var added: [(name: String, value: String)] = []
        if let sessionToken { added.append(("X-Amz-Security-Token", sessionToken)) }
        added.append(("X-Amz-Date", Self.amzDate(date)))
        if contentSHA256Field { added.append(("x-amz-content-sha256", hash)) }

        let replaced = Set(added.map { $0.name.lowercased() } + ["authorization"])
        var signed: [(name: String, value: String)] = [("host", Self.hostField(of: request.url))]
        for field in request.headers {
            let name = field.name.lowercased()
            if name == "host" || replaced.contains(name) || Self.unsignedFieldNames.contains(name) { continue }
            signed.append((name, field.value))
        }
        for field in added where signsSessionToken || field.name != "X-Amz-Security-Token" {
            signed.append((field.name.lowercased(), field.value))
        }

        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        let canonical = Self.canonicalRequest(
            method: request.method, path: components?.percentEncodedPath ?? "/",
            query: components?.percentEncodedQuery, headers: signed, payloadHash: hash,
            normalizePath: normalizePath, doubleEncodePath: doubleEncodePath)
        return Plan(addedFields: added, canonicalRequest: canonical.request, signedHeaders: canonical.signedHeaders)
    }

    /// Fields a proxy or the transport may add, drop or change: never signed (botocore's list).
    static let unsignedFieldNames: Set<String> = [
        "connection", "expect", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
        "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id",
    ]

    /// The `Host` field the transport sends for `url`: the host in lower case (an IPv6 literal in brackets), and
    /// `:port` when the port is not the scheme's default.
    static func hostField(of url: URL) -> String {
        guard let origin = Origin(url) else { return url.host?.lowercased() ?? "" }
        return origin.port == (origin.isSecure ? 443 : 80) ? origin.urlHost : "\(origin.urlHost):\(origin.port)"
    }

    // MARK: The canonical request

    /// The canonical request: method, canonical URI, canonical query, canonical headers, a blank line, the signed
    /// header names and the payload hash, one a line; and the signed header names (`a;b;c`).
    ///
    /// `path` is the request's path as sent (percent-encoded, or as a test suite's request line has it), `query`
    /// the query as sent (without `?`), `headers` the fields to sign, `host` included.
    static func canonicalRequest(
        method: String, path: String, query: String?, headers: [(name: String, value: String)],
        payloadHash: String, normalizePath: Bool, doubleEncodePath: Bool
    ) -> (request: String, signedHeaders: String) {
        let (canonicalHeaders, signedHeaders) = canonicalHeaders(headers)
        let request = [
            method,
            canonicalURI(path, normalize: normalizePath, doubleEncode: doubleEncodePath),
            canonicalQuery(query),
            canonicalHeaders,
            signedHeaders,
            payloadHash,
        ].joined(separator: "\n")
        return (request, signedHeaders)
    }

    /// The path with each segment URI-encoded (RFC 3986 unreserved characters kept, everything else `%XX`).
    ///
    /// With `doubleEncode` the segments are encoded as they are (so `%` becomes `%25`); without, they are
    /// percent-decoded first, so that the key is encoded exactly once however the URL escaped it. With `normalize`,
    /// `.`, `..` and empty segments are resolved first (as botocore: a trailing `/` stays when a segment is left).
    static func canonicalURI(_ path: String, normalize: Bool, doubleEncode: Bool) -> String {
        if path.isEmpty { return "/" }
        var segments = path.split(separator: "/", omittingEmptySubsequences: false).map(Substring.init)
        if normalize {
            var kept: [Substring] = []
            for segment in segments where !segment.isEmpty && segment != "." {
                if segment == ".." {
                    if !kept.isEmpty { kept.removeLast() }
                } else {
                    kept.append(segment)
                }
            }
            let leading: [Substring] = path.hasPrefix("/") ? [""] : []
            let trailing: [Substring] = path.hasSuffix("/") && !kept.isEmpty ? [""] : []
            segments = leading + kept + trailing
            if segments == [""] { segments = ["", ""] }  // "/"
        }
        return segments.map { segment in
            doubleEncode ? uriEncode(segment.utf8) : uriEncode(percentDecode(segment, plusIsSpace: false))
        }.joined(separator: "/")
    }

    /// The query's parameters percent-decoded (`+` as a space, as AWS reads a query) and URI-encoded again,
    /// `name=value` (`name=` without a value), sorted by encoded name then value, joined with `&`.
    static func canonicalQuery(_ query: String?) -> String {
        guard let query, !query.isEmpty else { return "" }
        var pairs: [(name: String, value: String)] = []
        for parameter in query.split(separator: "&") {
            let equals = parameter.firstIndex(of: "=")
            let name = parameter[..<(equals ?? parameter.endIndex)]
            let value = equals.map { parameter[parameter.index(after: $0)...] } ?? ""
            pairs.append((uriEncode(percentDecode(name, plusIsSpace: true)), uriEncode(percentDecode(value, plusIsSpace: true))))
        }
        pairs.sort { a, b in
            a.name != b.name ? a.name.utf8.lexicographicallyPrecedes(b.name.utf8) : a.value.utf8.lexicographicallyPrecedes(b.value.utf8)
        }
        return pairs.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// `name:value` lines, names in lower case and sorted, the values of a repeated name joined with `,` in their
    /// order, each value trimmed with its inner runs of white space (line folds included) made one space; every
    /// line ends with a newline. And the names, `;`-separated.
    static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> (headers: String, signedHeaders: String) {
        var values: [String: [String]] = [:]
        for field in headers { values[field.name.lowercased(), default: []].append(trimAll(field.value)) }
        let names = values.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let lines = names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }
        return (lines.joined(), names.joined(separator: ";"))
    }

    /// `value` without leading and trailing white space, each inner run of it one space.
    static func trimAll(_ value: String) -> String {
        value.utf8.split(whereSeparator: { [0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C].contains($0) })
            .map { String(decoding: $0, as: UTF8.self) }
            .joined(separator: " ")
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters `A-Z a-z 0-9 - . _ ~`, upper-case hex.
    static func uriEncode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(upperHexDigits[Int(byte >> 4)])
                out.append(upperHexDigits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes `text` stands for: `%XX` decoded (a `%` not followed by two hex digits stays), `+` a space if asked.
    static func percentDecode(_ text: Substring, plusIsSpace: Bool) -> [UInt8] {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count,
               let high = hexValue(bytes[i + 1]), let low = hexValue(bytes[i + 2]) {
                out.append(high << 4 | low)
                i += 3
            } else {
                out.append(plusIsSpace && bytes[i] == UInt8(ascii: "+") ? 0x20 : bytes[i])
                i += 1
            }
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static let upperHexDigits = Array("0123456789ABCDEF".utf8)

    // MARK: Helpers

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { Sodium.sha256($0) }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC (ISO 8601 basic format), whole seconds: ``UTCTime``'s extended form without its
    /// separators.
    static func amzDate(_ date: Date) -> String {
        let extended = UTCTime.iso8601(seconds: date.timeIntervalSince1970, fractional: false)
        return String(extended.filter { $0 != "-" && $0 != ":" })
    }

    static func dateStamp(_ date: Date) -> String { String(amzDate(date).prefix(8)) }
}

extension SigV4Signer: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "SigV4Signer(accessKeyID: \(accessKeyID), region: \(region), service: \(service), secret access key"
            + (sessionToken == nil ? "" : " and session token") + " redacted)"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["accessKeyID": accessKeyID, "region": region, "service": service], displayStyle: .struct)
    }
}

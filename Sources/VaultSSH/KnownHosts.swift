import Crypto
import FoundationEssentials

/// ssh_config's patterns (ssh_config(5), PATTERNS): `*` any run of characters, `?` one, a leading `!` negates;
/// host names compared without regard to case.
public enum HostPattern {
    public static func matches(_ pattern: some StringProtocol, _ text: some StringProtocol) -> Bool {
        wildcard(Array(pattern.lowercased().utf8), Array(text.lowercased().utf8))
    }

    private static func wildcard(_ pattern: [UInt8], _ text: [UInt8]) -> Bool {
        var p = 0, t = 0, star = -1, mark = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == UInt8(ascii: "?") || pattern[p] == text[t] {
                p += 1; t += 1
            } else if p < pattern.count, pattern[p] == UInt8(ascii: "*") {
                star = p; mark = t; p += 1
            } else if star >= 0 {
                p = star + 1; mark += 1; t = mark
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.count
    }

    public static func isLiteral(_ pattern: String) -> Bool { !pattern.contains("*") && !pattern.contains("?") }

    /// Whether a list of patterns accepts a host: one of its positive patterns matches and no negated one does.
    public static func list(_ patterns: [String], accepts matches: (String) -> Bool) -> Bool {
        var accepted = false
        for pattern in patterns {
            if pattern.hasPrefix("!") {
                if matches(String(pattern.dropFirst())) { return false }
            } else if matches(pattern) {
                accepted = true
            }
        }
        return accepted
    }
}

/// What known_hosts files say of one host: the names it is listed under, in the clear or hashed (`|1|salt|hash`:
/// HMAC-SHA1 of the name under the salt, so a name can be checked but not read).
///
/// - A plain host key: the names of the lines with that key.
/// - A host certificate (docs/SSH-AGENT.md, "How keys are chosen"): those of the certified key, plus each of the
///   certificate's principals that the patterns of a `@cert-authority` line whose key is the certificate's CA
///   accept (negations honoured, hashed patterns checked), when the certificate is a host certificate, valid at
///   the agent's clock and signed by that CA.
/// - A `@revoked` line with the host key (or the certificate's CA key): no name at all, the host is unknown.
public struct KnownHosts: Sendable {
    public private(set) var names: [String] = []
    public private(set) var hashed: [(salt: [UInt8], hash: [UInt8])] = []
    /// A `@revoked` line names the key or its CA.
    public private(set) var revoked = false

    public init() {}

    /// The entries of `texts` (known_hosts files' contents) for `hostKey`, presented with `certificate` (or
    /// none), at `now` (seconds since the epoch: a certificate's validity window).
    public init(hostKey: SSHPublicKey, certificate: HostCertificate? = nil, texts: [String], now: UInt64 = KnownHosts.now()) {
        var authorities: [[Substring]] = []
        for text in texts {
            for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
                var fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard let first = fields.first, !first.hasPrefix("#") else { continue }
                let marker = first.hasPrefix("@") ? fields.removeFirst() : nil
                guard fields.count >= 3, let blob = Base64.decode(fields[2]) else { continue }
                let patterns = fields[0].split(separator: ",")
                switch marker {
                case nil:
                    guard fields[1] == hostKey.type, blob == hostKey.blob else { continue }
                    for name in patterns {
                        if name.hasPrefix("|1|") {
                            guard let entry = Self.hashedEntry(name) else { continue }
                            hashed.append(entry)
                        } else if !name.hasPrefix("!") {
                            names.append(String(name))
                        }
                    }
                case "@revoked":
                    if blob == hostKey.blob || blob == certificate?.signatureKey { revoked = true }
                case "@cert-authority":
                    if let certificate, blob == certificate.signatureKey { authorities.append(patterns) }
                default:
                    continue
                }
            }
        }
        if revoked {
            names = []
            hashed = []
            return
        }
        guard let certificate, certificate.isValidHostCertificate(at: now) else { return }
        for principal in certificate.principals where !names.contains(principal) {
            let candidate = principal.lowercased()
            if authorities.contains(where: { HostPattern.list($0.map(String.init), accepts: { Self.entry($0, names: candidate) }) }) {
                names.append(principal)
            }
        }
    }

    /// Seconds since the epoch now (the wall clock: a certificate's validity is in those).
    public static func now() -> UInt64 { UInt64(Swift.max(0, Date().timeIntervalSince1970)) }

    /// The salt and hash of a hashed name (`|1|salt|hash`), or `nil` when it is malformed.
    private static func hashedEntry(_ name: Substring) -> (salt: [UInt8], hash: [UInt8])? {
        let parts = name.split(separator: "|")
        guard parts.count == 3, let salt = Base64.decode(parts[1]), let hash = Base64.decode(parts[2]) else { return nil }
        return (salt, hash)
    }

    /// Whether `pattern` of a known_hosts line (a wildcard pattern, or a hashed name) names `name` (lowercased).
    private static func entry(_ pattern: String, names name: String) -> Bool {
        guard pattern.hasPrefix("|1|") else { return HostPattern.matches(pattern, name) }
        guard let entry = hashedEntry(Substring(pattern)) else { return false }
        return Self.hash(name, salt: entry.salt) == entry.hash
    }

    private static func hash(_ name: String, salt: [UInt8]) -> [UInt8] {
        Array(HMAC<Insecure.SHA1>.authenticationCode(for: Array(name.utf8), using: SymmetricKey(data: salt)))
    }

    /// The files of `home` and the system's.
    public static func load(hostKey: SSHPublicKey, certificate: HostCertificate? = nil, home: String?) -> KnownHosts {
        let paths = (home.map { [$0 + "/.ssh/known_hosts", $0 + "/.ssh/known_hosts2"] } ?? []) + ["/etc/ssh/ssh_known_hosts"]
        let texts = paths.compactMap { path -> String? in
            guard let data = FileManager.default.contents(atPath: path), data.count <= 16 << 20 else { return nil }
            return String(decoding: data, as: UTF8.self)
        }
        return KnownHosts(hostKey: hostKey, certificate: certificate, texts: texts)
    }

    public var isEmpty: Bool { names.isEmpty && hashed.isEmpty }

    /// Whether `pattern` (one of a key's `hosts`) names this host: against each name in the clear (and the host of
    /// a `[host]:port` name), and, when it has no wildcard, against the hashed names.
    public func matches(_ pattern: String) -> Bool {
        for name in names {
            if HostPattern.matches(pattern, name) { return true }
            if name.hasPrefix("["), let close = name.firstIndex(of: "]"), !pattern.hasPrefix("["),
               HostPattern.matches(pattern, name[name.index(after: name.startIndex)..<close]) {
                return true
            }
        }
        guard HostPattern.isLiteral(pattern) else { return false }
        let candidate = pattern.lowercased()
        return hashed.contains { Self.hash(candidate, salt: $0.salt) == $0.hash }
    }

    /// A name to show for this host: the first in the clear, else that it is known only hashed.
    public var label: String? { names.first ?? (hashed.isEmpty ? nil : "(hashed known_hosts entry)") }
}

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

/// What known_hosts files say of one host key: the names it is listed under, in the clear or hashed
/// (`|1|salt|hash`: HMAC-SHA1 of the name under the salt, so a name can be checked but not read).
public struct KnownHosts: Sendable {
    public private(set) var names: [String] = []
    public private(set) var hashed: [(salt: [UInt8], hash: [UInt8])] = []

    public init() {}

    /// The entries of `texts` (known_hosts files' contents) for `hostKey`; `@revoked` and `@cert-authority`
    /// lines are not names of it.
    public init(hostKey: SSHPublicKey, texts: [String]) {
        for text in texts {
            for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
                let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard fields.count >= 3, !fields[0].hasPrefix("#"), !fields[0].hasPrefix("@") else { continue }
                guard fields[1] == hostKey.type, Base64.decode(fields[2]) == hostKey.blob else { continue }
                for name in fields[0].split(separator: ",") {
                    if name.hasPrefix("|1|") {
                        let parts = name.split(separator: "|")
                        guard parts.count == 3, let salt = Base64.decode(parts[1]), let hash = Base64.decode(parts[2]) else { continue }
                        hashed.append((salt, hash))
                    } else if !name.hasPrefix("!") {
                        names.append(String(name))
                    }
                }
            }
        }
    }

    /// The files of `home` and the system's.
    public static func load(hostKey: SSHPublicKey, home: String?) -> KnownHosts {
        let paths = (home.map { [$0 + "/.ssh/known_hosts", $0 + "/.ssh/known_hosts2"] } ?? []) + ["/etc/ssh/ssh_known_hosts"]
        let texts = paths.compactMap { path -> String? in
            guard let data = FileManager.default.contents(atPath: path), data.count <= 16 << 20 else { return nil }
            return String(decoding: data, as: UTF8.self)
        }
        return KnownHosts(hostKey: hostKey, texts: texts)
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
        let candidate = Array(pattern.lowercased().utf8)
        return hashed.contains { entry in
            Array(HMAC<Insecure.SHA1>.authenticationCode(for: candidate, using: SymmetricKey(data: entry.salt))) == entry.hash
        }
    }

    /// A name to show for this host: the first in the clear, else that it is known only hashed.
    public var label: String? { names.first ?? (hashed.isEmpty ? nil : "(hashed known_hosts entry)") }
}

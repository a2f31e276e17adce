import FoundationEssentials
import Glibc
import VaultCore
import VaultSyncCore
import VaultCredentials

// git's credential-helper protocol as `vault credential` speaks it (git-credential(1)): the answer, git's
// configuration, and the slots a credential is stored in; the request is in GitCredentialRequest.swift.

/// Where the helper keeps one credential of a host (+ path): the pseudo-realm of its ``ProtectionSpace``.
///
/// - `git` (or `git/<path>` with `credential.useHttpPath`): the **shared** slot, the first username's; a
///   server whose Basic realm is literally `git` shares it with `vault login`/`fetch`.
/// - `git@<username, percent-encoded>` (`git@<u>/<path>`): any other username's own slot.
/// - `git!` (`git!/<path>`): a pre-encoded credential without username (`authtype` + `credential`).
struct GitSlot: Equatable {
    enum Kind: Equatable {
        case shared
        case user(String)
        case preEncoded
    }

    var kind: Kind
    var path: String?

    init(kind: Kind, path: String?) {
        self.kind = kind
        self.path = path
    }

    /// Reads a slot back from a realm; `nil` for realms that are not the helper's.
    init?(realm: String) {
        guard realm.hasPrefix("git") else { return nil }
        let rest = realm.dropFirst(3)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let head = rest[..<slash]
        path = slash == rest.endIndex ? nil : String(rest[rest.index(after: slash)...])
        if path?.isEmpty == true { return nil }
        switch head.first {
        case nil: kind = .shared
        case "!" where head.count == 1: kind = .preEncoded
        case "@":
            guard let user = ProtectionSpace.percentDecode(head.dropFirst()),
                  ProtectionSpace.percentEncode(user) == head.dropFirst()
            else { return nil }
            kind = .user(user)
        default: return nil
        }
    }

    var realm: String {
        let base: String
        switch kind {
        case .shared: base = "git"
        case let .user(name): base = "git@" + ProtectionSpace.percentEncode(name)
        case .preEncoded: base = "git!"
        }
        return path.map { base + "/" + $0 } ?? base
    }
}

/// One credential the helper stored for a host (+ path).
struct GitRecord {
    let space: ProtectionSpace
    let slot: GitSlot
    let credential: Credential?
    let extras: CredentialExtras
    let modified: Date

    /// The helper's records of `origin` and `path` (of every path with `anyPath`); other realms are not read.
    static func all(
        in credentials: VaultCredentialStore, origin: Origin, path: String?, anyPath: Bool = false
    ) throws -> [GitRecord] {
        try credentials.storedSpaces().compactMap { space in
            guard space.origin == origin, let slot = GitSlot(realm: space.realm), anyPath || slot.path == path
            else { return nil }
            let credential = try credentials.credential(for: space)
            let extras = try credentials.extras(for: space)
            guard credential != nil || extras.authCredential != nil else { return nil }
            return GitRecord(
                space: space, slot: slot, credential: credential, extras: extras,
                modified: try credentials.lastModified(of: space) ?? .distantPast)
        }
    }

    /// The spaces of every record of the helper's, of any host and path, whose expiry has passed.
    static func expired(in credentials: VaultCredentialStore, now: Int64) throws -> [ProtectionSpace] {
        try credentials.storedSpaces().filter { space in
            guard GitSlot(realm: space.realm) != nil,
                  let expiry = try credentials.extras(for: space).passwordExpiryUTC.flatMap({ Int64($0) })
            else { return false }
            return expiry <= now
        }
    }

    /// Whether its `password_expiry_utc` has passed (git does not use an expired password).
    func isExpired(now: Int64) -> Bool {
        guard let expiry = extras.passwordExpiryUTC.flatMap({ Int64($0) }) else { return false }
        return expiry <= now
    }
}

/// The helper's answer, assembled in guarded memory and written at once: `key=value` lines.
struct GitCredentialOutput {
    private var parts: [(key: String, text: String?, secret: SecureBytes?)] = []

    mutating func add(_ key: String, _ value: String) throws {
        guard !value.utf8.contains(where: { $0 == 0 || $0 == 0x0A || $0 == 0x0D }) else {
            throw CredentialHelperError.unprintableValue(key: key)
        }
        parts.append((key, value, nil))
    }

    mutating func add(_ key: String, _ value: SecureBytes) throws {
        // A carriage return too: git before 2.47 splits lines at it (CVE-2024-52006), so a stored
        // "alice\rpassword=…" would be read as a second key.
        guard !value.withUnsafeBytes({ $0.contains(where: { $0 == 0 || $0 == 0x0A || $0 == 0x0D }) }) else {
            throw CredentialHelperError.unprintableValue(key: key)
        }
        parts.append((key, nil, value))
    }

    func bytes() -> SecureBytes {
        let count = parts.reduce(0) { $0 + $1.key.utf8.count + 2 + ($1.text?.utf8.count ?? $1.secret?.count ?? 0) }
        return SecureBytes(capacity: count) { out in
            for part in parts {
                out.append(part.key + "=")
                if let text = part.text { out.append(text) }
                if let secret = part.secret { out.append(secret) }
                out.append(UInt8(ascii: "\n"))
            }
        }
    }
}

/// git's configuration as the helper sees it: git runs helpers with the caller's `-c` options in the
/// environment (`GIT_CONFIG_PARAMETERS`) and in the repository's directory, so `git config` reads the same.
enum GitConfiguration {
    /// `false` when `credential.interactive` is false (`false`, `no`, `off`, `0`, or `never`): the helper must
    /// not ask. Asked only when the helper is about to prompt.
    static func allowsPrompts() -> Bool {
        guard let result = try? Git(directory: ".").run(["config", "--get", "credential.interactive"]) else { return true }
        let value = result.text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        return !["false", "no", "off", "0", "never"].contains(value)
    }
}

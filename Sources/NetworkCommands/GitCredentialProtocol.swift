import ArgumentParser
import Foundation
import VaultAuth
import VaultCommands
import VaultCore
import VaultTerminal

// git's credential-helper protocol as `vault credential` speaks it (git-credential(1)): the request, the
// answer, git's configuration, and the slots a credential is stored in.

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
        guard !value.utf8.contains(where: { $0 == 0 || $0 == 0x0A }) else {
            throw CredentialHelperError.unprintableValue(key: key)
        }
        parts.append((key, value, nil))
    }

    mutating func add(_ key: String, _ value: SecureBytes) throws {
        guard !value.withUnsafeBytes({ $0.contains(where: { $0 == 0 || $0 == 0x0A }) }) else {
            throw CredentialHelperError.unprintableValue(key: key)
        }
        parts.append((key, nil, value))
    }

    func bytes() -> SecureBytes {
        let count = parts.reduce(0) { $0 + $1.key.utf8.count + 2 + ($1.text?.utf8.count ?? $1.secret?.count ?? 0) }
        return SecureBytes(count: count) { buffer in
            var offset = 0
            func append(_ bytes: UnsafeRawBufferPointer) {
                UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + bytes.count)]).copyMemory(from: bytes)
                offset += bytes.count
            }
            for part in parts {
                Array((part.key + "=").utf8).withUnsafeBytes(append)
                if let text = part.text { Array(text.utf8).withUnsafeBytes(append) }
                part.secret?.withUnsafeBytes(append)
                [UInt8(ascii: "\n")].withUnsafeBytes(append)
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
        let git = Process()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        git.arguments = ["git", "config", "--get", "credential.interactive"]
        let output = Pipe()
        git.standardOutput = output
        git.standardError = FileHandle.nullDevice
        git.standardInput = FileHandle.nullDevice
        guard (try? git.run()) != nil else { return true }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        git.waitUntilExit()
        let value = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        return !["false", "no", "off", "0", "never"].contains(value)
    }
}

/// One request of git's credential-helper protocol: `key=value` lines up to a blank line or end of input.
struct GitCredentialRequest {
    var `protocol`: String?
    var host: String?
    var path: String?
    var username: String?
    var password: SecureBytes?
    /// A valid `password_expiry_utc` (decimal Unix seconds, more than 0); anything else is ignored, as git does.
    var passwordExpiryUTC: Int64?
    var oauthRefreshToken: SecureBytes?
    /// `capability[]` values (`authtype`, `state`, ...).
    var capabilities: Set<String> = []
    var authType: String?
    var authCredential: SecureBytes?
    var ephemeral = false
    /// The key whose value named the host (`host` or `url`), for messages.
    var hostKey = "host"

    /// `authtype` and `credential`, when both are given.
    var preEncoded: (type: String, credential: SecureBytes)? {
        guard let authType, !authType.isEmpty, let authCredential else { return nil }
        return (authType, authCredential)
    }

    /// The longest line accepted, in bytes.
    static let maximumLineByteCount = 64 << 10

    /// Reads the request from `fd` one line at a time, stopping at the blank line (nothing after it is read).
    /// Secrets (`password`, `oauth_refresh_token`, `credential`, and a password inside `url=`) go straight into
    /// guarded memory. Unknown keys (`wwwauth[]`, `state[]`, `continue`, `quit`, ...) are ignored; a line with
    /// a NUL or a carriage return refuses the whole request.
    static func read(fd: Int32) throws -> GitCredentialRequest {
        var request = GitCredentialRequest()
        while true {
            let line = try SecretInput.read(fd: fd, limit: maximumLineByteCount, untilNewline: true, name: "stdin")
            if line.count == 0 { break }  // blank line or end of input
            let equals: Int? = line.withUnsafeBytes { $0.firstIndex(of: UInt8(ascii: "=")) }
            let key = line.withUnsafeBytes { String(decoding: $0[..<(equals ?? $0.count)], as: UTF8.self) }
            for (byte, name) in [(UInt8(0), "NUL"), (UInt8(ascii: "\r"), "carriage return")]
            where line.withUnsafeBytes({ $0.contains(byte) }) {
                throw CredentialHelperError.forbiddenByte(key: key, byte: name)
            }
            guard let equals else { continue }
            func secret() -> SecureBytes {
                line.withUnsafeBytes { bytes in
                    let value = UnsafeRawBufferPointer(rebasing: bytes[(equals + 1)...])
                    return SecureBytes(count: value.count) { $0.copyMemory(from: value) }
                }
            }
            switch key {
            case "password": request.password = secret(); continue
            case "oauth_refresh_token": request.oauthRefreshToken = secret(); continue
            case "credential": request.authCredential = secret(); continue
            case "url": try request.apply(url: line, from: equals + 1); continue
            default: break
            }
            let value = line.withUnsafeBytes { String(decoding: $0[(equals + 1)...], as: UTF8.self) }
            switch key {
            case "protocol": request.protocol = value
            case "host": request.host = value; request.hostKey = "host"
            case "path": request.path = value.isEmpty ? nil : value
            case "username": request.username = value
            case "password_expiry_utc":
                request.passwordExpiryUTC = Int64(value).flatMap { $0 > 0 ? $0 : nil }
            case "capability[]": request.capabilities.insert(value)
            case "authtype": request.authType = value
            case "ephemeral": request.ephemeral = ["true", "yes", "on", "1"].contains(value.lowercased())
            default: break
            }
        }
        return request
    }

    /// `url=<protocol>://[<user>[:<password>]@]<host>[/<path>]` stands for its parts, percent-decoded, as git
    /// reads it (git-credential(1)): it clears what came before it, and later keys override its parts. A
    /// decoded part with a NUL, newline or carriage return refuses the request.
    mutating func apply(url line: SecureBytes, from start: Int) throws {
        self.protocol = nil; host = nil; path = nil; username = nil; password = nil
        hostKey = "url"
        try line.withUnsafeBytes { all in
            let value = UnsafeRawBufferPointer(rebasing: all[start...])
            guard let schemeEnd = Self.find(Array("://".utf8), in: value) else {
                throw CredentialHelperError.malformedHost(key: "url")
            }
            self.protocol = String(decoding: value[..<schemeEnd], as: UTF8.self)
            let authorityStart = schemeEnd + 3
            let slash = value[authorityStart...].firstIndex(of: UInt8(ascii: "/")) ?? value.count
            var hostStart = authorityStart
            if let at = value[authorityStart..<slash].firstIndex(of: UInt8(ascii: "@")) {
                let colon = value[authorityStart..<at].firstIndex(of: UInt8(ascii: ":"))
                username = try Self.decodedText(value[authorityStart..<(colon ?? at)], key: "url")
                if let colon {
                    password = try Self.decodedSecret(UnsafeRawBufferPointer(rebasing: value[(colon + 1)..<at]))
                }
                hostStart = at + 1
            }
            host = try Self.decodedText(value[hostStart..<slash], key: "url")
            if slash < value.count {
                let decoded = try Self.decodedText(value[(slash + 1)...], key: "url")
                path = decoded.isEmpty ? nil : decoded
            }
        }
    }

    private static func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { start in
            needle.indices.allSatisfy { haystack[start + $0] == needle[$0] }
        }
    }

    /// Percent-decodes `bytes` into guarded memory (an escape that is not `%XX` stays as it is, as in git).
    private static func decodedSecret(_ bytes: UnsafeRawBufferPointer) throws -> SecureBytes {
        var count = 0
        var index = 0
        while index < bytes.count {
            index += hexValue(bytes, at: index) != nil ? 3 : 1
            count += 1
        }
        let decoded = SecureBytes(count: count) { out in
            var index = 0
            var written = 0
            while index < bytes.count {
                if let byte = hexValue(bytes, at: index) {
                    out[written] = byte
                    index += 3
                } else {
                    out[written] = bytes[index]
                    index += 1
                }
                written += 1
            }
        }
        guard !decoded.withUnsafeBytes({ $0.contains { $0 == 0 || $0 == 0x0A || $0 == 0x0D } }) else {
            throw CredentialHelperError.forbiddenByte(key: "url", byte: "NUL, newline or carriage return (decoded)")
        }
        return decoded
    }

    private static func decodedText(_ bytes: Slice<UnsafeRawBufferPointer>, key: String) throws -> String {
        let decoded = try decodedSecret(UnsafeRawBufferPointer(rebasing: bytes))
        return decoded.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The byte of a `%XX` escape at `index`, or `nil`.
    private static func hexValue(_ bytes: UnsafeRawBufferPointer, at index: Int) -> UInt8? {
        guard bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count else { return nil }
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        guard let high = nibble(bytes[index + 1]), let low = nibble(bytes[index + 2]) else { return nil }
        return high << 4 | low
    }

    /// The origin of `protocol` + `host`; `nil` when the protocol is not http/https or there is no host.
    ///
    /// - Throws: ``CredentialHelperError/malformedHost(key:)`` when `host` is not exactly `host[:port]`
    ///   (``Origin/init(scheme:authority:)``): nothing is stored under, or read from, another host than the one
    ///   named.
    func origin() throws -> Origin? {
        guard let scheme = self.protocol?.lowercased(), scheme == "http" || scheme == "https",
              let host, !host.isEmpty
        else { return nil }
        guard let origin = Origin(scheme: scheme, authority: host) else {
            throw CredentialHelperError.malformedHost(key: hostKey)
        }
        return origin
    }
}

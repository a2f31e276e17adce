import VaultCore
import VaultCredentials
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

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

    /// The longest line of a key the helper reads, in bytes; lines of other keys (`wwwauth[]`, `state[]`, …)
    /// are skipped whatever their length.
    static let maximumLineByteCount = 64 << 10
    /// The most bytes a request may have, all lines together.
    static let maximumRequestByteCount = 16 << 20
    /// The keys the helper reads; every other line is skipped unread.
    static let knownKeys: Set<String> = [
        "protocol", "host", "path", "username", "password", "password_expiry_utc", "oauth_refresh_token",
        "capability[]", "authtype", "credential", "ephemeral", "url",
    ]

    /// Reads the request from `fd` up to the blank line (or end of input), in 64 KiB reads into guarded memory.
    /// Secrets (`password`, `oauth_refresh_token`, `credential`, and a password inside `url=`) stay in guarded
    /// memory. Lines of keys the helper does not read are skipped as they arrive (never kept, whatever their
    /// length); a line with a NUL or a carriage return (also just before its newline) refuses the whole request,
    /// as does a request over ``maximumRequestByteCount`` bytes or a line of a read key over
    /// ``maximumLineByteCount``. A `path` or `username` that is not UTF-8 is refused rather than decoded
    /// lossily (two paths would share one slot).
    static func read(fd: Int32) throws -> GitCredentialRequest {
        var request = GitCredentialRequest()
        let pending = SecretBuffer()
        var total = 0
        var skipping = false  // inside a line of a key the helper does not read
        var ended = false
        readLoop: while !ended {
            let result: Result<Int, Posix.Errno> = pending.append(upTo: 64 << 10) { space in
                Posix.valueOrErrno { Glibc.read(fd, space.baseAddress, space.count) }
            }
            let count: Int
            switch result {
            case .failure(let error): throw VaultError.io(operation: "cannot read", path: "stdin", errno: error.code)
            case .success(let n): count = n
            }
            total += count
            guard total <= maximumRequestByteCount else { throw CredentialHelperError.requestTooLarge }
            if count == 0 { ended = true }
            // Every complete line now in `pending` (and at the end, the last one without its newline).
            while true {
                let line: (end: Int, next: Int)? = pending.withUnsafeBytes { bytes in
                    if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) { return (newline, newline + 1) }
                    return ended && bytes.count > 0 ? (bytes.count, bytes.count) : nil
                }
                guard let line else { break }
                let done: Bool = try pending.withUnsafeBytes { bytes in
                    let text = UnsafeRawBufferPointer(rebasing: bytes[0..<line.end])
                    if skipping {
                        try Self.checkForbidden(text, key: "(skipped)")
                        skipping = false
                        return false
                    }
                    if text.isEmpty { return true }  // the blank line ends the request
                    try request.take(line: text)
                    return false
                }
                pending.removeFirst(line.next)
                if done { break readLoop }
            }
            // A line still without its newline: kept if its key is read (up to the limit), else skipped.
            if !ended, pending.count > 0 {
                let decision: Int = try pending.withUnsafeBytes { bytes in
                    if skipping {
                        try Self.checkForbidden(bytes, key: "(skipped)")
                        return 1  // drop it all
                    }
                    let equals = bytes.prefix(256).firstIndex(of: UInt8(ascii: "="))
                    let key = equals.map { String(decoding: bytes[..<$0], as: UTF8.self) }
                    if let key, !Self.knownKeys.contains(key) {
                        try Self.checkForbidden(bytes, key: key)
                        return 2  // skip this line from here on
                    }
                    if equals == nil && bytes.count > 256 { return 2 }  // no key at all: git ignores such lines
                    guard bytes.count <= maximumLineByteCount else {
                        throw SecretInputError.tooLong(source: "stdin", limit: maximumLineByteCount)
                    }
                    return 0
                }
                if decision > 0 {
                    pending.wipe()
                    skipping = true
                }
            }
        }
        return request
    }

    /// Refuses a NUL or a carriage return in `bytes` (git's CVE-2020-5260 and CVE-2024-52006 classes).
    private static func checkForbidden(_ bytes: UnsafeRawBufferPointer, key: String) throws {
        for (byte, name) in [(UInt8(0), "NUL"), (UInt8(ascii: "\r"), "carriage return")] where bytes.contains(byte) {
            throw CredentialHelperError.forbiddenByte(key: key, byte: name)
        }
    }

    /// Takes one line (without its newline) into the request.
    private mutating func take(line: UnsafeRawBufferPointer) throws {
        let equals = line.firstIndex(of: UInt8(ascii: "="))
        let key = String(decoding: line[..<(equals ?? line.count)], as: UTF8.self)
        try Self.checkForbidden(line, key: key)
        guard let equals, Self.knownKeys.contains(key) else { return }
        guard line.count <= Self.maximumLineByteCount else {
            throw SecretInputError.tooLong(source: "stdin", limit: Self.maximumLineByteCount)
        }
        let raw = UnsafeRawBufferPointer(rebasing: line[(equals + 1)...])
        func secret() -> SecureBytes { SecureBytes(count: raw.count) { $0.copyMemory(from: raw) } }
        switch key {
        case "password": password = secret(); return
        case "oauth_refresh_token": oauthRefreshToken = secret(); return
        case "credential": authCredential = secret(); return
        case "url": try apply(url: raw); return
        default: break
        }
        guard let value = String(validating: raw, as: UTF8.self) else { throw CredentialHelperError.notUTF8(key: key) }
        switch key {
        case "protocol": self.protocol = value
        case "host": host = value; hostKey = "host"
        case "path": path = value.isEmpty ? nil : value
        case "username": username = value
        case "password_expiry_utc":
            passwordExpiryUTC = Int64(value).flatMap { $0 > 0 ? $0 : nil }
        case "capability[]": capabilities.insert(value)
        case "authtype": authType = value
        case "ephemeral": ephemeral = ["true", "yes", "on", "1"].contains(value.lowercased())
        default: break
        }
    }

    /// `url=<protocol>://[<user>[:<password>]@]<host>[/<path>]` stands for its parts, percent-decoded, exactly
    /// as git reads it (`credential_from_url_1` in git's credential.c): the authority ends at the first `/`, `?`
    /// or `#`; a `@` counts only before that end; leading and trailing slashes of the path are dropped. An
    /// authority ended by `?` or `#` refuses the request (git's CVE-2020-11008: `https://alice:443#@victim.example/`
    /// is host `alice:443` to git and `victim.example` to other parsers; no repository URL has that shape). It
    /// clears what came before it, and later keys override its parts. A decoded part with a NUL, newline or
    /// carriage return, or a username, host or path that is not UTF-8, refuses the request.
    mutating func apply(url value: UnsafeRawBufferPointer) throws {
        self.protocol = nil; host = nil; path = nil; username = nil; password = nil
        hostKey = "url"
        guard let schemeEnd = Self.find(Array("://".utf8), in: value) else {
            throw CredentialHelperError.malformedHost(key: "url")
        }
        guard let scheme = String(validating: value[..<schemeEnd], as: UTF8.self) else { throw CredentialHelperError.notUTF8(key: "url") }
        self.protocol = scheme
        let authorityStart = schemeEnd + 3
        let end = value[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? value.count
        guard end == value.count || value[end] == UInt8(ascii: "/") else { throw CredentialHelperError.ambiguousURL }
        var hostStart = authorityStart
        if let at = value[authorityStart..<end].firstIndex(of: UInt8(ascii: "@")) {
            let colon = value[authorityStart..<at].firstIndex(of: UInt8(ascii: ":"))
            username = try Self.decodedText(value[authorityStart..<(colon ?? at)], key: "url")
            if let colon {
                password = try Self.decodedSecret(UnsafeRawBufferPointer(rebasing: value[(colon + 1)..<at]))
            }
            hostStart = at + 1
        }
        host = try Self.decodedText(value[hostStart..<end], key: "url")
        var pathStart = end
        while pathStart < value.count, value[pathStart] == UInt8(ascii: "/") { pathStart += 1 }
        if pathStart < value.count {
            var decoded = try Self.decodedText(value[pathStart...], key: "url")
            while decoded.count > 1, decoded.hasSuffix("/") { decoded.removeLast() }
            path = decoded.isEmpty ? nil : decoded
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
        let decoded = SecureBytes(capacity: count) { out in
            var index = 0
            while index < bytes.count {
                if let byte = hexValue(bytes, at: index) {
                    out.append(byte)
                    index += 3
                } else {
                    out.append(bytes[index])
                    index += 1
                }
            }
        }
        guard !decoded.withUnsafeBytes({ $0.contains { $0 == 0 || $0 == 0x0A || $0 == 0x0D } }) else {
            throw CredentialHelperError.forbiddenByte(key: "url", byte: "NUL, newline or carriage return (decoded)")
        }
        return decoded
    }

    private static func decodedText(_ bytes: Slice<UnsafeRawBufferPointer>, key: String) throws -> String {
        let decoded = try decodedSecret(UnsafeRawBufferPointer(rebasing: bytes))
        guard let text = decoded.withUnsafeBytes({ String(validating: $0, as: UTF8.self) }) else {
            throw CredentialHelperError.notUTF8(key: key)
        }
        return text
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

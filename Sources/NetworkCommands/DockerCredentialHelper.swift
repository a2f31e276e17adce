import ArgumentParser
import Foundation
import VaultAuth
import VaultCommands
import VaultCore
import VaultTerminal

/// `docker-credential-vault store|get|erase|list|version` (a symbolic link to `vault` or `vault-net`, which
/// dispatch on their name), also `vault docker-credential ACTION`: the credential-helper protocol of
/// docker-credential-helpers (`credentials/credentials.go`), which the docker CLI and containers/image
/// (podman, skopeo, buildah) run for `credsStore`/`credHelpers`.
///
/// As that library does: the action is the one argument; `store` reads `{"ServerURL","Username","Secret"}`,
/// `get` and `erase` read the server URL (surrounding white space trimmed), `get` prints
/// `{"ServerURL","Username","Secret"}`, `list` prints `{"<server URL>":"<username>",...}`; every failure is one
/// line **on stdout** and exit 1, and a miss is exactly `credentials not found in native keychain`.
/// A `Username` of `<token>` marks an identity token in `Secret`; it is kept and returned as given.
///
/// Entries are kept by ``VaultCredentialStore`` in the protection space of the server URL's origin (`https`
/// when it has no scheme) with the pseudo-realm `docker/<server URL exactly>`, so `vault logout` of the
/// registry's origin removes them too and `list` gives back each server URL as the client stored it.
package struct DockerCredentialHelper: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "docker-credential",
        abstract: NetworkVerb.dockerCredential.abstract,
        discussion: """
            Link vault-net (or vault, one exec more) as docker-credential-vault on PATH and name it in ~/.docker/config.json ("credsStore": "vault") or in a credHelpers entry of containers' auth.json. The vault is VAULT_PATH or the default; the passphrase comes from the agent (vault unlock), VAULT_PASSPHRASE or the terminal. `list` never asks: with the vault locked it fails.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "store, get, erase, list or version.")
    var action: String

    /// The message every helper prints for a miss; clients compare it exactly.
    static let notFound = "credentials not found in native keychain"
    /// Pseudo-realm prefix of the helper's entries.
    static let realmPrefix = "docker/"
    /// The most stdin accepted (a `store` request), in bytes.
    static let maximumInputByteCount = 1 << 20

    package func run() async throws {
        VaultOptions.caller = "docker credential helper"
        do {
            try perform()
        } catch let error as DockerHelperFailure {
            // One line, whatever the input held (a server URL with a newline or NUL is echoed escaped).
            try? writeToStdout(TerminalText.escaped(error.message) + "\n")
            throw ExitCode(1)
        } catch let error as ExitCode {
            throw error
        } catch {
            // Library errors: the words the CLI uses (message, hint), as one line on stdout.
            let reportable = error as? any CLIReportable
            let text = (reportable?.message ?? "\(error)") + (reportable?.hint.map { " (\($0))" } ?? "")
            try? writeToStdout(TerminalText.escaped(text) + "\n")
            throw ExitCode(1)
        }
    }

    func perform() throws {
        switch action {
        case "store":
            let input = try SecretInput.read(fd: 0, limit: Self.maximumInputByteCount, untilNewline: false, name: "stdin")
            let fields = try JSONStringObject.parse(input)
            guard let serverURL = fields["ServerURL"]?.stringValue, !serverURL.isEmpty else {
                throw DockerHelperFailure("no credentials server URL")
            }
            guard let username = fields["Username"]?.stringValue, !username.isEmpty else {
                throw DockerHelperFailure("no credentials username")
            }
            let space = try Self.space(for: serverURL)
            try withVault(mayPrompt: true, createIfMissing: true) { credentials in
                let secret = fields["Secret"] ?? SecureBytes(count: 0) { _ in }
                var changes = SecureKeyValueStore.Changes()
                let isPrimary = try credentials.primary() == space
                try credentials.stage(
                    Credential(username: username, password: secret), for: space, asPrimary: isPrimary, into: &changes)
                try credentials.store.write(changes)
            }
        case "get":
            let space = try Self.space(for: try Self.readServerURL())
            let credential = try withVault(mayPrompt: true) { try $0.credential(for: space) }
            guard let credential = credential ?? nil else { throw DockerHelperFailure(Self.notFound) }
            var json = JSONObjectWriter()
            json.add("ServerURL", Self.serverURL(of: space))
            json.add("Username", credential.username)
            json.add("Secret", credential.password)
            try json.bytes().withUnsafeBytes { try writeToStdout($0) }
        case "erase":
            let space = try Self.space(for: try Self.readServerURL())
            let removed = try withVault(mayPrompt: true) { credentials -> Bool in
                guard try credentials.credential(for: space) != nil else { return false }
                try credentials.removeCredential(for: space)
                return true
            }
            guard removed == true else { throw DockerHelperFailure(Self.notFound) }
        case "list":
            let entries = try withVault(mayPrompt: false) { credentials in
                try credentials.storedSpaces().compactMap { space -> (String, String)? in
                    guard let serverURL = Self.serverURL(of: space),
                          let username = try credentials.credential(for: space)?.username
                    else { return nil }
                    return (serverURL, username)
                }
            } ?? []
            var json = JSONObjectWriter()
            for (serverURL, username) in entries.sorted(by: { $0.0 < $1.0 }) { json.add(serverURL, username) }
            try json.bytes().withUnsafeBytes { try writeToStdout($0) }
        case "version":
            try writeToStdout("docker-credential-vault (vault) 1\n")
        default:
            throw DockerHelperFailure("Unknown credential action `\(action)`")
        }
    }

    /// Runs `body` on the vault's credentials; `nil` without running it when there is no vault file (unless
    /// `createIfMissing`, where opening reports the missing vault). `mayPrompt: false`: the agent or a
    /// passphrase source only, else a failure that names `vault unlock`.
    func withVault<R>(
        mayPrompt: Bool, createIfMissing: Bool = false, _ body: (VaultCredentialStore) throws -> R
    ) throws -> R? {
        if !createIfMissing && !options.makeStore().exists { return nil }
        let vault: any KeyValueVault
        if mayPrompt || options.hasPassphraseSource {
            vault = try openVault(options)
        } else if let unlocked = try AgentAccess.vault(for: options, mayPrompt: false) {
            vault = unlocked
        } else {
            throw DockerHelperFailure("the vault '\(options.resolvedPath)' is locked (run 'vault unlock'); not asking")
        }
        defer { vault.close() }
        return try body(VaultCredentialStore(store: vault))
    }

    /// The server URL on stdin, white space around it trimmed.
    static func readServerURL() throws -> String {
        let input = try SecretInput.read(fd: 0, limit: maximumInputByteCount, untilNewline: false, name: "stdin")
        let text = input.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw DockerHelperFailure("no credentials server URL") }
        return trimmed
    }

    /// The protection space of `serverURL`: `[http(s)://]host[:port][/path]`, its origin exactly the host named
    /// (``Origin/init(scheme:authority:)``), realm `docker/<serverURL>`.
    static func space(for serverURL: String) throws -> ProtectionSpace {
        let refused = DockerHelperFailure("not a registry server URL (scheme://host[:port][/path]): '\(serverURL)'")
        guard !serverURL.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { throw refused }
        var scheme = "https"
        var rest = Substring(serverURL)
        if let separator = serverURL.range(of: "://") {
            scheme = String(serverURL[..<separator.lowerBound])
            rest = serverURL[separator.upperBound...]
        }
        let authority = rest.prefix { $0 != "/" }
        guard let origin = Origin(scheme: scheme, authority: String(authority)) else { throw refused }
        return ProtectionSpace(origin: origin, realm: realmPrefix + serverURL)
    }

    /// The server URL a space of this helper was stored for, or `nil` for another realm.
    static func serverURL(of space: ProtectionSpace) -> String? {
        guard space.realm.hasPrefix(realmPrefix) else { return nil }
        let serverURL = String(space.realm.dropFirst(realmPrefix.count))
        guard (try? Self.space(for: serverURL)) == space else { return nil }
        return serverURL
    }
}

/// A failure reported the way docker-credential-helpers does: the message alone, on stdout, exit 1.
struct DockerHelperFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A JSON object whose values are strings, e.g. `{"ServerURL":"…","Username":"…","Secret":"…"}`, read from
/// guarded memory; each value is decoded into guarded memory (the `Secret` never passes through a `String`).
/// Keys other than strings, and values other than strings, refuse the input.
enum JSONStringObject {
    static func parse(_ input: SecureBytes) throws -> [String: SecureBytes] {
        try input.withUnsafeBytes { bytes in
            var parser = Parser(bytes: bytes)
            return try parser.object()
        }
    }

    struct Parser {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        static let malformed = DockerHelperFailure("the input is not a JSON object of strings")

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ byte: UInt8) throws {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else { throw Self.malformed }
            index += 1
        }

        mutating func object() throws -> [String: SecureBytes] {
            var result: [String: SecureBytes] = [:]
            try expect(UInt8(ascii: "{"))
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    let key = try string()
                    try expect(UInt8(ascii: ":"))
                    let value = try string()
                    guard let name = key.stringValue else { throw Self.malformed }
                    result[name] = value
                    skipSpace()
                    guard index < bytes.count else { throw Self.malformed }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "}") { index += 1; break }
                    throw Self.malformed
                }
            }
            skipSpace()
            guard index == bytes.count else { throw Self.malformed }
            return result
        }

        /// A JSON string, decoded: measured first, then written into guarded memory.
        mutating func string() throws -> SecureBytes {
            try expect(UInt8(ascii: "\""))
            let start = index
            var count = 0
            try walk { _ in count += 1 }
            index = start
            return try SecureBytes(count: count) { out in
                var written = 0
                try walk { byte in
                    out[written] = byte
                    written += 1
                }
            }
        }

        /// Calls `emit` with each decoded UTF-8 byte of the string starting at `index`, and moves past its quote.
        mutating func walk(_ emit: (UInt8) -> Void) throws {
            while true {
                guard index < bytes.count else { throw Self.malformed }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw Self.malformed }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): emit(escape)
                    case UInt8(ascii: "b"): emit(0x08)
                    case UInt8(ascii: "f"): emit(0x0C)
                    case UInt8(ascii: "n"): emit(0x0A)
                    case UInt8(ascii: "r"): emit(0x0D)
                    case UInt8(ascii: "t"): emit(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                                  bytes[index + 1] == UInt8(ascii: "u")
                            else { throw Self.malformed }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw Self.malformed }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw Self.malformed }
                        for unit in UTF8.encode(unicode)! { emit(unit) }
                    default: throw Self.malformed
                    }
                case 0..<0x20: throw Self.malformed
                default: emit(byte)
                }
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count else { throw Self.malformed }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                index += 1
                let nibble: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
                default: throw Self.malformed
                }
                value = value << 4 | UInt32(nibble)
            }
            return value
        }
    }
}

/// One JSON object of string members written as Go's `encoding/json` writes it (`<`, `>`, `&` escaped as
/// `\u003c`, `\u003e`, `\u0026`; then a newline), assembled in guarded memory.
struct JSONObjectWriter {
    private var members: [(key: String, text: String?, secret: SecureBytes?)] = []

    mutating func add(_ key: String, _ value: String?) { members.append((key, value ?? "", nil)) }
    mutating func add(_ key: String, _ value: SecureBytes) { members.append((key, nil, value)) }

    /// `byte` as it appears inside a JSON string.
    private static func escaped(_ byte: UInt8) -> [UInt8] {
        switch byte {
        case UInt8(ascii: "\""): return Array("\\\"".utf8)
        case UInt8(ascii: "\\"): return Array("\\\\".utf8)
        case 0x0A: return Array("\\n".utf8)
        case 0x0D: return Array("\\r".utf8)
        case 0x09: return Array("\\t".utf8)
        case 0..<0x20, UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "&"):
            return Array(String(format: "\\u%04x", byte).utf8)
        default: return [byte]
        }
    }

    private static func escapedCount(_ bytes: UnsafeRawBufferPointer) -> Int {
        bytes.reduce(0) { $0 + escaped($1).count }
    }

    func bytes() -> SecureBytes {
        func forEachPiece(_ body: (UnsafeRawBufferPointer, Bool) -> Void) {
            Array("{".utf8).withUnsafeBytes { body($0, false) }
            for (number, member) in members.enumerated() {
                let head = (number > 0 ? "," : "") + "\""
                Array(head.utf8).withUnsafeBytes { body($0, false) }
                Array(member.key.utf8).withUnsafeBytes { body($0, true) }
                Array("\":\"".utf8).withUnsafeBytes { body($0, false) }
                if let text = member.text { Array(text.utf8).withUnsafeBytes { body($0, true) } }
                member.secret?.withUnsafeBytes { body($0, true) }
                Array("\"".utf8).withUnsafeBytes { body($0, false) }
            }
            Array("}\n".utf8).withUnsafeBytes { body($0, false) }
        }
        var count = 0
        forEachPiece { piece, escape in count += escape ? Self.escapedCount(piece) : piece.count }
        return SecureBytes(count: count) { out in
            var offset = 0
            forEachPiece { piece, escape in
                for byte in piece {
                    for unit in escape ? Self.escaped(byte) : [byte] {
                        out[offset] = unit
                        offset += 1
                    }
                }
            }
        }
    }
}

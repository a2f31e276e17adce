import ArgumentParser
import Foundation
import VaultAuth
import VaultCommands
import VaultCore
import VaultTerminal

/// `vault credential get|store|erase`: a git credential helper (git-credential(1), "CUSTOM HELPERS").
///
/// Entries are kept by ``VaultCredentialStore`` under a pseudo-realm, so that `vault logout URL` and the helper
/// agree (docs/AUTH.md, "git credential helper"): realm `git` for `protocol` + `host`, or `git/<path>` when git
/// sends a `path` (`credential.useHttpPath`); the password's expiry when git gave one. The helper never makes
/// its entries the vault's primary credential (the tutorials' `username`/`password`).
package struct CredentialHelper: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "credential",
        abstract: NetworkVerb.credential.abstract,
        discussion: """
            Reads git's key=value lines from stdin up to a blank line or end of input. `get` prints
            username=, password= (and password_expiry_utc=) of a stored credential, or nothing;
            `store` stores; `erase` removes (only when username and password, if given, match).
            Only the http and https protocols are kept. The passphrase comes from --passphrase-fd,
            --passphrase-file, VAULT_PASSPHRASE or the terminal (/dev/tty), never from stdin.
            Other operations are ignored, as git expects.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "get, store or erase.")
    var operation: String

    package func validate() throws {
        if options.passphraseFD == 0 { throw ValidationError("stdin carries git's request: use another --passphrase-fd") }
    }

    /// Pseudo-realm of the helper's entries.
    static let realm = "git"

    package func run() async throws {
        try await reportingErrors(json: options.json) {
            guard ["get", "store", "erase"].contains(operation) else { return }  // git: ignore unknown operations
            let request = try GitCredentialRequest.read(fd: 0)
            guard let space = request.space else {
                if operation == "store", let scheme = request.protocol {
                    FileHandle.standardError.write(Data(
                        "vault: credential: protocol '\(scheme)' is not supported (only http and https); not stored\n".utf8))
                }
                return
            }
            let file = options.makeStore()
            if !file.exists && operation != "store" { return }  // nothing stored anywhere: no passphrase needed
            let vault = try openVault(options)
            defer { vault.close() }
            let credentials = VaultCredentialStore(store: vault)
            switch operation {
            case "get":
                guard let stored = try credentials.credential(for: space) else { return }
                if let username = request.username, username != stored.username { return }
                // One write, assembled in guarded memory: "username=U\npassword=P\n".
                let head = Array("username=\(stored.username)\npassword=".utf8)
                let output = stored.password.withUnsafeBytes { password in
                    SecureBytes(count: head.count + password.count + 1) { buffer in
                        buffer.copyBytes(from: head)
                        UnsafeMutableRawBufferPointer(rebasing: buffer[head.count...]).copyMemory(from: password)
                        buffer[head.count + password.count] = UInt8(ascii: "\n")
                    }
                }
                try output.withUnsafeBytes { try writeToStdout($0) }
                if let expiry = try credentials.expiry(for: space) {
                    try writeToStdout("password_expiry_utc=\(expiry)\n")
                }
            case "store":
                guard let username = request.username, let password = request.password else { return }
                let credential = Credential(username: username, password: password)
                guard (try? credential.validate()) != nil else { return }
                // Replaces the primary credential only when git's space already is the primary one.
                let isPrimary = try credentials.primary() == space
                var changes = SecureKeyValueStore.Changes()
                try credentials.stage(credential, for: space, asPrimary: isPrimary, into: &changes)
                try credentials.setExpiry(request.passwordExpiryUTC, for: space, into: &changes)
                try vault.write(changes)
            default:  // erase
                guard let stored = try credentials.credential(for: space) else { return }
                if let username = request.username, username != stored.username { return }
                if let password = request.password, password != stored.password { return }
                try credentials.removeCredentials(of: [space])
            }
        }
    }
}

/// One request of git's credential-helper protocol: `key=value` lines up to a blank line or end of input.
struct GitCredentialRequest {
    var `protocol`: String?
    var host: String?
    var path: String?
    var username: String?
    var password: SecureBytes?
    var passwordExpiryUTC: String?

    /// The longest line accepted, in bytes.
    static let maximumLineByteCount = 64 << 10

    /// Reads the request from `fd` one line at a time, stopping at the blank line (nothing after it is read).
    /// The password goes straight into guarded memory. Unknown keys are ignored.
    static func read(fd: Int32) throws -> GitCredentialRequest {
        var request = GitCredentialRequest()
        while true {
            let line = try SecretInput.read(fd: fd, limit: maximumLineByteCount, untilNewline: true, name: "stdin")
            if line.count == 0 { break }  // blank line or end of input
            let equals: Int? = line.withUnsafeBytes { $0.firstIndex(of: UInt8(ascii: "=")) }
            guard let equals else { continue }
            let key = line.withUnsafeBytes { String(decoding: $0[..<equals], as: UTF8.self) }
            if key == "password" {
                request.password = line.withUnsafeBytes { bytes in
                    let value = UnsafeRawBufferPointer(rebasing: bytes[(equals + 1)...])
                    return SecureBytes(count: value.count) { $0.copyMemory(from: value) }
                }
                continue
            }
            let value = line.withUnsafeBytes { String(decoding: $0[(equals + 1)...], as: UTF8.self) }
            switch key {
            case "protocol": request.protocol = value
            case "host": request.host = value
            case "path": request.path = value
            case "username": request.username = value
            case "password_expiry_utc": request.passwordExpiryUTC = value
            case "url":
                // `url=` stands for its parts (git-credential(1)); later keys override them.
                if let url = URLComponents(string: value) {
                    request.protocol = url.scheme
                    if let host = url.host {
                        let bracketed = host.contains(":") ? "[\(host)]" : host
                        request.host = url.port.map { "\(bracketed):\($0)" } ?? bracketed
                    }
                    let path = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
                    request.path = path.isEmpty ? nil : path
                    if let user = url.user { request.username = user }
                }
            default: break
            }
        }
        return request
    }

    /// The protection space of `protocol` + `host` (+ `path`) with the helper's pseudo-realm, or `nil` when the
    /// protocol is not http/https or the host is missing.
    var space: ProtectionSpace? {
        guard let scheme = self.protocol?.lowercased(), scheme == "http" || scheme == "https",
              let host, !host.isEmpty, !host.contains("/"), !host.contains("@"),
              let url = URL(string: "\(scheme)://\(host)/"), let origin = Origin(url)
        else { return nil }
        let realm = path.map { $0.isEmpty ? CredentialHelper.realm : "\(CredentialHelper.realm)/\($0)" }
            ?? CredentialHelper.realm
        return ProtectionSpace(origin: origin, realm: realm)
    }
}

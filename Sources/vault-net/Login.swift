import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import VaultAuth
import VaultCommands
import VaultCore
import VaultTerminal

// `vault login`, `vault fetch`, `vault logout`: HTTP Basic authentication with credentials from the vault
// (VaultAuth; see docs/AUTH.md).

/// The options of the verbs that talk to a server.
struct HTTPOptions: ParsableArguments {
    @Flag(
        name: .customLong("allow-insecure-http"),
        help: "Allow plain http, to a loopback address only (127.0.0.0/8, ::1, localhost): credentials go unencrypted.")
    var allowInsecureHTTP = false

    @Option(help: ArgumentHelp("Seconds a request may stay idle before it fails (the whole request: 4 times that).", valueName: "seconds"))
    var timeout: Double = 30

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be more than 0 and at most 3600 seconds") }
    }

    /// Parses `string` as an absolute http/https URL that credentials may be sent to.
    ///
    /// Plain `http` is refused unless `--allow-insecure-http` is given and the host is a loopback address,
    /// before anything is sent.
    func target(_ string: String) throws -> URL {
        guard let url = URL(string: string), let origin = Origin(url) else {
            throw AuthenticationError.unsupportedURL(string)
        }
        if !origin.isSecure {
            guard allowInsecureHTTP, origin.isLoopback else {
                throw AuthCLIError.insecureHTTP(url: string, loopback: origin.isLoopback)
            }
        }
        return url
    }
}

/// `--username` with `--password-fd`/`--password-file`: the credential of `login` and `device register` for
/// scripts (without them, the terminal is asked).
struct CredentialOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The username (the password is still asked for on the terminal unless given by --password-fd/--password-file).", valueName: "name"))
    var username: String?

    @Option(name: .customLong("password-fd"), help: ArgumentHelp("Read the password from this file descriptor (first line).", valueName: "n"))
    var passwordFD: Int32?

    @Option(name: .customLong("password-file"), help: ArgumentHelp("Read the password from the first line of this file (mode 0600).", valueName: "path"))
    var passwordFile: String?

    /// Whether the password comes from a descriptor or a file.
    var passwordGiven: Bool { passwordFD != nil || passwordFile != nil }

    func validate() throws {
        if passwordFD != nil && passwordFile != nil {
            throw ValidationError("--password-fd and --password-file cannot be used together")
        }
        if passwordGiven && username == nil {
            throw ValidationError("--password-fd and --password-file need --username")
        }
        if let fd = passwordFD, fd < 0 { throw ValidationError("--password-fd must be a file descriptor (0 or more)") }
    }

    /// The vault's passphrase is read from its own descriptor: the two must differ.
    func validate(against vault: VaultOptions) throws {
        if let fd = passwordFD, fd == vault.passphraseFD {
            throw ValidationError("the passphrase and the password need different descriptors")
        }
    }

    /// The password from --password-fd or --password-file, or `nil` when neither was given.
    func password() throws -> SecureBytes? {
        try SecretInput.read(fd: passwordFD, file: passwordFile)
    }
}

/// Failures of the auth verbs that are not ``AuthenticationError``s.
enum AuthCLIError: Error, CustomStringConvertible {
    /// The final response had an error status (400 or more).
    case httpStatus(Int, url: String)
    /// `vault login`: the final response was not 2xx, so nothing was stored.
    case loginNotAccepted(Int, url: String)
    /// `vault login`: the server never asked for credentials.
    case noChallenge(Int, url: String)
    /// Plain http without the opt-in, or to a host that is not loopback.
    case insecureHTTP(url: String, loopback: Bool)
    /// `vault logout`: nothing stored for the origin.
    case noCredential(origin: String, path: String)
    /// An ``AuthenticationError`` from a request to `url` by `vault login` (`login`) or `vault fetch`.
    case authentication(AuthenticationError, url: String, login: Bool)

    var description: String { classification.message }

    /// Exit code, `--json` code, message and hint.
    var classification: (exitCode: Int32, code: String, message: String, hint: String?) {
        switch self {
        case let .httpStatus(status, url):
            return (Exit.failure, "http_error", "HTTP \(status) \(reasonPhrase(status)) from '\(url)'", nil)
        case let .loginNotAccepted(status, url):
            return (Exit.failure, "http_error",
                    "HTTP \(status) \(reasonPhrase(status)) from '\(url)'; no credential was stored", nil)
        case let .noChallenge(status, url):
            return (Exit.failure, "no_challenge",
                    "'\(url)' did not ask for credentials (HTTP \(status)); no credential was stored",
                    "log in with the URL of a protected resource")
        case let .insecureHTTP(url, loopback):
            return (Exit.failure, "insecure_transport", "refusing plain http to '\(url)'",
                    loopback ? "use https, or pass --allow-insecure-http (loopback addresses only)"
                        : "use https (plain http is allowed only to loopback addresses, with --allow-insecure-http)")
        case let .noCredential(origin, path):
            return (Exit.notFound, "no_such_entry", "no credential for \(origin) in vault '\(path)'", nil)
        case let .authentication(error, url, login):
            return classifyAuthentication(error, url: url, login: login)
        }
    }
}

/// Exit code, `--json` code, message and hint of an ``AuthenticationError``; `url` (when known) goes into hints,
/// which differ for `vault login` (`login`) and the other verbs.
func classifyAuthentication(_ error: AuthenticationError, url: String?, login: Bool = false)
    -> (exitCode: Int32, code: String, message: String, hint: String?)
{
    // The library's descriptions carry their hint after "\nhint: "; the CLI prints hints itself.
    let parts = error.description.components(separatedBy: "\nhint: ")
    let message = parts[0]
    let libraryHint = parts.count > 1 ? parts[1] : nil
    let loginCommand = "vault login " + (url ?? "URL")
    switch error {
    case .credentialsRejected:
        return (Exit.authentication, "credentials_rejected", message, nil)
    case let .storedCredentialRejected(space, username):
        return (Exit.authentication, "stored_credential_rejected",
                "stored credential rejected: the server at \(space) rejected the stored password for "
                    + "'\(username)'; it was removed from the vault and will not be sent again",
                "to store a fresh one, run: \(loginCommand)")
    case let .noPromptAvailable(space, detail):
        let reason = detail.hasPrefix("no credential is stored") ? "no credential is stored and there is no terminal to ask on" : detail
        return (Exit.authentication, "no_prompt_available",
                "\(space) asks for credentials: \(reason)",
                login ? "pass --username NAME with --password-fd N or --password-file PATH, or run on a terminal"
                    : "to store one, run: \(loginCommand)")
    case .promptCancelled:
        return (Exit.authentication, "login_cancelled", message, nil)
    case .unsupportedChallenge:
        return (Exit.authentication, "unsupported_challenge", message, nil)
    case .crossOriginChallenge:
        return (Exit.authentication, "cross_origin_challenge", message, libraryHint)
    case .promptFailed:
        return (Exit.failure, "prompt_failed", message, nil)
    case .insecureTransport:
        return (Exit.failure, "insecure_transport", message, libraryHint)
    case .invalidUsername:
        return (Exit.usage, "invalid_username", message, nil)
    case .transportFailed:
        return (Exit.failure, "network_error", message, "check the URL and that the server is running")
    case .unsupportedURL:
        return (Exit.usage, "unsupported_url", message, nil)
    }
}

private func reasonPhrase(_ status: Int) -> String {
    let phrases: [Int: String] = [
        400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
        406: "Not Acceptable", 407: "Proxy Authentication Required", 408: "Request Timeout", 409: "Conflict",
        410: "Gone", 413: "Content Too Large", 414: "URI Too Long", 415: "Unsupported Media Type",
        429: "Too Many Requests", 500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
        503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
    ]
    if let phrase = phrases[status] { return "(\(phrase))" }
    return status >= 500 ? "(server error)" : status >= 400 ? "(client error)" : ""
}

/// `true` when the process has a controlling terminal to ask on.
func terminalAvailable() -> Bool {
    let fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    close(fd)
    return true
}

/// The CLI's credential prompt: a credential given by a script (answered once, then declined), else the
/// terminal (`/dev/tty`, never stdin), else none (fails at once). Records what it handed out.
final class CLICredentialPrompt: CredentialPrompting, @unchecked Sendable {
    private let username: String?
    private let lock = NSLock()
    private var scripted: Credential?  // guarded by `lock`; handed out by the first prompt
    private var scriptedUsed = false  // guarded by `lock`
    private var _answered: (space: ProtectionSpace, username: String)?  // guarded by `lock`
    private let terminal: Bool

    init(username: String?, password: SecureBytes?, terminal: Bool) {
        self.username = username
        if let username, let password { scripted = Credential(username: username, password: password) }
        self.terminal = terminal
    }

    /// The space and username of the last credential handed out.
    var answered: (space: ProtectionSpace, username: String)? { lock.withLock { _answered } }

    func credential(
        for space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) async throws -> Credential? {
        enum Source { case given(Credential?), terminal, none }
        let source: Source = lock.withLock {
            if let scripted {
                self.scripted = nil
                scriptedUsed = true
                return .given(scripted)
            }
            if scriptedUsed { return .given(nil) }  // the script's one credential was rejected: decline
            return terminal ? .terminal : .none
        }
        let credential: Credential?
        switch source {
        case let .given(given):
            credential = given
        case .terminal:
            credential = try await TerminalCredentialPrompt().credential(
                for: space, reason: reason, suggestedUsername: suggestedUsername ?? username)
        case .none:
            throw AuthenticationError.noPromptAvailable(space: space, detail: "there is no terminal to ask on")
        }
        if let credential { lock.withLock { _answered = (space, credential.username) } }
        return credential
    }
}

struct Login: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: NetworkVerb.login.abstract,
        discussion: """
            Requests URL; when the server asks for credentials, the username and password come from
            --username with --password-fd/--password-file (scripts), else from a prompt on the terminal
            (/dev/tty). The credential is stored in the vault only after the server accepted it (2xx).
            Exit 0 when accepted; 3 when the credentials were rejected (or none could be asked for);
            1 when the server did not ask for credentials or answered with an error status.
            """)

    @OptionGroup var options: VaultOptions
    @OptionGroup var http: HTTPOptions

    @Argument(help: "The http(s) URL of a protected resource.")
    var url: String

    @OptionGroup var credential: CredentialOptions

    func validate() throws {
        try credential.validate(against: options)
    }

    func run() async throws {
        try await reportingErrors(json: options.json) {
            let target = try http.target(url)
            let username = credential.username
            if let username { try Credential(username: username, password: SecureBytes(string: "")).validate() }
            let vault = try openStore(options)
            defer { vault.close() }
            let password = try credential.password()
            let prompt = CLICredentialPrompt(username: username, password: password, terminal: terminalAvailable())
            let authenticator = KeystoreAuthenticator(
                store: VaultCredentialStore(store: vault), prompt: prompt,
                options: .init(allowInsecureLoopbackHTTP: http.allowInsecureHTTP, useStoredCredentials: false))
            let client = AuthenticatingHTTPClient(authenticator: authenticator, timeout: http.timeout)
            defer { client.invalidate() }
            let response: HTTPURLResponse
            do {
                (_, response) = try await client.data(for: URLRequest(url: target))
            } catch let error as AuthenticationError {
                throw AuthCLIError.authentication(error, url: url, login: true)
            }
            guard let (space, user) = prompt.answered else {
                throw AuthCLIError.noChallenge(response.statusCode, url: url)
            }
            guard (200..<300).contains(response.statusCode) else {
                throw AuthCLIError.loginNotAccepted(response.statusCode, url: url)
            }
            if options.json {
                try writeJSON([
                    "url": url, "origin": space.origin.description, "realm": space.realm, "username": user,
                    "stored": true,
                ])
            } else {
                try writeToStdout("logged in to \(space) as '\(user)'\n")
            }
        }
    }
}

struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: NetworkVerb.fetch.abstract,
        discussion: """
            Like `curl --fail`: an HTTP error status (400 or more) prints a message on stderr, nothing on
            stdout, and exits 1. Exit 3 when the credentials were rejected (a stored credential the server
            rejects is stale: it is removed from the vault and not sent again) or when none is stored and
            there is no terminal to ask on; 1 on a network failure or timeout (--timeout).
            """)

    @OptionGroup var options: VaultOptions
    @OptionGroup var http: HTTPOptions

    @Argument(help: "The http(s) URL.")
    var url: String

    @Option(name: .customLong("header"), help: ArgumentHelp("An extra request header, 'Name: value' (repeatable; not Authorization).", valueName: "header"))
    var headers: [String] = []

    func parsedHeaders() throws -> [(String, String)] {
        try headers.map { header in
            guard let colon = header.firstIndex(of: ":") else {
                throw ValidationError("--header '\(header)' is not 'Name: value'")
            }
            let name = String(header[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            let token = CharacterSet(charactersIn: "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
            guard !name.isEmpty, name.unicodeScalars.allSatisfy(token.contains) else {
                throw ValidationError("--header '\(header)': invalid header name")
            }
            guard !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) else {
                throw ValidationError("--header '\(header)': control characters in the value")
            }
            if name.lowercased() == "authorization" || name.lowercased() == "proxy-authorization" {
                throw ValidationError("--header \(name): credentials never come from the command line; use 'vault login'")
            }
            return (name, value)
        }
    }

    func validate() throws { _ = try parsedHeaders() }

    func run() async throws {
        try await reportingErrors(json: options.json) {
            let target = try http.target(url)
            var request = URLRequest(url: target)
            for (name, value) in try parsedHeaders() { request.addValue(value, forHTTPHeaderField: name) }
            let vault = try openStore(options)
            defer { vault.close() }
            let prompt: (any CredentialPrompting)? = terminalAvailable() ? TerminalCredentialPrompt() : nil
            let authenticator = KeystoreAuthenticator(
                store: VaultCredentialStore(store: vault), prompt: prompt,
                options: .init(allowInsecureLoopbackHTTP: http.allowInsecureHTTP))
            let client = AuthenticatingHTTPClient(authenticator: authenticator, timeout: http.timeout)
            defer { client.invalidate() }
            let body: Data
            let response: HTTPURLResponse
            do {
                (body, response) = try await client.data(for: request)
            } catch let error as AuthenticationError {
                throw AuthCLIError.authentication(error, url: url, login: false)
            }
            guard response.statusCode < 400 else { throw AuthCLIError.httpStatus(response.statusCode, url: url) }
            try body.withUnsafeBytes { try writeToStdout($0) }
        }
    }
}

struct Logout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: NetworkVerb.logout.abstract,
        discussion: "Exit 2 when none is stored.")

    @OptionGroup var options: VaultOptions

    @Argument(help: "A URL of the origin (scheme, host and port count; the path does not).")
    var url: String

    func run() async throws {
        try await reportingErrors(json: options.json) {
            guard let parsed = URL(string: url), let origin = Origin(parsed) else {
                throw AuthenticationError.unsupportedURL(url)
            }
            let vault = try openStore(options)
            defer { vault.close() }
            let credentials = VaultCredentialStore(store: vault)
            let spaces = try credentials.storedSpaces().filter { $0.origin == origin }
            guard !spaces.isEmpty else { throw AuthCLIError.noCredential(origin: origin.description, path: vault.path) }
            try removeCredentials(of: spaces, from: credentials)
            if options.json {
                try writeJSON([
                    "origin": origin.description, "removed": spaces.map { ["realm": $0.realm] },
                ])
            } else {
                try writeToStdout(spaces.map { "logged out of \($0)\n" }.joined())
            }
        }
    }
}

/// Removes the credentials of `spaces` in one vault update: the primary keys when one of them is the primary
/// space, and every key under `credential/<space key>/` (username, password, password_expiry_utc).
func removeCredentials(of spaces: [ProtectionSpace], from credentials: VaultCredentialStore) throws {
    let primary = try credentials.primary()
    let prefixes = spaces.map(VaultCredentialStore.keyPrefix(for:))
    let keys = try credentials.store.keys().filter { key in prefixes.contains { key.hasPrefix($0) } }
    try credentials.store.update { changes in
        if let primary, spaces.contains(primary) {
            changes.remove(VaultCredentialStore.usernameKey)
            changes.remove(VaultCredentialStore.passwordKey)
            changes.remove(VaultCredentialStore.primarySpaceKey)
        }
        for key in keys { changes.remove(key) }
    }
}

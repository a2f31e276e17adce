import ArgumentParser
import Foundation
import VaultAuth
import VaultCommands
import VaultCore
import VaultTerminal

// `vault fetch`: a request with the credential stored in the vault (VaultAuth; see docs/AUTH.md).

package struct Fetch: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: RoutedVerb.named("fetch").abstract,
        discussion: """
            Like `curl --fail`: an HTTP error status (400 or more) prints a message on stderr, nothing on stdout, and exits 1. Exit 3 when the credentials were rejected (a stored credential the server rejects is stale: it is removed from the vault and not sent again) or when none is stored and there is no terminal to ask on; 1 on a network or TLS failure or timeout (--timeout). The body goes to stdout as it arrives (any length, in bounded memory). Redirects are followed; to another origin without the credential or any --header.
            """)

    @OptionGroup var http: HTTPOptions

    @Argument(help: "The http(s) URL.")
    var url: String

    @Option(
        name: .customLong("header"),
        help: ArgumentHelp("An extra request header, 'Name: value' (repeatable; not Authorization).", valueName: "header"))
    var headers: [String] = []

    @OptionGroup var options: VaultOptions

    package func run() async throws {
        // Parsed once, before anything is read or sent; a bad header is a usage error (exit 64). Not with
        // `@Option(transform:)`: ArgumentParser's message would quote the whole value.
        let headers = try self.headers.map(Header.init(parsing:))
        try await reportingErrors(json: options.json) {
            let target = try http.target(url)
            let tls = try http.tlsOptions()
            var request = HTTPRequest(url: target)
            for header in headers { request.headers.add(header.name, header.value) }
            let vault = try openVault(options)
            defer { vault.close() }
            // Without a terminal nobody can be asked: a missing or stale credential fails at once.
            let prompt = Terminal.controlling() != nil ? CLICredentialPrompt(username: nil, password: nil, terminal: true) : nil
            let authenticator = KeystoreAuthenticator(
                store: VaultCredentialStore(store: vault), prompt: prompt, options: http.authenticatorOptions)
            let client = AuthenticatingHTTPClient(authenticator: authenticator, timeout: http.timeout, tls: tls)
            let response: HTTPResponse
            do {
                // Like curl --fail: the body of an error status is not written.
                response = try await client.stream(request) { response, chunk in
                    if response.statusCode < 400 { try writeToStdout(chunk) }
                }
            } catch let error as AuthenticationError {
                throw NetworkCLIError.authentication(error, url: url, login: false)
            }
            guard response.statusCode < 400 else { throw NetworkCLIError.httpStatus(response.statusCode, url: url) }
        }
    }
}

/// One `--header 'Name: value'`, parsed once, when the command line is. Errors name the header, never its
/// value (it may be an API key, and errors end up in CI logs).
struct Header {
    let name: String
    let value: String

    private static let token = CharacterSet(
        charactersIn: "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")

    init(parsing header: String) throws {
        guard let colon = header.firstIndex(of: ":") else {
            throw ValidationError("--header: a header is not 'Name: value' (no ':')")
        }
        let name = String(header[..<colon]).trimmingCharacters(in: .whitespaces)
        let value = String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.unicodeScalars.allSatisfy(Self.token.contains) else {
            throw ValidationError("--header: a header has an invalid name")
        }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) else {
            throw ValidationError("--header \(name): control characters in the value")
        }
        if name.lowercased() == "authorization" || name.lowercased() == "proxy-authorization" {
            throw ValidationError("--header \(name): credentials never come from the command line; use 'vault login'")
        }
        self.name = name
        self.value = value
    }
}

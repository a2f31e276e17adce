import ArgumentParser
import Foundation
import VaultAuth
import VaultCommands
import VaultCore
import VaultTerminal

// `vault login`: HTTP Basic authentication with credentials kept in the vault (VaultAuth; see docs/AUTH.md).

package struct Login: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: RoutedVerb.named("login").abstract,
        discussion: """
            Requests URL; when the server asks for credentials, the username and password come from --username with --password-fd/--password-file (scripts), else from a prompt on the terminal (/dev/tty). The credential is stored in the vault only after the server accepted it (2xx). Exit 0 when accepted; 3 when the credentials were rejected (or none could be asked for); 1 when the server did not ask for credentials or answered with an error status.
            """)

    @OptionGroup var http: HTTPOptions

    @Argument(help: "The http(s) URL of a protected resource.")
    var url: String

    @OptionGroup var credential: CredentialOptions

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        try credential.validate(against: options)
    }

    package func run() async throws {
        try await reportingErrors(json: options.json) {
            let target = try http.target(url)
            let tls = try http.tlsOptions()
            let vault = try openVault(options)
            defer { vault.close() }
            let prompt = try credential.prompt(terminal: Terminal.controlling() != nil)
            var authenticatorOptions = http.authenticatorOptions
            authenticatorOptions.useStoredCredentials = false  // a login always asks
            let authenticator = KeystoreAuthenticator(
                store: VaultCredentialStore(store: vault), prompt: prompt, options: authenticatorOptions)
            let client = AuthenticatingHTTPClient(authenticator: authenticator, timeout: http.timeout, tls: tls)
            let response: HTTPResponse
            do {
                // The body is not shown: read and dropped.
                response = try await client.stream(HTTPRequest(url: target)) { _, _ in }
            } catch let error as AuthenticationError {
                throw NetworkCLIError.authentication(error, url: url, login: true)
            }
            guard let (space, user) = prompt.answered else {
                throw NetworkCLIError.noChallenge(response.statusCode, url: url)
            }
            guard (200..<300).contains(response.statusCode) else {
                throw NetworkCLIError.loginNotAccepted(response.statusCode, url: url)
            }
            // The authenticator stores a credential only on a 2xx of the origin it was sent to: a redirect to another
            // origin (followed without it) answered nothing about it.
            guard Origin(response.url) == space.origin else {
                throw NetworkCLIError.loginAnsweredElsewhere(response.statusCode, url: url, answeredBy: TerminalText.escaped(response.url.absoluteString))
            }
            if options.json {
                try writeJSON([
                    "url": url, "origin": space.origin.description, "realm": space.realm, "username": user,
                    "stored": true,
                ])
            } else {
                try writeToStdout("logged in to \(TerminalText.escaped(space.description)) as '\(TerminalText.escaped(user))'\n")
            }
        }
    }
}

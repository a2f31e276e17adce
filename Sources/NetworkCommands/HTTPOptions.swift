import ArgumentParser
import Foundation
import VaultAuth

/// `--allow-insecure-http`, `--timeout`, `--cacert` and `--pinned-pubkey`: the options of every command that
/// sends requests (`login`, `fetch`, `device …`, the DemoApp).
package struct HTTPOptions: ParsableArguments {
    package init() {}

    @Flag(
        name: .customLong("allow-insecure-http"),
        help: "Allow plain http, to a loopback address only (127.0.0.0/8, ::1, localhost): credentials go unencrypted.")
    package var allowInsecureHTTP = false

    @Option(help: ArgumentHelp(
        "Seconds the exchange may take: connecting, TLS, the whole answer and redirects (not the time at a prompt).",
        valueName: "seconds"))
    package var timeout: Double = 30

    @Option(help: ArgumentHelp(
        "A PEM file of CA certificates to trust besides the system's (e.g. a private CA).", valueName: "path"))
    package var cacert: String?

    @Option(
        name: .customLong("pinned-pubkey"),
        help: ArgumentHelp(
            "The server's public key must also match: sha256//BASE64 (curl's syntax; several separated by ';').",
            valueName: "hashes"))
    package var pinnedPublicKey: String?

    package func validate() throws {
        guard timeout > 0, timeout <= 3600 else {
            throw ValidationError("--timeout must be more than 0 and at most 3600 seconds")
        }
    }

    /// The TLS options `--cacert` and `--pinned-pubkey` ask for.
    ///
    /// - Throws: ``AuthenticationError/invalidTLSOption(_:)`` for an unreadable file or a malformed pin.
    package func tlsOptions() throws -> TLSOptions {
        try TLSOptions(caCertificatesFile: cacert, pinnedPublicKey: pinnedPublicKey)
    }

    /// The authenticator's options these flags ask for.
    package var authenticatorOptions: KeystoreAuthenticator.Options {
        KeystoreAuthenticator.Options(allowInsecureLoopbackHTTP: allowInsecureHTTP)
    }

    /// Parses `string` as an absolute http/https URL that credentials may be sent to.
    ///
    /// Plain `http` is refused unless `--allow-insecure-http` is given and the host is a loopback address,
    /// before anything is sent.
    package func target(_ string: String) throws -> URL {
        guard let url = URL(string: string), let origin = Origin(url) else {
            throw AuthenticationError.unsupportedURL(string)
        }
        if !origin.isSecure {
            guard allowInsecureHTTP, origin.isLoopback else {
                throw NetworkCLIError.insecureHTTP(url: string, loopback: origin.isLoopback)
            }
        }
        return url
    }
}

import ArgumentParser
import Foundation
import VaultAuth

/// `--allow-insecure-http` and `--timeout`: the options of every command that talks to a server (`login`,
/// `fetch`, `device …`, the DemoApp).
package struct HTTPOptions: ParsableArguments {
    package init() {}

    @Flag(
        name: .customLong("allow-insecure-http"),
        help: "Allow plain http, to a loopback address only (127.0.0.0/8, ::1, localhost): credentials go unencrypted.")
    package var allowInsecureHTTP = false

    @Option(help: ArgumentHelp(
        "Seconds a request may stay idle before it fails (the whole request: 4 times that).", valueName: "seconds"))
    package var timeout: Double = 30

    package func validate() throws {
        guard timeout > 0, timeout <= 3600 else {
            throw ValidationError("--timeout must be more than 0 and at most 3600 seconds")
        }
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

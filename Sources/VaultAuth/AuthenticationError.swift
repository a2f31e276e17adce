import Foundation

/// Every failure of ``KeystoreAuthenticator`` and ``AuthenticatingHTTPClient``.
///
/// No case carries a password, nor a username the user typed but the server never saw (it may be a password
/// typed into the wrong field); usernames a server rejected, URLs and realms may appear in messages. The
/// messages (``description``) say what failed and nothing more: what a user can do about it is the
/// presenter's business (the CLI's hints).
public enum AuthenticationError: Error, Equatable, Sendable {
    /// The server rejected (401) the credential of `username`, and it was the last attempt: the stored one was
    /// rejected and then the one the user typed, or two the user typed.
    case credentialsRejected(space: ProtectionSpace, username: String)
    /// The server rejected (401) the stored credential of `username`; it is stale and will not be sent again,
    /// and no prompt was available to ask for a fresh one.
    case storedCredentialRejected(space: ProtectionSpace, username: String)
    /// The server asks for credentials, none can be used, and there is no way to ask the user
    /// (no prompt configured, or no terminal). `detail` says which.
    case noPromptAvailable(space: ProtectionSpace, detail: String)
    /// The user declined to enter credentials.
    case promptCancelled(space: ProtectionSpace)
    /// Reading the answer from the prompt failed (I/O error, input too long, not UTF-8).
    case promptFailed(detail: String)
    /// The server asks for credentials over plain `http` to a host that is not loopback, or to loopback without
    /// ``KeystoreAuthenticator/Options/allowInsecureLoopbackHTTP``. Nothing was sent.
    case insecureTransport(url: URL)
    /// The server answered 401 but offered no `Basic` challenge; `schemes` are those it offered.
    case unsupportedChallenge(url: URL, schemes: [String])
    /// A redirect led to another origin that asked for credentials. Credentials never follow a redirect to
    /// another origin; request `challengedBy` directly.
    case crossOriginChallenge(requested: URL, challengedBy: URL)
    /// A username that RFC 7617 cannot carry; `problem` says why (the username itself is not repeated).
    case invalidUsername(UsernameProblem)
    /// The vault entry `entry` (`credential.space`) should name a protection space and does not: the vault's
    /// credentials cannot be attributed to a server.
    case malformedStoredSpace(entry: String)
    /// The request could not be made or did not complete (connection refused, timeout, TLS failure, ...).
    case transportFailed(url: URL, detail: String)
    /// The URL is not an absolute `http` or `https` URL.
    case unsupportedURL(String)

    /// Why a username cannot be sent with HTTP Basic authentication (RFC 7617).
    public enum UsernameProblem: String, Equatable, Sendable {
        case empty = "it is empty"
        case containsColon = "it contains ':'"
        case containsControlCharacter = "it contains a control character"
    }
}

extension AuthenticationError: CustomStringConvertible, LocalizedError {
    public var description: String {
        switch self {
        case let .credentialsRejected(space, username):
            return "credentials rejected: the server at \(space) rejected the password for '\(username)'"
        case let .storedCredentialRejected(space, username):
            return "stored credential rejected: the server at \(space) rejected the stored password for "
                + "'\(username)'; it will not be sent again"
        case let .noPromptAvailable(space, detail):
            return "cannot ask for credentials for \(space): \(detail)"
        case let .promptCancelled(space):
            return "login cancelled for \(space)"
        case let .promptFailed(detail):
            return "cannot read credentials: \(detail)"
        case let .insecureTransport(url):
            return "refusing to send credentials over plain http to '\(url.absoluteString)'"
        case let .unsupportedChallenge(url, schemes):
            let offered = schemes.isEmpty ? "none" : schemes.joined(separator: ", ")
            return "cannot authenticate to '\(url.absoluteString)': the server offers no Basic challenge "
                + "(offered: \(offered))"
        case let .crossOriginChallenge(requested, challengedBy):
            return "cannot authenticate to '\(requested.absoluteString)': it redirected to "
                + "'\(challengedBy.absoluteString)', another origin, which asks for credentials"
        case let .invalidUsername(problem):
            return "invalid username: \(problem.rawValue) (it must be non-empty, without ':' or control characters)"
        case let .malformedStoredSpace(entry):
            return "the vault entry '\(entry)' does not name a protection space (scheme://host:port/realm)"
        case let .transportFailed(url, detail):
            return "request to '\(url.absoluteString)' failed: \(detail)"
        case let .unsupportedURL(string):
            return "unsupported URL '\(string)': only absolute http and https URLs are supported"
        }
    }

    public var errorDescription: String? { description }
}

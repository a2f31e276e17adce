import FoundationEssentials

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
    /// The server rejected (401) the stored credential of `username`; it is stale and will not be sent again by
    /// this authenticator, and no prompt was available to ask for a fresh one. `erased`: it was removed from the
    /// store (``KeystoreAuthenticator/Options/eraseRejectedCredentials``); otherwise it is still stored.
    case storedCredentialRejected(space: ProtectionSpace, username: String, erased: Bool)
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
    /// The vault entry `entry` (`credential/primary`, or an earlier layout's `credential.space`) should name a
    /// protection space and does not: the vault's credentials cannot be attributed to a server.
    case malformedStoredSpace(entry: String)
    /// The request could not be made or did not complete (connection refused, timeout, TLS failure, ...).
    case transportFailed(url: URL, detail: String)
    /// The URL is not an absolute `http` or `https` URL.
    case unsupportedURL(String)
    /// A TLS option cannot be used (an unreadable CA file, a malformed pin); `detail` says which.
    case invalidTLSOption(String)
    /// The TLS connection failed: the certificate is not trusted or not valid for the host, or the handshake
    /// failed. Nothing was sent.
    case tlsFailed(url: URL, detail: String)
    /// The server's certificate verified, but its public key is none of the pinned ones. Nothing was sent.
    case pinnedPublicKeyMismatch(url: URL)
    /// The request did not complete within `seconds` (connecting, TLS, sending and the whole answer).
    case timedOut(url: URL, seconds: Double)
    /// The answer's body is longer than `limit` bytes, the most this operation reads.
    case responseTooLarge(url: URL, limit: Int)
    /// A redirect from `from` to `to` was not followed (`reason`).
    case redirectRefused(from: URL, to: URL, reason: RedirectRefusal)
    /// The vault holds entries under keys a registration writes (an `appcid` without `mobileservices.server`)
    /// that no registration wrote: they are the user's own, and are neither overwritten nor adopted. Nothing was
    /// written.
    case unownedEntries([String])

    /// Why a redirect was not followed.
    public enum RedirectRefusal: String, Equatable, Sendable {
        case crossOrigin = "it leads to another origin"
        case downgrade = "it leads from https to plain http"
        case tooMany = "there were too many redirects"
        case unsupportedLocation = "its Location is not an http or https URL"
    }

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
        case let .storedCredentialRejected(space, username, erased):
            return "stored credential rejected: the server at \(space) rejected the stored password for "
                + "'\(username)'; " + (erased ? "it was removed from the store" : "it is kept in the store")
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
        case let .unownedEntries(names):
            return "the vault already has entries " + names.map { "'\($0)'" }.joined(separator: " and ")
                + " that no credential or registration of vault wrote; they are left as they are"
        case let .malformedStoredSpace(entry):
            return "the vault entry '\(entry)' does not name a protection space (scheme://host:port/realm)"
        case let .transportFailed(url, detail):
            return "request to '\(url.absoluteString)' failed: \(detail)"
        case let .unsupportedURL(string):
            return "unsupported URL '\(string)': only absolute http and https URLs are supported"
        case let .invalidTLSOption(detail):
            return "invalid TLS option: \(detail)"
        case let .tlsFailed(url, detail):
            return "TLS connection to '\(url.absoluteString)' failed: \(detail); nothing was sent"
        case let .pinnedPublicKeyMismatch(url):
            return "TLS connection to '\(url.absoluteString)' refused: the server's public key does not match the "
                + "pinned key; nothing was sent"
        case let .timedOut(url, seconds):
            return "request to '\(url.absoluteString)' timed out: no complete answer within \(Self.format(seconds)) s"
        case let .responseTooLarge(url, limit):
            return "the answer of '\(url.absoluteString)' is larger than \(limit) bytes, the most that is read"
        case let .redirectRefused(from, to, reason):
            return "not following the redirect from '\(from.absoluteString)' to '\(to.absoluteString)': "
                + reason.rawValue
        }
    }

    public var errorDescription: String? { description }

    static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}

import VaultCredentials

// How the command line presents the credential model's errors (exit code, `--json` code, hint). Here rather than
// with the network verbs: the credential helpers, which run in `vault`, report them too (a vault whose stored
// protection space is malformed), and a conformance only `vault-net` links would leave `vault` without it.

extension AuthenticationError: CLIReportable {
    /// What to do when a login needs credentials and there is no terminal.
    package static let scriptedLoginHint = "pass --username NAME with --password-fd N or --password-file PATH, or run on a terminal"

    package var exitCode: Int32 {
        switch self {
        case .credentialsRejected, .storedCredentialRejected, .noPromptAvailable, .promptCancelled,
             .unsupportedChallenge, .crossOriginChallenge:
            return Exit.authentication
        case .promptFailed, .insecureTransport, .transportFailed, .malformedStoredSpace, .tlsFailed,
             .pinnedPublicKeyMismatch, .timedOut, .responseTooLarge, .redirectRefused:
            return Exit.failure
        case .invalidUsername, .unsupportedURL, .invalidTLSOption: return Exit.usage
        case .unownedEntries: return Exit.exists
        }
    }

    package var code: String {
        switch self {
        case .credentialsRejected: return "credentials_rejected"
        case .storedCredentialRejected: return "stored_credential_rejected"
        case .noPromptAvailable: return "no_prompt_available"
        case .promptCancelled: return "login_cancelled"
        case .unsupportedChallenge: return "unsupported_challenge"
        case .crossOriginChallenge: return "cross_origin_challenge"
        case .promptFailed: return "prompt_failed"
        case .insecureTransport: return "insecure_transport"
        case .invalidUsername: return "invalid_username"
        case .transportFailed: return "network_error"
        case .unsupportedURL: return "unsupported_url"
        case .malformedStoredSpace: return "malformed_stored_space"
        case .invalidTLSOption: return "invalid_tls_option"
        case .tlsFailed: return "tls_error"
        case .pinnedPublicKeyMismatch: return "tls_pin_mismatch"
        case .timedOut: return "timeout"
        case .responseTooLarge: return "response_too_large"
        case .redirectRefused: return "redirect_refused"
        case .unownedEntries: return "unowned_entries"
        }
    }

    package var hint: String? {
        switch self {
        case .storedCredentialRejected: return "log in again to store a fresh one"
        case .noPromptAvailable: return Self.scriptedLoginHint
        case .insecureTransport:
            return "use https (plain http is allowed only to loopback, and only when enabled explicitly)"
        case let .crossOriginChallenge(_, challengedBy): return "request '\(challengedBy.absoluteString)' directly"
        case .transportFailed: return "check the URL and that the server is running"
        case .malformedStoredSpace: return "log in again: 'vault login URL' records it anew"
        case let .unownedEntries(names):
            return "rename them first (" + names.map { "vault mv \($0) my/\($0)" }.joined(separator: ", ")
                + "), or use another vault for the device (--vault PATH)"
        case .tlsFailed:
            return "TLS: if the server's certificate comes from a private CA, pass that CA's certificate with "
                + "--cacert PATH (PEM); check that the URL's host is one the certificate names"
        case .pinnedPublicKeyMismatch:
            return "TLS: the server presented another key than --pinned-pubkey names; if its key was replaced "
                + "on purpose, pin the new one"
        case .timedOut: return "raise --timeout, or check that the server is responding"
        case let .redirectRefused(_, to, reason):
            return reason == .crossOrigin ? "request '\(to.absoluteString)' directly if you trust it" : nil
        case .credentialsRejected, .promptCancelled, .unsupportedChallenge, .promptFailed, .invalidUsername,
             .unsupportedURL, .invalidTLSOption, .responseTooLarge:
            return nil
        }
    }
}

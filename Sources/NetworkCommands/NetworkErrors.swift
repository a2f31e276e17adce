import MobileServices
import VaultAuth
import VaultCommands

// How the command line presents the network libraries' errors: one `CLIReportable` conformance per error type
// (exit code, `--json` code, message, hint). The libraries' messages say what failed; the hints, which name
// commands and flags, live here. `AuthenticationError`'s is in VaultCommands (AuthenticationErrors.swift): the
// credential helpers, which run in `vault`, report it too.

/// Failures of the network commands that are not a library's.
package enum NetworkCLIError: Error, CustomStringConvertible {
    /// The final response had an error status (400 or more).
    case httpStatus(Int, url: String)
    /// `vault login`: the final response was not 2xx, so nothing was stored.
    case loginNotAccepted(Int, url: String)
    /// `vault login`: the server never asked for credentials.
    case noChallenge(Int, url: String)
    /// `vault login`: the 2xx came from another origin after a redirect (which never carries the credential), so it
    /// accepted nothing and nothing was stored.
    case loginAnsweredElsewhere(Int, url: String, answeredBy: String)
    /// Plain http without the opt-in, or to a host that is not loopback.
    case insecureHTTP(url: String, loopback: Bool)
    /// `vault logout`: nothing stored for the origin.
    case noCredential(origin: String, path: String)
    /// An ``AuthenticationError`` from a request to `url` by a command that logs in (`login`: `vault login`,
    /// `device register`, the DemoApp's start) or not (`vault fetch`, `device status`): the hints differ.
    case authentication(AuthenticationError, url: String, login: Bool)

    package var description: String { message }
}

extension NetworkCLIError: CLIReportable {
    package var exitCode: Int32 {
        switch self {
        case .httpStatus, .loginNotAccepted, .noChallenge, .insecureHTTP, .loginAnsweredElsewhere: return Exit.failure
        case .noCredential: return Exit.notFound
        case let .authentication(error, _, _): return error.exitCode
        }
    }

    package var code: String {
        switch self {
        case .httpStatus, .loginNotAccepted: return "http_error"
        case .noChallenge: return "no_challenge"
        case .loginAnsweredElsewhere: return "answered_elsewhere"
        case .insecureHTTP: return "insecure_transport"
        case .noCredential: return "no_such_entry"
        case let .authentication(error, _, _): return error.code
        }
    }

    package var message: String {
        switch self {
        case let .httpStatus(status, url):
            return "HTTP \(status) (\(HTTPStatusText.reason(status))) from '\(url)'"
        case let .loginNotAccepted(status, url):
            return "HTTP \(status) (\(HTTPStatusText.reason(status))) from '\(url)'; no credential was stored"
        case let .noChallenge(status, url):
            return "'\(url)' did not ask for credentials (HTTP \(status)); no credential was stored"
        case let .loginAnsweredElsewhere(status, url, answeredBy):
            return "'\(url)' redirected the login to '\(answeredBy)', another origin, which answered HTTP \(status) (\(HTTPStatusText.reason(status))) without the credential; that accepts nothing: no credential was stored"
        case let .insecureHTTP(url, _):
            return "refusing plain http to '\(url)'"
        case let .noCredential(origin, path):
            return "no credential for \(origin) in vault '\(path)'"
        case let .authentication(.storedCredentialRejected(space, username, erased), _, _):
            return "stored credential rejected: the server at \(space) rejected the stored password for "
                + "'\(username)'; "
                + (erased ? "it was removed from the vault and will not be sent again" : "it is kept in the vault")
        case let .authentication(.noPromptAvailable(space, detail), _, _):
            let reason = detail.hasPrefix("no credential is stored")
                ? "no credential is stored and there is no terminal to ask on" : detail
            return "\(space) asks for credentials: \(reason)"
        case let .authentication(error, _, _):
            return error.message
        }
    }

    package var hint: String? {
        switch self {
        case .httpStatus, .loginNotAccepted, .noCredential: return nil
        case .noChallenge: return "log in with the URL of a protected resource"
        case .loginAnsweredElsewhere: return "log in with the URL of a protected resource that answers on its own origin"
        case let .insecureHTTP(_, loopback):
            return loopback ? "use https, or pass --allow-insecure-http (loopback addresses only)"
                : "use https (plain http is allowed only to loopback addresses, with --allow-insecure-http)"
        case let .authentication(.storedCredentialRejected(_, _, erased), url, _):
            return erased ? "to store a fresh one, run: vault login \(url)"
                : "run the command again on a terminal to enter the new password"
        case let .authentication(.noPromptAvailable, url, login):
            return login ? AuthenticationError.scriptedLoginHint : "to store one, run: vault login \(url)"
        case let .authentication(error, _, _):
            return error.hint
        }
    }
}

extension MobileServicesError: CLIReportable {
    package var exitCode: Int32 {
        switch self {
        case .invalidConfiguration: return Exit.usage
        case .notRegistered, .registrationRemoved: return Exit.notFound
        case .notConfigured, .alreadyRegistered, .serverUnreachable, .unexpectedStatus, .malformedResponse,
             .invalidStoredRegistration:
            return Exit.failure
        }
    }

    package var code: String {
        switch self {
        case .invalidConfiguration: return "invalid_configuration"
        case .notConfigured: return "not_configured"
        case .notRegistered: return "not_registered"
        case .registrationRemoved: return "registration_removed"
        case .alreadyRegistered: return "already_registered"
        case .serverUnreachable: return "network_error"
        case .unexpectedStatus: return "http_error"
        case .malformedResponse: return "malformed_response"
        case .invalidStoredRegistration: return "invalid_stored_registration"
        }
    }

    package var hint: String? {
        switch self {
        case .notConfigured: return "pass --server URL and --app-id ID once; they are remembered in the vault"
        case .notRegistered: return "run 'vault device register --server URL --app-id ID'"
        case .registrationRemoved: return "register again with 'vault device register'"
        case .alreadyRegistered: return "run 'vault device unregister' first"
        case .serverUnreachable: return "check the URL and that the server is running; nothing was changed"
        case .invalidStoredRegistration: return "remove it with 'vault delete appcid', then register again"
        case .invalidConfiguration, .unexpectedStatus, .malformedResponse: return nil
        }
    }
}

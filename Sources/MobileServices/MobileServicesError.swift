import Foundation
import VaultAuth

/// Every failure of the mobile-services client that is not about credentials.
///
/// Credential failures (rejected password, no terminal to ask on, plain http refused, ...) are thrown as
/// `VaultAuth.AuthenticationError`; vault failures as `VaultCore.VaultError`. No case carries a password;
/// URLs, application ids and usernames may appear. Response bodies are never quoted. The messages
/// (``description``) say what failed; what the user can do is the presenter's business (the CLI's hints).
public enum MobileServicesError: Error, Equatable, Sendable {
    /// The base URL or the application id cannot be used (`detail` says why).
    case invalidConfiguration(detail: String)
    /// No server URL and application id were given, and none are remembered in the vault.
    case notConfigured
    /// No application connection id (`appcid`) is stored: the device is not registered.
    case notRegistered
    /// The server no longer knows the stored registration (`404` to the registration check, e.g. an
    /// administrator deleted it); `appcid`, `username` and `password` were deleted from the vault.
    case registrationRemoved(server: String, applicationId: String)
    /// The vault already holds a registration (with `server` and `applicationId`); unregister first.
    case alreadyRegistered(server: String, applicationId: String)
    /// The request could not be made or did not complete (connection refused, timeout, TLS failure, ...).
    /// Nothing was changed in the vault.
    case serverUnreachable(url: String, detail: String)
    /// The server answered `status` where the operation expects another one. Nothing was stored or deleted.
    case unexpectedStatus(operation: Operation, url: String, status: Int)
    /// The server answered `status` with a body the client cannot read (`detail` says what is missing).
    /// Nothing was stored or deleted.
    case malformedResponse(operation: Operation, url: String, status: Int, detail: String)
    /// The application connection id stored in the vault (`appcid`) is not one the server could have issued (it
    /// would go into a URL path and a header): the vault was edited by hand or by another program. Nothing was sent.
    case invalidStoredRegistration

    /// The protocol step that failed, for messages.
    public enum Operation: String, Sendable, Equatable {
        case registration = "registration"
        case verification = "registration check"
        case unregistration = "unregistration"
        case serviceRequest = "service request"
    }
}

extension MobileServicesError: CustomStringConvertible, LocalizedError {
    public var description: String {
        switch self {
        case let .invalidConfiguration(detail):
            return "invalid mobile-services configuration: \(detail)"
        case .notConfigured:
            return "no mobile-services server is configured"
        case .notRegistered:
            return "this device is not registered (no application connection id in the vault)"
        case let .registrationRemoved(server, applicationId):
            return "the registration with '\(server)' for application '\(applicationId)' was removed on the server "
                + "(HTTP 404); appcid, username and password were deleted from the vault"
        case let .alreadyRegistered(server, applicationId):
            return "this vault already holds a registration with '\(server)' for application '\(applicationId)'"
        case let .serverUnreachable(url, detail):
            return "cannot reach the mobile-services server at '\(url)': \(detail)"
        case let .unexpectedStatus(operation, url, status):
            return "\(operation.rawValue) failed: '\(url)' answered HTTP \(status) "
                + "(\(HTTPStatusText.reason(status)))"
        case let .malformedResponse(operation, url, status, detail):
            return "\(operation.rawValue) failed: '\(url)' answered HTTP \(status) with an unreadable body: \(detail)"
        case .invalidStoredRegistration:
            return "the application connection id stored in the vault (appcid) is not a valid id"
        }
    }

    public var errorDescription: String? { description }
}

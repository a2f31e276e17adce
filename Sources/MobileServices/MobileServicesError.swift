import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every failure of the mobile-services client that is not about credentials.
///
/// Credential failures (rejected password, no terminal to ask on, plain http refused, ...) are thrown as
/// `VaultAuth.AuthenticationError`; vault failures as `VaultCore.VaultError`. No case carries a password;
/// URLs, application ids and usernames may appear. Response bodies are never quoted.
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
            return "no mobile-services server is configured\n"
                + "hint: pass --server URL and --app-id ID once; they are remembered in the vault"
        case .notRegistered:
            return "this device is not registered (no application connection id in the vault)\n"
                + "hint: run 'vault device register --server URL --app-id ID'"
        case let .registrationRemoved(server, applicationId):
            return "the registration with '\(server)' for application '\(applicationId)' was removed on the server "
                + "(HTTP 404); appcid, username and password were deleted from the vault\n"
                + "hint: register again with 'vault device register'"
        case let .alreadyRegistered(server, applicationId):
            return "this vault already holds a registration with '\(server)' for application '\(applicationId)'\n"
                + "hint: run 'vault device unregister' first"
        case let .serverUnreachable(url, detail):
            return "cannot reach the mobile-services server at '\(url)': \(detail)"
        case let .unexpectedStatus(operation, url, status):
            return "\(operation.rawValue) failed: '\(url)' answered HTTP \(status) "
                + "(\(HTTPStatusText.reason(status)))"
        case let .malformedResponse(operation, url, status, detail):
            return "\(operation.rawValue) failed: '\(url)' answered HTTP \(status) with an unreadable body: \(detail)"
        }
    }

    public var errorDescription: String? { description }
}

enum HTTPStatusText {
    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 409: return "Conflict"
        case 413: return "Payload Too Large"
        case 415: return "Unsupported Media Type"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return HTTPURLResponse.localizedString(forStatusCode: status)
        }
    }
}

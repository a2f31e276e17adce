import Foundation
import VaultCore

/// Where the mobile-services API is: a base URL (any scheme, host and port, so tests can point it at loopback)
/// and an application id.
///
/// The addresses follow the SAP mobile-services tutorials (`https://hcpms-ACCOUNT.LANDSCAPE` is a base URL):
/// - connection root (registration): `{base}/odata/applications/latest/{applicationId}/Connections`
/// - one registration: `{base}/odata/applications/latest/{applicationId}/Connections('{appcid}')`
/// - service root (the proxied OData back end, the registration check): `{base}/{applicationId}`
public struct MobileServicesConfiguration: Sendable, Equatable, CustomStringConvertible {
    /// The base URL as given, without a trailing `/`: `http` or `https`, a host, an optional port and path;
    /// no user info, query or fragment.
    public let server: String
    /// The application id, e.g. `com.sap.tutorial.demoapp`: ASCII letters, digits, `.`, `_` and `-`.
    public let applicationId: String

    /// Checks and normalises `server` (trailing slashes are dropped) and `applicationId`.
    ///
    /// - Throws: ``MobileServicesError/invalidConfiguration(detail:)``.
    public init(server: String, applicationId: String) throws(MobileServicesError) {
        var trimmed = server.trimmingCharacters(in: .whitespaces)
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let components = URLComponents(string: trimmed),
              let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = components.host, !host.isEmpty
        else {
            throw .invalidConfiguration(detail: "'\(server)' is not an absolute http or https URL")
        }
        guard components.user == nil, components.password == nil else {
            throw .invalidConfiguration(detail: "the server URL must not contain a user name or password")
        }
        guard components.query == nil, components.fragment == nil else {
            throw .invalidConfiguration(detail: "the server URL must not have a query or fragment")
        }
        guard !applicationId.isEmpty, applicationId.utf8.count <= 256,
              applicationId.unicodeScalars.allSatisfy(Self.isIdentifierScalar)
        else {
            throw .invalidConfiguration(
                detail: "application id '\(applicationId)' must be non-empty ASCII letters, digits, '.', '_' or '-'")
        }
        self.server = trimmed
        self.applicationId = applicationId
    }

    static func isIdentifierScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", ".", "_", "-": return true
        default: return false
        }
    }

    public var description: String { "\(server) (application \(applicationId))" }

    /// `{base}/odata/applications/latest/{applicationId}/Connections`.
    public var connectionsURL: URL { url("/odata/applications/latest/\(applicationId)/Connections") }

    /// `{base}/odata/applications/latest/{applicationId}/Connections('{appcid}')`.
    public func connectionURL(applicationConnectionId: String) -> URL {
        url("/odata/applications/latest/\(applicationId)/Connections('\(applicationConnectionId)')")
    }

    /// `{base}/{applicationId}`: the service root, which the registration check requests.
    public var serviceRootURL: URL { url("/\(applicationId)") }

    /// `{base}/{applicationId}/{path}`: a resource of the proxied back end, e.g. `TravelAgencies`.
    public func serviceURL(path: String) -> URL {
        url("/\(applicationId)/" + path.drop { $0 == "/" })
    }

    private func url(_ path: String) -> URL {
        // `server` was checked in init; the appended parts are ASCII identifiers and fixed text.
        URL(string: server + path)!
    }

    // MARK: - Remembered in the vault

    /// Vault key of the remembered server URL.
    public static let serverKey = "mobileservices.server"
    /// Vault key of the remembered application id.
    public static let applicationIdKey = "mobileservices.appid"

    /// The configuration remembered in `store` (written with each successful registration), or `nil`.
    ///
    /// - Throws: `VaultError`, or ``MobileServicesError/invalidConfiguration(detail:)`` if the stored values are
    ///   unusable.
    public static func remembered(in store: any KeyValueVault) throws -> MobileServicesConfiguration? {
        guard let server = try store.getString(serverKey), let applicationId = try store.getString(applicationIdKey)
        else { return nil }
        return try MobileServicesConfiguration(server: server, applicationId: applicationId)
    }
}

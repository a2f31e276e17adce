import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The request context of the emulator: Hummingbird's core context plus the peer address, which the administrator
/// API checks when no admin token is configured.
public struct EmulatorRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
    }
}

/// Answers every request of the emulator. It never throws: every failure is an HTTP answer.
///
/// Routes (see docs/EMULATOR.md for the full table):
/// - `POST /odata/applications/latest/{appId}/Connections` → 201 / 400 / 401 / 404 / 413 / 415
/// - `GET|DELETE /odata/applications/latest/{appId}/Connections('{appcid}')` → 200 or 204 / 401 / 404
/// - `GET /{appId}` and `GET /{appId}/` (service root) → 200 / 401 / 403 / 404
/// - `GET /{appId}/TravelAgencies` → 200 / 401 / 403 / 404
/// - `GET /admin/connections`, `DELETE /admin/connections/{appcid}`, `GET|DELETE /admin/stats`
///
/// On the service root and the back end, a request with valid credentials but **without** an `X-SMP-APPCID`
/// header gets `403 Forbidden` with the OData error code `MissingApplicationConnectionId`: the tutorials say the
/// service refuses access without an appcid, and 403 keeps that case apart from "registration unknown" (404),
/// which a client treats as "the registration was removed, purge it".
public struct EmulatorResponder: HTTPResponder {
    public typealias Context = EmulatorRequestContext

    let configuration: EmulatorConfiguration
    let state: EmulatorState
    let requestLogger: (@Sendable (String) -> Void)?

    init(configuration: EmulatorConfiguration, state: EmulatorState, requestLogger: (@Sendable (String) -> Void)?) {
        self.configuration = configuration
        self.state = state
        self.requestLogger = requestLogger
    }

    public func respond(to request: Request, context: Context) async throws -> Response {
        let (route, logPath, response) = await handle(request, context: context)
        state.recordRequest(route: route, status: response.status.code)
        requestLogger?("\(request.method.rawValue) \(logPath) \(response.status.code)")
        return response
    }

    // MARK: Routing (the fixed check order of docs/EMULATOR.md: path shape, method, application id, then the handler)

    func handle(_ request: Request, context: Context) async -> (EmulatorRoute, String, Response) {
        let rawPath = request.uri.path
        guard let segments = Self.decodeSegments(rawPath) else {
            return (.unmatched, Self.loggable(rawPath), Self.odataError(.badRequest, code: "InvalidPath", message: "The request path is not valid percent-encoded UTF-8."))
        }
        let appId = configuration.appId
        let method = request.method

        switch Self.target(of: segments) {
        case .connections(let requestedApp):
            let logPath = "/odata/applications/latest/\(Self.loggable(requestedApp))/Connections"
            guard method == .post else { return (.unmatched, logPath, Self.methodNotAllowed(allow: "POST")) }
            guard requestedApp == appId else { return (.registerConnection, logPath, unknownApplication()) }
            return (.registerConnection, logPath, await register(request))

        case .connection(let requestedApp, let key):
            let logPath = "/odata/applications/latest/\(Self.loggable(requestedApp))/Connections(<appcid>)"
            let route: EmulatorRoute
            switch method {
            case .get: route = .readConnection
            case .delete: route = .deleteConnection
            default: return (.unmatched, logPath, Self.methodNotAllowed(allow: "GET, DELETE"))
            }
            guard requestedApp == appId else { return (route, logPath, unknownApplication()) }
            guard let key else {
                return (route, logPath, Self.odataError(.badRequest, code: "InvalidKeyPredicate", message: "Expected Connections('<ApplicationConnectionId>')."))
            }
            return (route, logPath, connectionEntity(request, key: key, delete: method == .delete))

        case .serviceRoot(let requestedApp):
            let logPath = "/\(Self.loggable(requestedApp))"
            guard method == .get else { return (.unmatched, logPath, Self.methodNotAllowed(allow: "GET")) }
            guard requestedApp == appId else { return (.serviceRoot, logPath, unknownApplication()) }
            return (.serviceRoot, logPath, backEnd(request) { _ in
                Self.json(.ok, .object([("d", .object([("EntitySets", .array([.string("TravelAgencies")]))]))]))
            })

        case .travelAgencies(let requestedApp):
            let logPath = "/\(Self.loggable(requestedApp))/TravelAgencies"
            guard method == .get else { return (.unmatched, logPath, Self.methodNotAllowed(allow: "GET")) }
            guard requestedApp == appId else { return (.travelAgencies, logPath, unknownApplication()) }
            return (.travelAgencies, logPath, backEnd(request) { base in
                let serviceRoot = "\(base)/\(appId)"
                return Self.json(.ok, .object([("d", .object([("results", .array(TravelAgency.all.map { $0.json(serviceRoot: serviceRoot) }))]))]))
            })

        case .adminConnections:
            let logPath = "/admin/connections"
            guard method == .get else { return (.unmatched, logPath, Self.methodNotAllowed(allow: "GET")) }
            return (.adminListConnections, logPath, admin(request, context: context) {
                let list = state.connections.map { registration in
                    JSONValue.object([
                        ("ApplicationConnectionId", .string(registration.applicationConnectionId)),
                        ("UserName", .string(registration.user)),
                        ("DeviceType", .string(registration.deviceType)),
                        ("DeviceModel", .optionalString(registration.deviceModel)),
                        ("CreatedAt", .odataDate(registration.createdAtMilliseconds)),
                    ])
                }
                return Self.json(.ok, .object([("connections", .array(list))]))
            })

        case .adminConnection(let id):
            let logPath = "/admin/connections/<appcid>"
            guard method == .delete else { return (.unmatched, logPath, Self.methodNotAllowed(allow: "DELETE")) }
            return (.adminDeleteConnection, logPath, admin(request, context: context) {
                state.removeConnection(id)
                    ? Response(status: .noContent)
                    : Self.odataError(.notFound, code: "ConnectionNotFound", message: "No registration with this application connection id.")
            })

        case .adminStats:
            let logPath = "/admin/stats"
            switch method {
            case .get:
                return (.adminStats, logPath, admin(request, context: context) { statsResponse() })
            case .delete:
                return (.adminResetStats, logPath, admin(request, context: context) {
                    state.resetRequestCounts()
                    return Response(status: .noContent)
                })
            default:
                return (.unmatched, logPath, Self.methodNotAllowed(allow: "GET, DELETE"))
            }

        case .unknown:
            return (.unmatched, Self.loggable(rawPath), Self.odataError(.notFound, code: "ResourceNotFound", message: "No resource at this path."))
        }
    }
}

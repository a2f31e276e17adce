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
/// header gets `403 Forbidden` with the OData error code `MissingApplicationConnectionId`: the seeds say the
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

    // MARK: Routing

    private enum Target {
        case connections(appId: String)
        case connection(appId: String, key: String?)  // nil: malformed key predicate
        case serviceRoot(appId: String)
        case travelAgencies(appId: String)
        case adminConnections
        case adminConnection(String)
        case adminStats
        case unknown
    }

    private func handle(_ request: Request, context: Context) async -> (EmulatorRoute, String, Response) {
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

    private static func target(of segments: [String]) -> Target {
        switch segments.count {
        case 1:
            return .serviceRoot(appId: segments[0])
        case 2 where segments[0] == "admin" && segments[1] == "connections":
            return .adminConnections
        case 2 where segments[0] == "admin" && segments[1] == "stats":
            return .adminStats
        case 2 where segments[1].isEmpty:
            return .serviceRoot(appId: segments[0])
        case 2 where segments[1] == "TravelAgencies":
            return .travelAgencies(appId: segments[0])
        case 3 where segments[0] == "admin" && segments[1] == "connections" && !segments[2].isEmpty:
            return .adminConnection(segments[2])
        case 5 where segments[0] == "odata" && segments[1] == "applications" && segments[2] == "latest":
            let last = segments[4]
            if last == "Connections" { return .connections(appId: segments[3]) }
            if last.hasPrefix("Connections(") {
                return .connection(appId: segments[3], key: parseKey(last.dropFirst("Connections(".count)))
            }
            return .unknown
        default:
            return .unknown
        }
    }

    /// `'abc')` → `abc`; anything else → nil.
    private static func parseKey(_ rest: Substring) -> String? {
        guard rest.count >= 3, rest.hasPrefix("'"), rest.hasSuffix("')") else { return nil }
        let key = rest.dropFirst().dropLast(2)
        guard !key.isEmpty, !key.contains("'") else { return nil }
        return String(key)
    }

    /// Splits `/a/b` into percent-decoded segments (`["a", "b"]`; `/a/` gives `["a", ""]`). nil for a path that
    /// does not start with `/`, or bad percent-encoding.
    private static func decodeSegments(_ path: String) -> [String]? {
        guard path.hasPrefix("/") else { return nil }
        var segments: [String] = []
        for raw in path.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            guard let decoded = String(raw).removingPercentEncoding else { return nil }
            segments.append(decoded)
        }
        return segments
    }

    /// A path piece fit for a log line: at most 100 characters, control characters replaced.
    private static func loggable(_ text: String) -> String {
        let cleaned = String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
        return cleaned.count > 100 ? String(cleaned.prefix(100)) + "..." : cleaned
    }

    // MARK: Registration

    private func register(_ request: Request) async -> Response {
        if let tooLarge = bodyTooLargeByHeader(request) { return tooLarge }
        let user: String
        switch authenticate(request) {
        case .success(let name): user = name
        case .failure(let response): return response
        }
        if let contentType = request.headers[.contentType] {
            let mediaType = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard mediaType == "application/json" else {
                return Self.odataError(.unsupportedMediaType, code: "UnsupportedMediaType", message: "The request body must be application/json.")
            }
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: configuration.maxBodySize)
        } catch let error as HTTPResponseError where error.status == .contentTooLarge {
            return bodyTooLarge()
        } catch {
            return Self.odataError(.badRequest, code: "InvalidBody", message: "The request body could not be read.")
        }
        guard body.readableBytes > 0 else {
            return Self.odataError(.badRequest, code: "MissingBody", message: "A JSON body with at least DeviceType is required.")
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] else {
            return Self.odataError(.badRequest, code: "MalformedBody", message: "The request body is not a JSON object.")
        }
        guard let deviceType = object["DeviceType"] as? String,
            !deviceType.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        else {
            return Self.odataError(.badRequest, code: "InvalidDeviceType", message: "DeviceType must be a non-empty string.")
        }
        var deviceModel: String?
        if let value = object["DeviceModel"], !(value is NSNull) {
            guard let string = value as? String else {
                return Self.odataError(.badRequest, code: "InvalidDeviceModel", message: "DeviceModel must be a string.")
            }
            deviceModel = string
        }
        if let value = object["UserName"], !(value is NSNull), !(value is String) {
            return Self.odataError(.badRequest, code: "InvalidUserName", message: "UserName must be a string.")
        }
        guard let base = baseURL(request) else { return invalidHost() }

        let registration = state.addConnection(user: user, deviceType: deviceType, deviceModel: deviceModel)
        let uri = entityURI(base: base, id: registration.applicationConnectionId)
        var headers = HTTPFields()
        headers[.location] = uri
        return Self.json(.created, .object([("d", entityJSON(registration, uri: uri))]), headers: headers)
    }

    private func connectionEntity(_ request: Request, key: String, delete: Bool) -> Response {
        let user: String
        switch authenticate(request) {
        case .success(let name): user = name
        case .failure(let response): return response
        }
        guard let registration = state.connection(key), registration.user == user else {
            return Self.odataError(.notFound, code: "ConnectionNotFound", message: "No registration with this application connection id.")
        }
        if delete {
            state.removeConnection(key)
            return Response(status: .noContent)
        }
        guard let base = baseURL(request) else { return invalidHost() }
        return Self.json(.ok, .object([("d", entityJSON(registration, uri: entityURI(base: base, id: key)))]))
    }

    private func entityURI(base: String, id: String) -> String {
        "\(base)/odata/applications/latest/\(configuration.appId)/Connections('\(id)')"
    }

    private func entityJSON(_ registration: Registration, uri: String) -> JSONValue {
        let emptyResults = JSONValue.object([("results", .array([]))])
        return .object([
            ("__metadata", .object([("id", .string(uri)), ("uri", .string(uri)), ("type", .string("applications.Connection"))])),
            ("ETag", .string(Self.etag(milliseconds: registration.createdAtMilliseconds))),
            ("ApplicationConnectionId", .string(registration.applicationConnectionId)),
            ("UserName", .string(registration.user)),
            ("AndroidGcmPushEnabled", .bool(false)),
            ("AndroidGcmRegistrationId", .null),
            ("ApnsPushEnable", .bool(false)),
            ("ApnsDeviceToken", .null),
            ("ApplicationVersion", .string("1.0")),
            ("CollectClientUsageReports", .bool(false)),
            ("ConnectionLogLevel", .string("NONE")),
            ("CustomizationBundleId", .null),
            ("DeviceModel", .optionalString(registration.deviceModel)),
            ("DeviceType", .string(registration.deviceType)),
            ("DeviceSubType", .null),
            ("DevicePhoneNumber", .null),
            ("DeviceIMSI", .null),
            ("E2ETraceLevel", .string("Low")),
            ("FeatureVectorPolicyAllEnabled", .bool(true)),
            ("FormFactor", .null),
            ("LogEntryExpiry", .int(7)),
            ("MaxConnectionWaitTimeForClientUsage", .int(30)),
            ("PasswordPolicyEnabled", .bool(false)),
            ("PasswordPolicyDefaultPasswordAllowed", .bool(true)),
            ("PasswordPolicyMinLength", .int(8)),
            ("PasswordPolicyDigitRequired", .bool(false)),
            ("PasswordPolicyUpperRequired", .bool(false)),
            ("PasswordPolicyLowerRequired", .bool(false)),
            ("PasswordPolicySpecialRequired", .bool(false)),
            ("PasswordPolicyExpiresInNDays", .int(0)),
            ("PasswordPolicyMinUniqueChars", .int(0)),
            ("PasswordPolicyLockTimeout", .int(300)),
            ("PasswordPolicyRetryLimit", .int(10)),
            ("PasswordPolicyFingerprintEnabled", .bool(true)),
            ("ProxyApplicationEndpoint", .string("https://sapes4.sapdevcenter.com/sap/opu/odata/IWFND/RMTSAMPLEFLIGHT/")),
            ("ProxyPushEndpoint", .null),
            ("PublishedToMobilePlace", .bool(false)),
            ("UploadLogs", .bool(false)),
            ("InAppMessaging", .bool(false)),
            ("UserLocale", .null),
            ("TimeZone", .null),
            ("LastKnownLocation", .null),
            ("CreatedAt", .odataDate(registration.createdAtMilliseconds)),
            ("PushGroup", .null),
            ("Email", .null),
            ("Capability", emptyResults),
            ("FeatureVectorPolicy", emptyResults),
        ])
    }

    /// `2017-01-10 06:10:33.406` (UTC), the seed's ETag format with milliseconds.
    static func etag(milliseconds: Int64) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func pad(_ value: Int?, _ width: Int) -> String {
            let text = String(value ?? 0)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let millis = Int(((milliseconds % 1000) + 1000) % 1000)
        return "\(pad(c.year, 4))-\(pad(c.month, 2))-\(pad(c.day, 2)) \(pad(c.hour, 2)):\(pad(c.minute, 2)):\(pad(c.second, 2)).\(pad(millis, 3))"
    }

    // MARK: Service root and back end

    private func backEnd(_ request: Request, answer: (_ base: String) -> Response) -> Response {
        let user: String
        switch authenticate(request) {
        case .success(let name): user = name
        case .failure(let response): return response
        }
        let appcids = request.headers[values: HTTPField.Name("X-SMP-APPCID")!]
        guard let appcid = appcids.first?.trimmingCharacters(in: .whitespaces), !appcid.isEmpty else {
            return Self.odataError(
                .forbidden, code: "MissingApplicationConnectionId",
                message: "The X-SMP-APPCID header is required: register the device first (POST .../Connections).")
        }
        guard appcids.count == 1 else {
            return Self.odataError(.badRequest, code: "InvalidApplicationConnectionId", message: "Send exactly one X-SMP-APPCID header.")
        }
        guard let registration = state.connection(appcid), registration.user == user else {
            return Self.odataError(.notFound, code: "ConnectionNotFound", message: "The application connection id is not registered for this user.")
        }
        guard let base = baseURL(request) else { return invalidHost() }
        return answer(base)
    }

    // MARK: Administrator API

    private func admin(_ request: Request, context: Context, answer: () -> Response) -> Response {
        if let token = configuration.adminToken {
            guard let presented = Self.bearerToken(request), Self.constantTimeEquals(presented, token) else {
                var headers = HTTPFields()
                headers[.wwwAuthenticate] = "Bearer realm=\"mobile-services-admin\""
                return Self.odataError(.unauthorized, code: "AdminUnauthorized", message: "A valid admin bearer token is required.", headers: headers)
            }
        } else if let peer = context.remoteAddress, !Self.isLoopback(peer) {
            return Self.odataError(.forbidden, code: "AdminForbidden", message: "Without an admin token the administrator API answers loopback clients only.")
        }
        return answer()
    }

    private func statsResponse() -> Response {
        let counts = state.requestCounts()
        var total = 0
        var routes: [(String, JSONValue)] = []
        for route in EmulatorRoute.allCases {
            guard let byStatus = counts[route], !byStatus.isEmpty else { continue }
            let members = byStatus.sorted { $0.key < $1.key }.map { (String($0.key), JSONValue.int(Int64($0.value))) }
            total += byStatus.values.reduce(0, +)
            routes.append((route.rawValue, .object(members)))
        }
        return Self.json(.ok, .object([("total", .int(Int64(total))), ("routes", .object(routes))]))
    }

    static func isLoopback(_ address: SocketAddress) -> Bool {
        switch address {
        case .unixDomainSocket: return true
        case .v4, .v6:
            guard let ip = address.ipAddress else { return false }
            return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
        }
    }

    private static func bearerToken(_ request: Request) -> String? {
        let values = request.headers[values: .authorization]
        guard values.count == 1 else { return nil }
        let parts = values[0].split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    // MARK: Authentication

    private enum AuthResult {
        case success(String)
        case failure(Response)
    }

    /// HTTP Basic against the configured users. Missing, malformed (bad scheme, bad base64, not UTF-8, no colon)
    /// and wrong credentials all get 401 with the Basic challenge, so a client's challenge handling applies.
    private func authenticate(_ request: Request) -> AuthResult {
        let values = request.headers[values: .authorization]
        guard values.count == 1 else {
            return .failure(Self.unauthorized(values.isEmpty ? "Authentication is required." : "Send exactly one Authorization header."))
        }
        guard let (name, password) = Self.decodeBasic(values[0]) else {
            return .failure(Self.unauthorized("The Authorization header is not valid HTTP Basic credentials."))
        }
        // Compare against a dummy for unknown users so the time taken does not tell which users exist.
        let expected = configuration.users[name]
        let matches = Self.constantTimeEquals(password, expected ?? "\u{0}unknown-user-dummy-password")
        guard matches, expected != nil else {
            return .failure(Self.unauthorized("The credentials you entered are incorrect."))
        }
        return .success(name)
    }

    static func decodeBasic(_ header: String) -> (String, String)? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty, let data = Data(base64Encoded: token), let decoded = String(data: data, encoding: .utf8),
            let colon = decoded.firstIndex(of: ":")
        else { return nil }
        return (String(decoded[..<colon]), String(decoded[decoded.index(after: colon)...]))
    }

    /// Equal strings in time that depends only on the longer length, not on where they differ.
    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var difference: UInt8 = x.count == y.count ? 0 : 1
        for index in 0..<max(x.count, y.count) {
            let p = index < x.count ? x[index] : 0
            let q = index < y.count ? y[index] : 0
            difference |= p ^ q
        }
        return difference == 0
    }

    // MARK: Helpers

    /// `http://<Host header>`; `http://localhost` when the request has none; nil for a Host that is not a plain
    /// host[:port].
    private func baseURL(_ request: Request) -> String? {
        guard let authority = request.head.authority, !authority.isEmpty else { return "http://localhost" }
        let allowed = authority.utf8.count <= 255
            && authority.unicodeScalars.allSatisfy { scalar in
                switch scalar {
                case "A"..."Z", "a"..."z", "0"..."9", ".", "-", ":", "[", "]": true
                default: false
                }
            }
        return allowed ? "http://\(authority)" : nil
    }

    private func bodyTooLargeByHeader(_ request: Request) -> Response? {
        guard let value = request.headers[.contentLength] else { return nil }
        guard let length = Int(value.trimmingCharacters(in: .whitespaces)) else {
            return Self.odataError(.badRequest, code: "InvalidContentLength", message: "Content-Length is not a number.")
        }
        return length > configuration.maxBodySize ? bodyTooLarge() : nil
    }

    private func bodyTooLarge() -> Response {
        Self.odataError(.contentTooLarge, code: "PayloadTooLarge", message: "The request body exceeds \(configuration.maxBodySize) bytes.")
    }

    private func unknownApplication() -> Response {
        Self.odataError(.notFound, code: "ApplicationNotFound", message: "Unknown application id.")
    }

    private func invalidHost() -> Response {
        Self.odataError(.badRequest, code: "InvalidHost", message: "The Host header is not a valid host[:port].")
    }

    private static func unauthorized(_ message: String) -> Response {
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = "Basic realm=\"mobile-services\", charset=\"UTF-8\""
        return odataError(.unauthorized, code: "Unauthorized", message: message, headers: headers)
    }

    private static func methodNotAllowed(allow: String) -> Response {
        var headers = HTTPFields()
        headers[.allow] = allow
        return odataError(.methodNotAllowed, code: "MethodNotAllowed", message: "Allowed methods: \(allow).", headers: headers)
    }

    /// `{"error":{"code":"...","message":{"lang":"en","value":"..."}}}`
    static func odataError(_ status: HTTPResponse.Status, code: String, message: String, headers: HTTPFields = [:]) -> Response {
        json(status, .object([("error", .object([("code", .string(code)), ("message", .object([("lang", .string("en")), ("value", .string(message))]))]))]), headers: headers)
    }

    static func json(_ status: HTTPResponse.Status, _ value: JSONValue, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json; charset=utf-8"
        headers[HTTPField.Name("DataServiceVersion")!] = "2.0"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: value.serialized)))
    }
}

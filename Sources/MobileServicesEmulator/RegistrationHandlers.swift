import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The registration API (`POST .../Connections`, `GET|DELETE .../Connections('...')`) and the service root and
/// back end that need a registered appcid.
extension EmulatorResponder {
    func register(_ request: Request) async -> Response {
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

    func connectionEntity(_ request: Request, key: String, delete: Bool) -> Response {
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

    func entityURI(base: String, id: String) -> String {
        "\(base)/odata/applications/latest/\(configuration.appId)/Connections('\(id)')"
    }

    // MARK: Service root and back end

    func backEnd(_ request: Request, answer: (_ base: String) -> Response) -> Response {
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

    // MARK: Helpers


    /// `http://<Host header>`; `http://localhost` when the request has none; nil for a Host that is not a plain
    /// host[:port].
    func baseURL(_ request: Request) -> String? {
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

    func bodyTooLargeByHeader(_ request: Request) -> Response? {
        guard let value = request.headers[.contentLength] else { return nil }
        guard let length = Int(value.trimmingCharacters(in: .whitespaces)) else {
            return Self.odataError(.badRequest, code: "InvalidContentLength", message: "Content-Length is not a number.")
        }
        return length > configuration.maxBodySize ? bodyTooLarge() : nil
    }

    func bodyTooLarge() -> Response {
        Self.odataError(.contentTooLarge, code: "PayloadTooLarge", message: "The request body exceeds \(configuration.maxBodySize) bytes.")
    }

    func unknownApplication() -> Response {
        Self.odataError(.notFound, code: "ApplicationNotFound", message: "Unknown application id.")
    }

    func invalidHost() -> Response {
        Self.odataError(.badRequest, code: "InvalidHost", message: "The Host header is not a valid host[:port].")
    }
}

import HTTPTypes
import Hummingbird
import NIOCore

/// OData-style JSON answers: every body the emulator sends, errors included.
extension EmulatorResponder {
    static func methodNotAllowed(allow: String) -> Response {
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

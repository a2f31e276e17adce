import Foundation
import HTTPTypes
import Hummingbird

/// HTTP Basic authentication against the configured users.
extension EmulatorResponder {
    enum AuthResult {
        case success(String)
        case failure(Response)
    }

    /// HTTP Basic against the configured users. Missing, malformed (bad scheme, bad base64, not UTF-8, no colon)
    /// and wrong credentials all get 401 with the Basic challenge, so a client's challenge handling applies.
    func authenticate(_ request: Request) -> AuthResult {
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

    static func unauthorized(_ message: String) -> Response {
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = "Basic realm=\"mobile-services\", charset=\"UTF-8\""
        return odataError(.unauthorized, code: "Unauthorized", message: message, headers: headers)
    }
}

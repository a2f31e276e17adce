import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The administrator API: `/admin/connections`, `/admin/stats`, protected by a bearer token or, without one, by
/// answering loopback peers only.
extension EmulatorResponder {
    func admin(_ request: Request, context: Context, answer: () -> Response) -> Response {
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

    func statsResponse() -> Response {
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
            return isLoopbackHost(ip)
        }
    }

    static func bearerToken(_ request: Request) -> String? {
        let values = request.headers[values: .authorization]
        guard values.count == 1 else { return nil }
        let parts = values[0].split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }
}

/// Whether `host` (a name or an address as text) is a loopback address: `localhost`, `127.x.x.x`, `::1` or an
/// IPv4-mapped `::ffff:127.x.x.x`. The one loopback rule of the emulator: the administrator API without a token
/// answers only peers that pass it, and the executable refuses to bind a host that does not pass it unless an admin
/// token is configured.
public func isLoopbackHost(_ host: String) -> Bool {
    host == "localhost" || host.hasPrefix("127.") || host == "::1" || host.hasPrefix("::ffff:127.")
}

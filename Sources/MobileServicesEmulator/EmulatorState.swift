import Foundation
import Synchronization

/// One device registration (an "application connection").
public struct Registration: Sendable, Equatable {
    /// The appcid, a lower-case UUID string.
    public let applicationConnectionId: String
    /// The authenticated user that registered the device; the only one who may use the registration.
    public let user: String
    public let deviceType: String
    public let deviceModel: String?
    /// Milliseconds since 1970, as in `CreatedAt: "/Date(ms)/"`.
    public let createdAtMilliseconds: Int64

    public init(
        applicationConnectionId: String,
        user: String,
        deviceType: String,
        deviceModel: String?,
        createdAtMilliseconds: Int64
    ) {
        self.applicationConnectionId = applicationConnectionId
        self.user = user
        self.deviceType = deviceType
        self.deviceModel = deviceModel
        self.createdAtMilliseconds = createdAtMilliseconds
    }
}

/// The routes the emulator counts requests for. The raw value is the key used by `GET /admin/stats`.
///
/// A request is counted under a route when its path has the route's shape and its method is the route's method,
/// whatever the status (an unknown application id on a `Connections` path is still counted under that route).
/// Everything else (unknown paths, wrong methods) is counted under ``unmatched``.
public enum EmulatorRoute: String, Sendable, CaseIterable, Hashable {
    /// `POST /odata/applications/latest/{appId}/Connections`
    case registerConnection = "connections.create"
    /// `GET /odata/applications/latest/{appId}/Connections('{appcid}')`
    case readConnection = "connections.read"
    /// `DELETE /odata/applications/latest/{appId}/Connections('{appcid}')`
    case deleteConnection = "connections.delete"
    /// `GET /{appId}` and `GET /{appId}/`: the registration check of the second tutorial.
    case serviceRoot = "serviceRoot"
    /// `GET /{appId}/TravelAgencies`
    case travelAgencies = "travelAgencies"
    /// `GET /admin/connections`
    case adminListConnections = "admin.connections.list"
    /// `DELETE /admin/connections/{appcid}`
    case adminDeleteConnection = "admin.connections.delete"
    /// `GET /admin/stats`
    case adminStats = "admin.stats"
    /// `DELETE /admin/stats`
    case adminResetStats = "admin.stats.reset"
    /// Unknown paths and wrong methods (404, 405).
    case unmatched = "unmatched"
}

/// The emulator's in-memory state: registrations and request counters. Thread-safe; share one instance between
/// the server and the test that drives it.
public final class EmulatorState: Sendable {
    private struct Storage {
        var registrations: [String: Registration] = [:]
        var order: [String] = []
        var counts: [EmulatorRoute: [Int: Int]] = [:]
    }

    private let storage = Mutex(Storage())

    public init() {}

    // MARK: Registrations

    /// Creates a registration with a fresh appcid (what a successful `POST .../Connections` does).
    @discardableResult
    public func addConnection(user: String, deviceType: String, deviceModel: String? = nil) -> Registration {
        let registration = Registration(
            applicationConnectionId: UUID().uuidString.lowercased(),
            user: user,
            deviceType: deviceType,
            deviceModel: deviceModel,
            createdAtMilliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        )
        storage.withLock {
            $0.registrations[registration.applicationConnectionId] = registration
            $0.order.append(registration.applicationConnectionId)
        }
        return registration
    }

    /// The registration with this appcid, if any (whoever owns it).
    public func connection(_ applicationConnectionId: String) -> Registration? {
        storage.withLock { $0.registrations[applicationConnectionId] }
    }

    /// Deletes a registration as an administrator would. Returns `false` when there was none.
    @discardableResult
    public func removeConnection(_ applicationConnectionId: String) -> Bool {
        storage.withLock {
            guard $0.registrations.removeValue(forKey: applicationConnectionId) != nil else { return false }
            $0.order.removeAll { $0 == applicationConnectionId }
            return true
        }
    }

    /// All registrations, oldest first.
    public var connections: [Registration] {
        storage.withLock { s in s.order.compactMap { s.registrations[$0] } }
    }

    // MARK: Request counters

    /// Counts one answered request.
    public func recordRequest(route: EmulatorRoute, status: Int) {
        storage.withLock { $0.counts[route, default: [:]][status, default: 0] += 1 }
    }

    /// How many requests were answered on `route`, with `status` only if given.
    public func requestCount(route: EmulatorRoute, status: Int? = nil) -> Int {
        storage.withLock { s in
            let byStatus = s.counts[route] ?? [:]
            if let status { return byStatus[status] ?? 0 }
            return byStatus.values.reduce(0, +)
        }
    }

    /// route → status → count, for every route that saw at least one request.
    public func requestCounts() -> [EmulatorRoute: [Int: Int]] {
        storage.withLock { $0.counts }
    }

    /// Forgets all counters (registrations stay).
    public func resetRequestCounts() {
        storage.withLock { $0.counts = [:] }
    }
}

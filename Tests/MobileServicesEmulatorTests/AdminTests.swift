import Foundation
import Synchronization
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MobileServicesEmulator
import Testing

@Suite("Administrator API and request counters")
struct AdminTests {
    @Test("GET /admin/connections lists appcids and users, oldest first")
    func listConnections() async throws {
        try await withEmulator { client, _ in
            let first = try await register(client, auth: aliceAuth)
            let second = try await register(client, auth: bobAuth)
            let response = try await client.execute(uri: "/admin/connections", method: .get)
            #expect(response.status == .ok)
            let list = try #require(try jsonObject(response)["connections"] as? [[String: Any]])
            #expect(list.map { $0["ApplicationConnectionId"] as? String } == [first, second])
            #expect(list.map { $0["UserName"] as? String } == ["alice", "bob"])
            #expect(list.allSatisfy { ($0["CreatedAt"] as? String)?.hasPrefix("/Date(") == true })
            #expect(!String(buffer: response.body).contains("hunter2"))
        }
    }

    @Test("DELETE /admin/connections/{appcid}: 204, then 404")
    func deleteConnection() async throws {
        try await withEmulator { client, state in
            let appcid = try await register(client)
            #expect(try await client.execute(uri: "/admin/connections/\(appcid)", method: .delete).status == .noContent)
            let again = try await client.execute(uri: "/admin/connections/\(appcid)", method: .delete)
            #expect(again.status == .notFound)
            #expect(try odataErrorCode(again) == "ConnectionNotFound")
            #expect(state.connections.isEmpty)
            // The owner sees it gone too.
            let read = try await client.execute(uri: "\(connectionsPath)('\(appcid)')", method: .get, headers: headers([("Authorization", aliceAuth)]))
            #expect(read.status == .notFound)
        }
    }

    @Test("with an admin token, /admin needs Authorization: Bearer <token>")
    func adminToken() async throws {
        try await withEmulator(adminToken: "t0ken-123") { client, state in
            let appcid = try await register(client)
            for auth in [nil, "Bearer wrong", "Bearer t0ken-12", "Bearer t0ken-1234", aliceAuth, "t0ken-123"] as [String?] {
                let pairs = auth.map { [("Authorization", $0)] } ?? []
                let list = try await client.execute(uri: "/admin/connections", method: .get, headers: headers(pairs))
                #expect(list.status == .unauthorized, "\(auth ?? "none")")
                #expect(list.headers[.wwwAuthenticate] == #"Bearer realm="mobile-services-admin""#)
                #expect(!String(buffer: list.body).contains("t0ken"))
                let delete = try await client.execute(uri: "/admin/connections/\(appcid)", method: .delete, headers: headers(pairs))
                #expect(delete.status == .unauthorized)
                let stats = try await client.execute(uri: "/admin/stats", method: .get, headers: headers(pairs))
                #expect(stats.status == .unauthorized)
            }
            #expect(state.connection(appcid) != nil)

            let good = headers([("Authorization", "Bearer t0ken-123")])
            #expect(try await client.execute(uri: "/admin/connections", method: .get, headers: good).status == .ok)
            #expect(try await client.execute(uri: "/admin/stats", method: .get, headers: good).status == .ok)
            #expect(try await client.execute(uri: "/admin/connections/\(appcid)", method: .delete, headers: good).status == .noContent)
            #expect(state.connection(appcid) == nil)
        }
    }

    @Test("without a token the administrator API answers a loopback peer over a real socket", arguments: [TestingSetup.live])
    func loopbackWithoutToken(setup: TestingSetup) async throws {
        let state = EmulatorState()
        let app = buildEmulatorApplication(configuration: try makeConfiguration(), state: state)
        try await app.test(setup) { client in
            let appcid = try await register(client)
            #expect(try await client.execute(uri: "/admin/connections", method: .get).status == .ok)
            #expect(try await client.execute(uri: "/admin/connections/\(appcid)", method: .delete).status == .noContent)
            #expect(state.connections.isEmpty)
        }
    }

    @Test("request counters per route and status, over HTTP and the Swift API")
    func stats() async throws {
        try await withEmulator { client, state in
            let appcid = try await register(client)
            _ = try await client.execute(uri: connectionsPath, method: .post, headers: headers([("Authorization", basic("alice", "bad"))]), body: registrationBody())
            _ = try await client.execute(uri: "/\(appId)", method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: appcid))
            _ = try await client.execute(uri: "/\(appId)/TravelAgencies", method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: appcid))
            _ = try await client.execute(uri: "/nowhere/at/all", method: .get)

            #expect(state.requestCount(route: .registerConnection) == 2)
            #expect(state.requestCount(route: .registerConnection, status: 201) == 1)
            #expect(state.requestCount(route: .registerConnection, status: 401) == 1)
            #expect(state.requestCount(route: .serviceRoot) == 1)
            #expect(state.requestCount(route: .serviceRoot, status: 200) == 1)
            #expect(state.requestCount(route: .travelAgencies, status: 200) == 1)
            #expect(state.requestCount(route: .unmatched, status: 404) == 1)
            #expect(state.requestCount(route: .readConnection) == 0)

            let response = try await client.execute(uri: "/admin/stats", method: .get)
            #expect(response.status == .ok)
            let root = try jsonObject(response)
            #expect(root["total"] as? Int == 5)  // the stats request itself is counted after it is answered
            let routes = try #require(root["routes"] as? [String: [String: Int]])
            #expect(routes["connections.create"] == ["201": 1, "401": 1])
            #expect(routes["serviceRoot"] == ["200": 1])
            #expect(routes["travelAgencies"] == ["200": 1])
            #expect(routes["unmatched"] == ["404": 1])
            #expect(routes["admin.stats"] == nil)
            #expect(state.requestCount(route: .adminStats, status: 200) == 1)

            #expect(try await client.execute(uri: "/admin/stats", method: .delete).status == .noContent)
            #expect(state.requestCount(route: .serviceRoot) == 0)
            #expect(state.requestCounts() == [.adminResetStats: [204: 1]])
            state.resetRequestCounts()
            #expect(state.requestCounts().isEmpty)
        }
    }

    @Test("the request log has METHOD path status and no secrets")
    func requestLog() async throws {
        let lines = LogLines()
        let app = buildEmulatorApplication(configuration: try makeConfiguration(), requestLogger: { lines.append($0) })
        try await app.test(.router) { client in
            let appcid = try await register(client)
            _ = try await client.execute(uri: "/\(appId)?password=hunter2", method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: appcid))
            _ = try await client.execute(uri: "\(connectionsPath)('\(appcid)')", method: .delete, headers: headers([("Authorization", aliceAuth)]))
        }
        let logged = lines.all
        #expect(logged == [
            "POST /odata/applications/latest/com.example.demo/Connections 201",
            "GET /com.example.demo 200",
            "DELETE /odata/applications/latest/com.example.demo/Connections(<appcid>) 204",
        ])
        let text = logged.joined(separator: "\n")
        #expect(!text.contains("s3cret") && !text.contains("hunter2") && !text.contains("Basic"))
    }

    @Test("concurrent registrations are all recorded")
    func concurrentRegistrations() async throws {
        try await withEmulator { client, state in
            let ids = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<40 {
                    group.addTask { try await register(client, auth: index.isMultiple(of: 2) ? aliceAuth : bobAuth) }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(ids.count == 40)
            #expect(Set(state.connections.map(\.applicationConnectionId)) == ids)
            #expect(state.requestCount(route: .registerConnection, status: 201) == 40)
        }
    }
}

/// Lines collected from the request logger, which the server calls from its own tasks.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

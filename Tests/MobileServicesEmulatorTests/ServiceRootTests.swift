import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MobileServicesEmulator
import Testing

@Suite("Service root and the proxied back end")
struct ServiceRootTests {
    @Test("GET /{appId} and /{appId}/ with credentials and a known appcid: 200 with the service document")
    func serviceRootOK() async throws {
        try await withEmulator { client, _ in
            let appcid = try await register(client)
            for path in ["/\(appId)", "/\(appId)/"] {
                let response = try await client.execute(uri: path, method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: appcid))
                #expect(response.status == .ok, "\(path)")
                let d = try #require(try jsonObject(response)["d"] as? [String: Any])
                #expect(d["EntitySets"] as? [String] == ["TravelAgencies"])
            }
        }
    }

    @Test("bad or missing credentials: 401 with the Basic challenge, even with a valid appcid")
    func serviceRootUnauthorized() async throws {
        try await withEmulator { client, _ in
            let appcid = try await register(client)
            for auth in [nil, basic("alice", "nope"), basic("nobody", "s3cret:with-colon"), "Basic %%%"] as [String?] {
                let response = try await client.execute(uri: "/\(appId)", method: .get, headers: serviceRootHeaders(auth: auth, appcid: appcid))
                #expect(response.status == .unauthorized)
                #expect(response.headers[.wwwAuthenticate] == #"Basic realm="mobile-services", charset="UTF-8""#)
            }
        }
    }

    /// Documented choice: valid credentials without `X-SMP-APPCID` get 403 `MissingApplicationConnectionId`, so a
    /// client can tell "you sent no registration" from "your registration is gone" (404).
    @Test("missing X-SMP-APPCID: 403 with the MissingApplicationConnectionId OData error")
    func missingAppcid() async throws {
        try await withEmulator { client, _ in
            _ = try await register(client)
            for path in ["/\(appId)", "/\(appId)/TravelAgencies"] {
                let response = try await client.execute(uri: path, method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: nil))
                #expect(response.status == .forbidden)
                #expect(try odataErrorCode(response) == "MissingApplicationConnectionId")
                let empty = try await client.execute(uri: path, method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: " "))
                #expect(empty.status == .forbidden)
            }
        }
    }

    @Test("unknown appcid, or another user's appcid: 404")
    func unknownAppcid() async throws {
        try await withEmulator { client, _ in
            let alices = try await register(client)
            let unknown = try await client.execute(uri: "/\(appId)", method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: UUID().uuidString.lowercased()))
            #expect(unknown.status == .notFound)
            #expect(try odataErrorCode(unknown) == "ConnectionNotFound")
            let foreign = try await client.execute(uri: "/\(appId)", method: .get, headers: serviceRootHeaders(auth: bobAuth, appcid: alices))
            #expect(foreign.status == .notFound)
            let agencies = try await client.execute(uri: "/\(appId)/TravelAgencies", method: .get, headers: serviceRootHeaders(auth: bobAuth, appcid: alices))
            #expect(agencies.status == .notFound)
        }
    }

    @Test("an unknown application id on the service root: 404 before authentication")
    func unknownApplication() async throws {
        try await withEmulator { client, _ in
            let appcid = try await register(client)
            let response = try await client.execute(uri: "/com.example.other", method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: appcid))
            #expect(response.status == .notFound)
            #expect(try odataErrorCode(response) == "ApplicationNotFound")
            #expect(try await client.execute(uri: "/com.example.other/TravelAgencies", method: .get).status == .notFound)
        }
    }

    @Test("an administrator's delete makes the service root answer 404 (tutorial 002)")
    func adminDeleteThenServiceRoot404() async throws {
        try await withEmulator { client, state in
            let appcid = try await register(client)
            let before = try await client.execute(uri: "/\(appId)", method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: appcid))
            #expect(before.status == .ok)

            let delete = try await client.execute(uri: "/admin/connections/\(appcid)", method: .delete)
            #expect(delete.status == .noContent)
            #expect(state.connection(appcid) == nil)

            let after = try await client.execute(uri: "/\(appId)", method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: appcid))
            #expect(after.status == .notFound)
        }
    }

    @Test("the Swift API removeConnection has the same effect")
    func swiftAPIRemove() async throws {
        try await withEmulator { client, state in
            let appcid = try await register(client)
            #expect(state.removeConnection(appcid))
            #expect(!state.removeConnection(appcid))
            let after = try await client.execute(uri: "/\(appId)", method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: appcid))
            #expect(after.status == .notFound)
        }
    }

    @Test("a registration seeded through the Swift API is usable over HTTP")
    func swiftAPIAdd() async throws {
        let state = EmulatorState()
        let registration = state.addConnection(user: "bob", deviceType: "arm64", deviceModel: "Pi")
        try await withEmulator(state: state) { client, _ in
            let response = try await client.execute(uri: "/\(appId)", method: .get, headers: serviceRootHeaders(auth: bobAuth, appcid: registration.applicationConnectionId))
            #expect(response.status == .ok)
        }
    }

    @Test("GET /{appId}/TravelAgencies: the fixed agencies as OData JSON")
    func travelAgencies() async throws {
        try await withEmulator { client, _ in
            let appcid = try await register(client)
            let response = try await client.execute(uri: "/\(appId)/TravelAgencies?$format=json", method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: appcid))
            #expect(response.status == .ok)
            let d = try #require(try jsonObject(response)["d"] as? [String: Any])
            let results = try #require(d["results"] as? [[String: Any]])
            #expect(results.count == TravelAgency.all.count)
            #expect(results.count == 5)
            let first = try #require(results.first)
            #expect(first["agencynum"] as? String == "00000055")
            #expect(first["NAME"] as? String == "Fly High")
            for agency in results {
                for key in ["agencynum", "NAME", "STREET", "CITY", "COUNTRY", "URL"] {
                    #expect((agency[key] as? String)?.isEmpty == false, "\(key) in \(agency)")
                }
                let uri = try #require((agency["__metadata"] as? [String: Any])?["uri"] as? String)
                #expect(uri.hasPrefix("http://localhost/\(appId)/TravelAgencies('"))
            }
            #expect(Set(results.compactMap { $0["agencynum"] as? String }).count == results.count)
        }
    }

    @Test("TravelAgencies without credentials: 401; with an unknown appcid: 404")
    func travelAgenciesFailures() async throws {
        try await withEmulator { client, _ in
            let appcid = try await register(client)
            let anonymous = try await client.execute(uri: "/\(appId)/TravelAgencies", method: .get, headers: serviceRootHeaders(auth: nil, appcid: appcid))
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.headers[.wwwAuthenticate] != nil)
            let unknown = try await client.execute(uri: "/\(appId)/TravelAgencies", method: .get, headers: serviceRootHeaders(auth: aliceAuth, appcid: "nope"))
            #expect(unknown.status == .notFound)
        }
    }
}

@Suite("Malformed requests")
struct MalformedRequestTests {
    @Test(
        "wrong methods get 405 with Allow",
        arguments: [
            ("/odata/applications/latest/com.example.demo/Connections", HTTPRequest.Method.get, "POST"),
            ("/odata/applications/latest/com.example.demo/Connections", .delete, "POST"),
            ("/odata/applications/latest/com.example.demo/Connections('x')", .post, "GET, DELETE"),
            ("/odata/applications/latest/com.example.demo/Connections('x')", .put, "GET, DELETE"),
            ("/com.example.demo", .post, "GET"),
            ("/com.example.demo", .delete, "GET"),
            ("/com.example.demo/TravelAgencies", .patch, "GET"),
            ("/admin/connections", .post, "GET"),
            ("/admin/connections/abc", .get, "DELETE"),
            ("/admin/stats", .put, "GET, DELETE"),
        ])
    func wrongMethod(path: String, method: HTTPRequest.Method, allow: String) async throws {
        try await withEmulator { client, state in
            let response = try await client.execute(uri: path, method: method, headers: headers([("Authorization", aliceAuth)]))
            #expect(response.status == .methodNotAllowed)
            #expect(response.headers[.allow] == allow)
            #expect(try odataErrorCode(response) == "MethodNotAllowed")
            #expect(state.requestCount(route: .unmatched, status: 405) == 1)
        }
    }

    @Test(
        "unknown paths get 404",
        arguments: [
            "/", "/odata", "/odata/applications/latest/com.example.demo", "/odata/applications/v1/com.example.demo/Connections",
            "/odata/applications/latest/com.example.demo/Registrations", "/com.example.demo/Flights", "/com.example.demo/TravelAgencies/x",
            "/admin", "/admin/connections/", "/a/b/c/d/e/f/g",
        ])
    func unknownPath(path: String) async throws {
        try await withEmulator { client, _ in
            let response = try await client.execute(uri: path, method: .get, headers: headers([("Authorization", aliceAuth)]))
            #expect(response.status == .notFound)
            _ = try odataErrorCode(response)
        }
    }

    @Test("bad percent-encoding gets 400")
    func badPercentEncoding() async throws {
        try await withEmulator { client, _ in
            let response = try await client.execute(uri: "/com.example.demo%ZZ", method: .get)
            #expect(response.status == .badRequest)
            #expect(try odataErrorCode(response) == "InvalidPath")
        }
    }

    @Test("garbage on a live socket never takes the server down", arguments: [TestingSetup.live])
    func liveGarbage(setup: TestingSetup) async throws {
        let app = buildEmulatorApplication(configuration: try makeConfiguration())
        try await app.test(setup) { client in
            for (name, value) in [("Authorization", "Basic " + String(repeating: "=", count: 5000)), ("X-SMP-APPCID", String(repeating: "'", count: 3000)), ("X-SMP-APPCID", "\u{00e9}\u{00e8}")] {
                let response = try await client.execute(uri: "/\(appId)", method: .get, headers: headers([(name, value)]))
                #expect(response.status.code >= 400 && response.status.code < 500, "\(name): \(response.status)")
            }
            #expect(try await register(client).isEmpty == false)
        }
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MobileServicesEmulator
import Testing

@Suite("Registration: POST/GET/DELETE Connections")
struct RegistrationTests {
    @Test("201 with the tutorials' entity shape, a Location header and the authenticated user")
    func registerReturnsEntity() async throws {
        try await withEmulator { client, state in
            let response = try await client.execute(
                uri: connectionsPath, method: .post,
                headers: headers([("Authorization", aliceAuth), ("Content-Type", "application/json; charset=utf-8")]),
                body: registrationBody())
            #expect(response.status == .created)
            #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)

            let d = try #require(try jsonObject(response)["d"] as? [String: Any])
            let appcid = try #require(d["ApplicationConnectionId"] as? String)
            #expect(UUID(uuidString: appcid) != nil, "appcid should be UUID-like: \(appcid)")
            #expect(appcid == appcid.lowercased())

            let metadata = try #require(d["__metadata"] as? [String: Any])
            let uri = try #require(metadata["uri"] as? String)
            #expect(uri == "http://localhost/odata/applications/latest/com.example.demo/Connections('\(appcid)')")
            #expect(metadata["id"] as? String == uri)
            #expect(metadata["type"] as? String == "applications.Connection")
            #expect(response.headers[.location] == uri)

            #expect(d["UserName"] as? String == "alice")
            #expect(d["DeviceType"] as? String == "x86_64")
            #expect(d["DeviceModel"] as? String == "Debian 12")
            #expect((d["ETag"] as? String)?.isEmpty == false)
            #expect((d["ProxyApplicationEndpoint"] as? String)?.hasPrefix("https://") == true)
            #expect(d["PasswordPolicyEnabled"] as? Bool == false)
            #expect(d["PasswordPolicyRetryLimit"] as? Int == 10)
            #expect(d["LogEntryExpiry"] as? Int == 7)
            #expect(d["ApnsDeviceToken"] is NSNull)
            let capability = try #require(d["Capability"] as? [String: Any])
            #expect((capability["results"] as? [Any])?.isEmpty == true)

            // CreatedAt is "/Date(ms)/" with a time from this test run, written "\/Date(ms)\/" as in the tutorials.
            let createdAt = try #require(d["CreatedAt"] as? String)
            #expect(createdAt.hasPrefix("/Date(") && createdAt.hasSuffix(")/"))
            let ms = try #require(Int64(createdAt.dropFirst(6).dropLast(2)))
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            #expect(abs(now - ms) < 60_000)
            #expect(String(buffer: response.body).contains(#""CreatedAt":"\/Date("#))

            let stored = try #require(state.connection(appcid))
            #expect(stored.user == "alice")
            #expect(stored.deviceType == "x86_64")
        }
    }

    @Test("two registrations get different appcids")
    func appcidsAreUnique() async throws {
        try await withEmulator { client, state in
            let first = try await register(client)
            let second = try await register(client)
            #expect(first != second)
            #expect(state.connections.map(\.applicationConnectionId) == [first, second])
        }
    }

    @Test("the Location URI uses the request's Host", arguments: [TestingSetup.live])
    func locationUsesHost(setup: TestingSetup) async throws {
        let app = buildEmulatorApplication(configuration: try makeConfiguration())
        try await app.test(setup) { client in
            let response = try await client.execute(
                uri: connectionsPath, method: .post,
                headers: headers([("Authorization", aliceAuth), ("Content-Type", "application/json")]),
                body: registrationBody())
            #expect(response.status == .created)
            let location = try #require(response.headers[.location])
            #expect(location.hasPrefix("http://localhost"))
            #expect(location.hasSuffix("')"))
            #expect(location.contains("/odata/applications/latest/com.example.demo/Connections('"))
        }
    }

    @Test(
        "bad credentials get 401 with the Basic challenge and create nothing",
        arguments: [
            nil,  // no Authorization header
            basic("alice", "wrong"),
            basic("alice", "s3cret"),  // a prefix of the real password
            basic("mallory", "hunter2"),  // unknown user with another user's password
            basic("ALICE", "s3cret:with-colon"),  // user names are case-sensitive
            "Basic !!!not-base64!!!",
            "Basic " + Data("no-colon-here".utf8).base64EncodedString(),
            "Basic " + Data([0xFF, 0xFE, 0x3A, 0x41]).base64EncodedString(),  // not UTF-8
            "Basic",
            "Bearer abc",
            "Digest username=\"alice\"",
        ] as [String?])
    func badCredentials(authorization: String?) async throws {
        try await withEmulator { client, state in
            var pairs = [("Content-Type", "application/json")]
            if let authorization { pairs.append(("Authorization", authorization)) }
            let response = try await client.execute(uri: connectionsPath, method: .post, headers: headers(pairs), body: registrationBody())
            #expect(response.status == .unauthorized)
            #expect(response.headers[.wwwAuthenticate] == #"Basic realm="mobile-services", charset="UTF-8""#)
            #expect(try odataErrorCode(response) == "Unauthorized")
            #expect(state.connections.isEmpty)
            // Nothing secret echoed back.
            #expect(!String(buffer: response.body).contains("s3cret"))
        }
    }

    @Test("the Basic scheme name is case-insensitive")
    func basicSchemeCaseInsensitive() async throws {
        try await withEmulator { client, _ in
            let token = Data("bob:hunter2".utf8).base64EncodedString()
            let response = try await client.execute(
                uri: connectionsPath, method: .post,
                headers: headers([("Authorization", "basic \(token)"), ("Content-Type", "application/json")]),
                body: registrationBody())
            #expect(response.status == .created)
        }
    }

    @Test(
        "malformed or missing bodies get 400 with an OData error",
        arguments: [
            ("", "MissingBody"),
            ("not json", "MalformedBody"),
            ("[1,2,3]", "MalformedBody"),
            (#""DeviceType""#, "MalformedBody"),
            (#"{"DeviceType":"#, "MalformedBody"),
            ("{}", "InvalidDeviceType"),
            (#"{"DeviceModel":"Debian"}"#, "InvalidDeviceType"),
            (#"{"DeviceType":42}"#, "InvalidDeviceType"),
            (#"{"DeviceType":"   "}"#, "InvalidDeviceType"),
            (#"{"DeviceType":null}"#, "InvalidDeviceType"),
            (#"{"DeviceType":"x86_64","DeviceModel":7}"#, "InvalidDeviceModel"),
            (#"{"DeviceType":"x86_64","UserName":["a"]}"#, "InvalidUserName"),
        ])
    func malformedBodies(body: String, code: String) async throws {
        try await withEmulator { client, state in
            let response = try await client.execute(
                uri: connectionsPath, method: .post,
                headers: headers([("Authorization", aliceAuth), ("Content-Type", "application/json")]),
                body: body.isEmpty ? nil : ByteBuffer(string: body))
            #expect(response.status == .badRequest)
            #expect(try odataErrorCode(response) == code)
            #expect(state.connections.isEmpty)
        }
    }

    @Test("only DeviceType is required; a missing Content-Type is accepted")
    func minimalBody() async throws {
        try await withEmulator { client, _ in
            let response = try await client.execute(
                uri: connectionsPath, method: .post, headers: headers([("Authorization", bobAuth)]),
                body: ByteBuffer(string: #"{"DeviceType":"arm64"}"#))
            #expect(response.status == .created)
            let d = try #require(try jsonObject(response)["d"] as? [String: Any])
            #expect(d["DeviceModel"] is NSNull)
            #expect(d["UserName"] as? String == "bob")
        }
    }

    @Test("a non-JSON Content-Type gets 415")
    func wrongContentType() async throws {
        try await withEmulator { client, _ in
            let response = try await client.execute(
                uri: connectionsPath, method: .post,
                headers: headers([("Authorization", aliceAuth), ("Content-Type", "text/plain")]),
                body: registrationBody())
            #expect(response.status == .unsupportedMediaType)
            #expect(try odataErrorCode(response) == "UnsupportedMediaType")
        }
    }

    @Test("a body over the limit gets 413, by Content-Length or while reading", arguments: [TestingSetup.router, .live])
    func hugeBody(setup: TestingSetup) async throws {
        let state = EmulatorState()
        let app = buildEmulatorApplication(configuration: try makeConfiguration(), state: state)
        try await app.test(setup) { client in
            let padding = String(repeating: "x", count: 70 * 1024)
            let response = try await client.execute(
                uri: connectionsPath, method: .post,
                headers: headers([("Authorization", aliceAuth), ("Content-Type", "application/json")]),
                body: ByteBuffer(string: #"{"DeviceType":"x86_64","DeviceModel":"\#(padding)"}"#))
            #expect(response.status == .contentTooLarge)
            #expect(try odataErrorCode(response) == "PayloadTooLarge")
            #expect(state.connections.isEmpty)
            // The server is still fine afterwards.
            #expect(try await register(client).isEmpty == false)
        }
    }

    @Test("a body just under a small limit passes, just over it fails")
    func bodyLimitBoundary() async throws {
        let body = #"{"DeviceType":"x86_64"}"#
        try await withEmulator(maxBodySize: body.utf8.count) { client, _ in
            let ok = try await client.execute(
                uri: connectionsPath, method: .post, headers: headers([("Authorization", aliceAuth)]), body: ByteBuffer(string: body))
            #expect(ok.status == .created)
            let tooBig = try await client.execute(
                uri: connectionsPath, method: .post, headers: headers([("Authorization", aliceAuth)]), body: ByteBuffer(string: body + " "))
            #expect(tooBig.status == .contentTooLarge)
        }
    }

    @Test("an unknown application id gets 404 on every Connections route")
    func unknownApplication() async throws {
        try await withEmulator { client, state in
            let appcid = try await register(client)
            let other = "/odata/applications/latest/com.example.other/Connections"
            let post = try await client.execute(
                uri: other, method: .post, headers: headers([("Authorization", aliceAuth)]), body: registrationBody())
            #expect(post.status == .notFound)
            #expect(try odataErrorCode(post) == "ApplicationNotFound")
            let get = try await client.execute(uri: "\(other)('\(appcid)')", method: .get, headers: headers([("Authorization", aliceAuth)]))
            #expect(get.status == .notFound)
            let delete = try await client.execute(uri: "\(other)('\(appcid)')", method: .delete, headers: headers([("Authorization", aliceAuth)]))
            #expect(delete.status == .notFound)
            #expect(state.connections.count == 1)
        }
    }

    @Test("GET Connections('id') returns the entity to its owner only; DELETE removes it")
    func readAndDelete() async throws {
        try await withEmulator { client, state in
            let appcid = try await register(client)
            let entityPath = "\(connectionsPath)('\(appcid)')"

            let read = try await client.execute(uri: entityPath, method: .get, headers: headers([("Authorization", aliceAuth)]))
            #expect(read.status == .ok)
            let d = try #require(try jsonObject(read)["d"] as? [String: Any])
            #expect(d["ApplicationConnectionId"] as? String == appcid)
            #expect((d["__metadata"] as? [String: Any])?["uri"] as? String == "http://localhost\(entityPath)")

            // Percent-encoded quotes and parentheses address the same entity.
            let encoded = "\(connectionsPath)%28%27\(appcid)%27%29"
            #expect(try await client.execute(uri: encoded, method: .get, headers: headers([("Authorization", aliceAuth)])).status == .ok)

            // Another valid user does not see it and cannot delete it.
            #expect(try await client.execute(uri: entityPath, method: .get, headers: headers([("Authorization", bobAuth)])).status == .notFound)
            #expect(try await client.execute(uri: entityPath, method: .delete, headers: headers([("Authorization", bobAuth)])).status == .notFound)

            // Credentials are required.
            let anonymous = try await client.execute(uri: entityPath, method: .get)
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.headers[.wwwAuthenticate]?.hasPrefix("Basic ") == true)
            #expect(try await client.execute(uri: entityPath, method: .delete, headers: headers([("Authorization", basic("alice", "x"))])).status == .unauthorized)

            let delete = try await client.execute(uri: entityPath, method: .delete, headers: headers([("Authorization", aliceAuth)]))
            #expect(delete.status == .noContent)
            #expect(delete.body.readableBytes == 0)
            #expect(state.connection(appcid) == nil)

            #expect(try await client.execute(uri: entityPath, method: .get, headers: headers([("Authorization", aliceAuth)])).status == .notFound)
            #expect(try await client.execute(uri: entityPath, method: .delete, headers: headers([("Authorization", aliceAuth)])).status == .notFound)
        }
    }

    @Test(
        "malformed key predicates get 400",
        arguments: ["Connections()", "Connections(abc)", "Connections('')", "Connections('a'b')", "Connections('abc'"])
    func malformedKey(last: String) async throws {
        try await withEmulator { client, _ in
            let response = try await client.execute(
                uri: "/odata/applications/latest/com.example.demo/\(last)", method: .get, headers: headers([("Authorization", aliceAuth)]))
            #expect(response.status == .badRequest)
            #expect(try odataErrorCode(response) == "InvalidKeyPredicate")
        }
    }
}

import Foundation
import Testing
import VaultCore
@testable import VaultAuth
import VaultAuthTesting
import VaultTestSupport

/// Exact bounds against a real HTTP server on 127.0.0.1 through the SwiftNIO transport.
@Suite("AuthenticatingHTTPClient against a counting server")
struct AuthenticatingHTTPClientTests {
    static let loopback = KeystoreAuthenticator.Options(allowInsecureLoopbackHTTP: true)

    func basic(_ user: String, _ password: String) -> String {
        Credential(username: user, password: password).authorizationHeaderValue()
    }

    func space(_ server: CountingServer) -> ProtectionSpace {
        ProtectionSpace(origin: Origin(scheme: "http", host: "127.0.0.1", port: server.port), realm: "counting")
    }

    @Test func a401WithoutPromptCompletesAtOnceInsteadOfHanging() async throws {
        let server = try CountingServer()
        let client = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: InMemoryCredentialStore(), prompt: nil, options: Self.loopback),
            timeout: 10)
        let url = server.url("/protected")
        let result = try await withTimeout(20) {
            do {
                _ = try await client.data(for: HTTPRequest(url: url))
                return "no error"
            } catch { return "\(error)" }
        }
        #expect(result == "\(AuthenticationError.noPromptAvailable(space: space(server), detail: "no credential is stored and no prompt is configured"))")
        // A hang would end in the client's 10 s timeout (transportFailed), not in noPromptAvailable: the
        // error case is the proof, without a wall-clock bound that flakes on a loaded machine.
        #expect(try await server.requests() == [.init(path: "/protected", authorization: nil)])
    }

    @Test func staleStoredCredentialChain() async throws {
        let server = try CountingServer()
        try await server.setPassword("new", for: "alice")
        let store = InMemoryCredentialStore([space(server): Credential(username: "alice", password: "old")])
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "new")])
        let client = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: prompt, options: Self.loopback), timeout: 10)
        let url = server.url("/protected")
        let (data, response) = try await withTimeout(30) { try await client.data(for: HTTPRequest(url: url)) }
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "hello")
        #expect(try await server.requests().map(\.authorization) == [nil, basic("alice", "old"), basic("alice", "new")])
        #expect(prompt.count == 1)
        #expect(prompt.reasons == [.storedCredentialRejected(username: "alice")])
        #expect(password(of: try store.credential(for: space(server))) == "new")

        // Known space now: one request, stored credential sent first.
        _ = try await withTimeout(30) { try await client.data(for: HTTPRequest(url: url)) }
        #expect(try await server.requests().count == 4)
        #expect(prompt.count == 1)
    }

    @Test func rejectedChainIsBoundedAndStoresNothing() async throws {
        let server = try CountingServer()
        try await server.setPassword("right", for: "alice")
        let store = InMemoryCredentialStore()
        let prompt = ScriptedPrompt(Array(repeating: Credential(username: "alice", password: "wrong"), count: 5))
        let client = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: prompt, options: Self.loopback), timeout: 10)
        let url = server.url("/protected")
        let outcome = try await withTimeout(30) {
            do { _ = try await client.data(for: HTTPRequest(url: url)); return "no error" } catch { return "\(error)" }
        }
        #expect(outcome == "\(AuthenticationError.credentialsRejected(space: space(server), username: "alice"))")
        #expect(try await server.requests().count == 3)
        #expect(prompt.count == 2)
        #expect(store.storeCount == 0)
        #expect(try store.storedSpaces().isEmpty)
    }

    @Test func forbiddenErasesNothing() async throws {
        let server = try CountingServer()
        try await server.setPassword("right", for: "alice")
        let store = InMemoryCredentialStore([space(server): Credential(username: "alice", password: "right")])
        let client = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: nil, options: Self.loopback), timeout: 10)
        let url = server.url("/forbidden")
        let (data, response) = try await withTimeout(30) { try await client.data(for: HTTPRequest(url: url)) }
        #expect(response.statusCode == 403)
        #expect(String(decoding: data, as: UTF8.self) == "forbidden")
        #expect(try await server.requests().count == 2)
        #expect(store.removeCount == 0)
        #expect(password(of: try store.credential(for: space(server))) == "right")
    }

    @Test func noAuthorizationAfterACrossOriginRedirect() async throws {
        let first = try CountingServer()
        let second = try CountingServer()
        try await first.setPassword("right", for: "alice")
        try await second.setPassword("right", for: "alice")
        let store = InMemoryCredentialStore([space(first): Credential(username: "alice", password: "right")])
        let authenticator = KeystoreAuthenticator(store: store, prompt: nil, options: Self.loopback)
        authenticator.rememberProtectionSpace(space(first))  // sends the credential with the first request
        let client = AuthenticatingHTTPClient(authenticator: authenticator, timeout: 10)

        // Same origin: the credential follows.
        let same = first.url("/redirect?to=%2Fprotected")
        let (_, sameResponse) = try await withTimeout(30) { try await client.data(for: HTTPRequest(url: same)) }
        #expect(sameResponse.statusCode == 200)
        #expect(try await first.requests().map(\.authorization) == [basic("alice", "right"), basic("alice", "right")])

        // Other port, then other host name (localhost): another origin, no Authorization.
        for target in [second.url("/protected"), URL(string: "http://localhost:\(first.port)/protected")!] {
            let encoded = target.absoluteString.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let url = first.url("/redirect?to=" + encoded)
            let outcome = try await withTimeout(30) {
                do { _ = try await client.data(for: HTTPRequest(url: url)); return "no error" } catch { return "\(error)" }
            }
            #expect(outcome == "\(AuthenticationError.crossOriginChallenge(requested: url, challengedBy: target))")
        }
        #expect(try await second.requests() == [.init(path: "/protected", authorization: nil)])
        let firstLog = try await first.requests()
        #expect(firstLog.count == 5)
        #expect(firstLog.last == .init(path: "/protected", authorization: nil))  // via localhost
    }

    @Test func plainHTTPWithoutOptInSendsNoCredential() async throws {
        let server = try CountingServer()
        try await server.setPassword("right", for: "alice")
        let store = InMemoryCredentialStore([space(server): Credential(username: "alice", password: "right")])
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "right")])
        let authenticator = KeystoreAuthenticator(store: store, prompt: prompt)  // no loopback opt-in
        authenticator.rememberProtectionSpace(space(server))
        let client = AuthenticatingHTTPClient(authenticator: authenticator, timeout: 10)
        let url = server.url("/protected")
        let outcome = try await withTimeout(30) {
            do { _ = try await client.data(for: HTTPRequest(url: url)); return "no error" } catch { return "\(error)" }
        }
        #expect(outcome == "\(AuthenticationError.insecureTransport(url: url))")
        #expect(try await server.requests() == [.init(path: "/protected", authorization: nil)])
        #expect(prompt.count == 0)
    }

    @Test(arguments: [("/bearer", "Bearer"), ("/digest", "Digest")])
    func otherSchemesAreReportedNotHung(path: String, scheme: String) async throws {
        let server = try CountingServer()
        let client = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: InMemoryCredentialStore(), prompt: ScriptedPrompt([]), options: Self.loopback),
            timeout: 10)
        let url = server.url(path)
        let outcome = try await withTimeout(30) {
            do { _ = try await client.data(for: HTTPRequest(url: url)); return "no error" } catch { return "\(error)" }
        }
        #expect(outcome == "\(AuthenticationError.unsupportedChallenge(url: url, schemes: [scheme]))")
        #expect(try await server.requests().count == 1)
    }

    @Test func aServerThatNeverAnswersTimesOut() async throws {
        // A listening socket that never accepts: the request must end with the client's timeout.
        let silent = try SilentLoopbackListener()
        let url = URL(string: "http://127.0.0.1:\(silent.port)/")!
        let client = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: InMemoryCredentialStore(), prompt: nil, options: Self.loopback),
            timeout: 1)
        let outcome = try await withTimeout(20) {
            do { _ = try await client.data(for: HTTPRequest(url: url)); return "no error" } catch { return "\(error)" }
        }
        #expect(outcome == "request to '\(url.absoluteString)' timed out: no complete answer within 1 s")
    }

    @Test func redirectRuleUnit() throws {
        var request = HTTPRequest(method: "POST", url: URL(string: "https://b.example.com/x")!, body: Array("{}".utf8))
        request.headers.add("Authorization", "Basic abc")
        request.headers.add("X-SMP-APPCID", "id")
        request.headers.add("Cookie", "c=1")
        request.headers.add("Accept", "application/json")
        request.headers.add("Content-Type", "application/json")
        func redirect(_ status: Int, to location: String, policy: RedirectPolicy = .follow) throws -> HTTPRequest? {
            let response = HTTPResponse(
                statusCode: status, url: request.url, headers: HTTPHeaderFields([("Location", location)]))
            return try HTTPTransport.redirect(of: request, by: response, policy: policy)
        }
        // Same origin (case and default port do not matter): every field and the body follow a 307.
        let same = try #require(try redirect(307, to: "https://B.example.com:443/other"))
        #expect(same.headers == request.headers)
        #expect(same.body == request.body && same.method == "POST")
        // Another origin: only the portable fields (Content-Type with the body kept by a 307).
        let cross = try #require(try redirect(307, to: "https://a.example.com/x"))
        #expect(cross.headers == HTTPHeaderFields([("Accept", "application/json"), ("Content-Type", "application/json")]))
        #expect(cross.url.absoluteString == "https://a.example.com/x")
        // 303 and a POST's 302 become a GET without a body.
        let seeOther = try #require(try redirect(303, to: "/y"))
        #expect(seeOther.method == "GET" && seeOther.body == nil && seeOther.headers["Content-Type"] == nil)
        #expect(seeOther.headers["Authorization"] == "Basic abc" && seeOther.url.absoluteString == "https://b.example.com/y")
        // Refusals.
        #expect(throws: AuthenticationError.redirectRefused(
            from: request.url, to: URL(string: "http://b.example.com/x")!, reason: .downgrade)) {
            try redirect(302, to: "http://b.example.com/x")
        }
        #expect(throws: AuthenticationError.redirectRefused(
            from: request.url, to: URL(string: "https://a.example.com/x")!, reason: .crossOrigin)) {
            try redirect(302, to: "https://a.example.com/x", policy: .sameOriginOnly)
        }
        // Not a redirect: a 3xx without Location, a 200 with one.
        #expect(try HTTPTransport.redirect(of: request, by: HTTPResponse(statusCode: 302, url: request.url), policy: .follow) == nil)
        #expect(try redirect(200, to: "https://a.example.com/") == nil)
    }
}

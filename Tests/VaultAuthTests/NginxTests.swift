import Foundation
import Testing
import VaultTestSupport
import VaultCore
@testable import VaultAuth
import VaultAuthTesting

/// The shared nginx fixture (VaultTestSupport), seen from the auth library.
extension NginxFixture {
    var space: ProtectionSpace {
        ProtectionSpace(origin: Origin(scheme: "http", host: "127.0.0.1", port: port), realm: Self.realm)
    }

    func endpoint(_ path: String) -> URL { URL(string: url(path))! }
}

@Suite("Against a real nginx with auth_basic", .serialized)
struct NginxTests {
    static let options = KeystoreAuthenticator.Options(allowInsecureLoopbackHTTP: true)

    func fetch(_ client: AuthenticatingHTTPClient, _ url: URL) async throws -> (Data, HTTPResponse) {
        try await withTimeout(60) { try await client.data(for: HTTPRequest(url: url)) }
    }

    @Test func loginWithRightCredentialsStoresThemAndFetchUsesThem() async throws {
        let nginx = try NginxFixture(users: ["alice": "correct horse"])
        let vaultDirectory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: vaultDirectory)
        let store = VaultCredentialStore(store: vault)
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "correct horse")])

        // Login: nothing stored, the prompt answers, nginx accepts, the vault gets the credential.
        let login = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: prompt, options: Self.options), timeout: 10)
        let (body, response) = try await fetch(login, nginx.endpoint("/private/"))
        #expect(response.statusCode == 200)
        #expect(String(decoding: body, as: UTF8.self) == "secret area\n")
        #expect(prompt.count == 1)
        #expect(try vault.getString("credential/\(nginx.space.key)/username") == "alice")
        #expect(try vault.getString("credential/primary") == nginx.space.key)
        #expect(nginx.accessLog() == ["401 - /private/", "200 alice /private/"])

        // Fetch with the stored credential, no prompt at all (a new process would do the same).
        let fetcher = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: nil, options: Self.options), timeout: 10)
        let (again, againResponse) = try await fetch(fetcher, nginx.endpoint("/private/"))
        #expect(againResponse.statusCode == 200)
        #expect(String(decoding: again, as: UTF8.self) == "secret area\n")
        #expect(nginx.accessLog().suffix(2) == ["401 - /private/", "200 alice /private/"])
    }

    @Test func loginWithWrongCredentialsFailsAfterTwoPromptsAndStoresNothing() async throws {
        let nginx = try NginxFixture(users: ["alice": "correct horse"])
        let vaultDirectory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: vaultDirectory)
        let prompt = ScriptedPrompt([
            Credential(username: "alice", password: "wrong"), Credential(username: "mallory", password: "guess"),
            Credential(username: "alice", password: "correct horse"),
        ])
        let client = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: VaultCredentialStore(store: vault), prompt: prompt, options: Self.options),
            timeout: 10)
        await #expect(throws: AuthenticationError.credentialsRejected(space: nginx.space, username: "mallory")) {
            _ = try await fetch(client, nginx.endpoint("/private/"))
        }
        #expect(prompt.count == 2)
        #expect(try vault.keys().isEmpty)
        #expect(nginx.accessLog() == ["401 - /private/", "401 alice /private/", "401 mallory /private/"])
    }

    @Test func passwordChangedOnTheServerMakesTheStoredCredentialStale() async throws {
        let nginx = try NginxFixture(users: ["alice": "first"])
        let vaultDirectory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: vaultDirectory)
        let store = VaultCredentialStore(store: vault)
        try store.store(Credential(username: "alice", password: "first"), for: nginx.space)

        let fetcher = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: nil, options: Self.options), timeout: 10)
        #expect(try await fetch(fetcher, nginx.endpoint("/private/")).1.statusCode == 200)

        try nginx.setPassword("second", for: "alice")
        // Same client (the space is known, so the stored credential goes first): reported stale, not resent.
        await #expect(throws: AuthenticationError.storedCredentialRejected(space: nginx.space, username: "alice", erased: true)) {
            _ = try await fetch(fetcher, nginx.endpoint("/private/"))
        }
        #expect(try vault.keys().isEmpty)  // erased, like git's `credential reject`
        await #expect(throws: AuthenticationError.noPromptAvailable(
            space: nginx.space, detail: "no credential is stored and no prompt is configured")) {
            _ = try await fetch(fetcher, nginx.endpoint("/private/"))
        }
        #expect(nginx.accessLog() == [
            "401 - /private/", "200 alice /private/",  // first fetch
            "401 alice /private/",  // the stale credential, once
            "401 - /private/",  // next fetch: not resent
        ])

        // The user logs in again with the new password; it is stored once accepted.
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "second")])
        let login = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: prompt, options: Self.options), timeout: 10)
        #expect(try await fetch(login, nginx.endpoint("/private/")).1.statusCode == 200)
        #expect(password(of: try store.credential(for: nginx.space)) == "second")
    }
}

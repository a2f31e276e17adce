import Foundation
import Testing
import VaultCore
import VaultTerminal
@testable import VaultAuthCore
import VaultCredentials
import VaultAuthTesting

@Suite("KeystoreAuthenticator rules, without network")
struct KeystoreAuthenticatorTests {
    static let url = URL(string: "https://api.example.com/data")!
    static let space = ProtectionSpace(origin: Origin(url)!, realm: "fake")

    func basic(_ user: String, _ password: String) -> String {
        Credential(username: user, password: password).authorizationHeaderValue()
    }

    func perform(
        _ authenticator: KeystoreAuthenticator, _ server: InMemoryBasicAuthServer, url: URL = Self.url
    ) async throws -> (Data, HTTPResponse) {
        try await authenticator.perform(HTTPRequest(url: url)) { server.respond($0) }
    }

    @Test func noStoredCredentialPromptsOnceAndStoresOnlyAfterAcceptance() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "right"])
        let store = InMemoryCredentialStore()
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "right")])
        let authenticator = KeystoreAuthenticator(store: store, prompt: prompt)
        let (data, response) = try await perform(authenticator, server)
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "ok")
        #expect(server.authorizations == [nil, basic("alice", "right")])
        #expect(prompt.count == 1)
        #expect(prompt.reasons == [.noStoredCredential])
        #expect(prompt.spaces == [Self.space])
        #expect(store.storeCount == 1)
        #expect(password(of: try store.credential(for: Self.space)) == "right")

        // The space is now known: the next request carries the stored credential at once.
        _ = try await perform(authenticator, server)
        #expect(server.authorizations.count == 3)
        #expect(server.authorizations.last == basic("alice", "right"))
        #expect(prompt.count == 1)
        #expect(store.storeCount == 1)  // an accepted stored credential is not written again
    }

    @Test func storedCredentialIsSentOnceAndAccepted() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "right"])
        let store = InMemoryCredentialStore([Self.space: Credential(username: "alice", password: "right")])
        let prompt = ScriptedPrompt([])
        let (_, response) = try await perform(KeystoreAuthenticator(store: store, prompt: prompt), server)
        #expect(response.statusCode == 200)
        #expect(server.authorizations == [nil, basic("alice", "right")])
        #expect(prompt.count == 0)
        #expect(store.storeCount == 0)
        #expect(store.removeCount == 0)
    }

    @Test func staleStoredCredentialIsNotResentPromptsOnceAndIsReplacedAfterAcceptance() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "new"])
        let store = InMemoryCredentialStore([Self.space: Credential(username: "alice", password: "old")])
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "new")])
        let authenticator = KeystoreAuthenticator(store: store, prompt: prompt)
        let (_, response) = try await perform(authenticator, server)
        #expect(response.statusCode == 200)
        #expect(server.authorizations == [nil, basic("alice", "old"), basic("alice", "new")])
        #expect(prompt.reasons == [.storedCredentialRejected(username: "alice")])
        #expect(prompt.suggestedUsernames == ["alice"])
        #expect(password(of: try store.credential(for: Self.space)) == "new")
        #expect(!authenticator.isStale(Self.space))
    }

    @Test func staleThenRejectedAgainFailsWithCredentialsRejectedAfterOnePrompt() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "unknown"])
        let store = InMemoryCredentialStore([Self.space: Credential(username: "alice", password: "old")])
        let prompt = ScriptedPrompt([Credential(username: "bob", password: "wrong"), Credential(username: "x", password: "y")])
        let authenticator = KeystoreAuthenticator(store: store, prompt: prompt)
        await #expect(throws: AuthenticationError.credentialsRejected(space: Self.space, username: "bob")) {
            try await perform(authenticator, server)
        }
        #expect(server.requestCount == 3)
        #expect(server.authorizations == [nil, basic("alice", "old"), basic("bob", "wrong")])
        #expect(prompt.count == 1)
        #expect(store.storeCount == 0)  // nothing stored after a rejection
        #expect(try store.credential(for: Self.space) == nil)  // the stale one was erased (git's reject)
        #expect(store.removeCount == 1)
    }

    @Test func twoEnteredCredentialsRejectedMeansTwoPromptsAndThreeRequests() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "right"])
        let store = InMemoryCredentialStore()
        let prompt = ScriptedPrompt([
            Credential(username: "alice", password: "wrong1"), Credential(username: "alice", password: "wrong2"),
            Credential(username: "alice", password: "right"),
        ])
        await #expect(throws: AuthenticationError.credentialsRejected(space: Self.space, username: "alice")) {
            try await perform(KeystoreAuthenticator(store: store, prompt: prompt), server)
        }
        #expect(prompt.count == 2)
        #expect(prompt.reasons == [.noStoredCredential, .enteredCredentialRejected(username: "alice")])
        #expect(server.requestCount == 3)
        #expect(store.storeCount == 0)
        #expect(try store.storedSpaces().isEmpty)
    }

    @Test func staleCredentialWithoutPromptIsReportedAndNeverResent() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "changed"])
        let store = InMemoryCredentialStore([Self.space: Credential(username: "alice", password: "old")])
        let authenticator = KeystoreAuthenticator(
            store: store, prompt: nil, options: .init(eraseRejectedCredentials: false))
        await #expect(throws: AuthenticationError.storedCredentialRejected(space: Self.space, username: "alice", erased: false)) {
            try await perform(authenticator, server)
        }
        #expect(server.authorizations == [nil, basic("alice", "old")])
        #expect(authenticator.isStale(Self.space))
        #expect(try store.credential(for: Self.space) != nil)  // kept, as asked
        // Again: the stale credential is not sent; with no prompt the request fails at once.
        await #expect(throws: AuthenticationError.noPromptAvailable(
            space: Self.space, detail: "no credential is stored and no prompt is configured")) {
            try await perform(authenticator, server)
        }
        #expect(server.authorizations == [nil, basic("alice", "old"), nil])
    }

    @Test func forbiddenErasesNothingAndStoresNothing() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "right", "bob": "right"])
        server.acceptedStatus = 403
        let store = InMemoryCredentialStore([Self.space: Credential(username: "alice", password: "right")])
        let authenticator = KeystoreAuthenticator(store: store, prompt: ScriptedPrompt([]))
        let (_, response) = try await perform(authenticator, server)
        #expect(response.statusCode == 403)
        #expect(store.removeCount == 0)
        #expect(password(of: try store.credential(for: Self.space)) == "right")

        // An entered credential answered with 403 is not stored.
        let empty = InMemoryCredentialStore()
        let prompt = ScriptedPrompt([Credential(username: "bob", password: "right")])
        let (_, second) = try await perform(KeystoreAuthenticator(store: empty, prompt: prompt), server)
        #expect(second.statusCode == 403)
        #expect(empty.storeCount == 0)
    }

    @Test func noPromptAndNothingStoredFailsAtOnce() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "right"])
        await #expect(throws: AuthenticationError.noPromptAvailable(
            space: Self.space, detail: "no credential is stored and no prompt is configured")) {
            try await perform(KeystoreAuthenticator(store: InMemoryCredentialStore(), prompt: nil), server)
        }
        #expect(server.requestCount == 1)
    }

    @Test func promptThatCannotOpenATerminalFailsAtOnce() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "right"])
        let authenticator = KeystoreAuthenticator(
            store: InMemoryCredentialStore(), prompt: TerminalCredentialPrompt(ttyPath: "/nonexistent/tty"))
        await #expect {
            try await perform(authenticator, server)
        } throws: { error in
            guard case let .noPromptAvailable(space, detail) = error as? AuthenticationError else { return false }
            return space == Self.space && detail.contains("/nonexistent/tty")
        }
        #expect(server.requestCount == 1)
    }

    @Test func declinedPromptFailsWithPromptCancelled() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "right"])
        let store = InMemoryCredentialStore()
        await #expect(throws: AuthenticationError.promptCancelled(space: Self.space)) {
            try await perform(KeystoreAuthenticator(store: store, prompt: ScriptedPrompt([nil])), server)
        }
        #expect(server.requestCount == 1)
        #expect(store.storeCount == 0)
    }

    @Test func decliningAfterARejectionReportsTheRejection() async throws {
        // A script that supplies one credential: the second prompt declines.
        let server = InMemoryBasicAuthServer(users: ["alice": "right"])
        let store = InMemoryCredentialStore()
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "wrong"), nil])
        await #expect(throws: AuthenticationError.credentialsRejected(space: Self.space, username: "alice")) {
            try await perform(KeystoreAuthenticator(store: store, prompt: prompt), server)
        }
        #expect(prompt.count == 2)
        #expect(server.requestCount == 2)
        #expect(store.storeCount == 0)

        // Stored credential rejected, user declines: reported as stale.
        let stale = InMemoryCredentialStore([Self.space: Credential(username: "alice", password: "old")])
        await #expect(throws: AuthenticationError.storedCredentialRejected(space: Self.space, username: "alice", erased: true)) {
            try await perform(KeystoreAuthenticator(store: stale, prompt: ScriptedPrompt([nil])), server)
        }
    }

    @Test func invalidUsernameFromPromptIsRefusedBeforeSending() async throws {
        let server = InMemoryBasicAuthServer(users: [:])
        let prompt = ScriptedPrompt([Credential(username: "a:b", password: "p")])
        await #expect(throws: AuthenticationError.invalidUsername(.containsColon)) {
            try await perform(KeystoreAuthenticator(store: InMemoryCredentialStore(), prompt: prompt), server)
        }
        #expect(server.authorizations == [nil])
    }

    @Test func plainHTTPOffLoopbackNeverCarriesCredentials() async throws {
        let url = URL(string: "http://api.example.com/data")!
        let space = ProtectionSpace(origin: Origin(url)!, realm: "fake")
        let server = InMemoryBasicAuthServer(users: ["alice": "right"])
        let store = InMemoryCredentialStore([space: Credential(username: "alice", password: "right")])
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "right")])
        // Even with the loopback opt-in and a remembered space (which would send preemptively over https).
        let authenticator = KeystoreAuthenticator(
            store: store, prompt: prompt, options: .init(allowInsecureLoopbackHTTP: true))
        authenticator.rememberProtectionSpace(space)
        await #expect(throws: AuthenticationError.insecureTransport(url: url)) {
            try await perform(authenticator, server, url: url)
        }
        #expect(server.authorizations == [nil])
        #expect(prompt.count == 0)
    }

    @Test func plainHTTPToLoopbackNeedsTheOptIn() async throws {
        let url = URL(string: "http://127.0.0.1:8080/data")!
        let server = InMemoryBasicAuthServer(users: ["alice": "right"])
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "right")])
        await #expect(throws: AuthenticationError.insecureTransport(url: url)) {
            try await perform(KeystoreAuthenticator(store: InMemoryCredentialStore(), prompt: prompt), server, url: url)
        }
        #expect(server.authorizations == [nil])
        let allowed = KeystoreAuthenticator(
            store: InMemoryCredentialStore(), prompt: prompt, options: .init(allowInsecureLoopbackHTTP: true))
        let (_, response) = try await perform(allowed, server, url: url)
        #expect(response.statusCode == 200)
        #expect(server.authorizations == [nil, nil, basic("alice", "right")])
    }

    @Test func challengeFromAnotherOriginAfterARedirectGetsNoCredential() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "right"])
        server.respondingURL = URL(string: "https://login.example.net/")!
        let store = InMemoryCredentialStore([Self.space: Credential(username: "alice", password: "right")])
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "right")])
        await #expect(throws: AuthenticationError.crossOriginChallenge(
            requested: Self.url, challengedBy: URL(string: "https://login.example.net/")!)) {
            try await perform(KeystoreAuthenticator(store: store, prompt: prompt), server)
        }
        #expect(server.authorizations == [nil])
        #expect(prompt.count == 0)
    }

    @Test func non401StatusesAreDeliveredUntouched() async throws {
        let server = InMemoryBasicAuthServer(users: [:])
        server.challenge = #"Bearer realm="api""#
        await #expect(throws: AuthenticationError.unsupportedChallenge(url: Self.url, schemes: ["Bearer"])) {
            try await perform(KeystoreAuthenticator(store: InMemoryCredentialStore(), prompt: ScriptedPrompt([])), server)
        }
        #expect(server.requestCount == 1)
    }

    @Test func useStoredCredentialsFalseGoesStraightToThePrompt() async throws {
        let server = InMemoryBasicAuthServer(users: ["alice": "typed"])
        let store = InMemoryCredentialStore([Self.space: Credential(username: "alice", password: "old")])
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "typed")])
        let authenticator = KeystoreAuthenticator(store: store, prompt: prompt, options: .init(useStoredCredentials: false))
        _ = try await perform(authenticator, server)
        #expect(server.authorizations == [nil, basic("alice", "typed")])
        #expect(password(of: try store.credential(for: Self.space)) == "typed")
    }

    @Test func exchangeStepsAndCountsExactly() throws {
        let store = InMemoryCredentialStore([Self.space: Credential(username: "alice", password: "old")])
        let authenticator = KeystoreAuthenticator(store: store, prompt: ScriptedPrompt([]))
        var exchange = try authenticator.makeExchange(for: Self.url)
        let challenge = Exchange.Response(statusCode: 401, wwwAuthenticate: [#"Basic realm="fake""#])

        guard case .send(nil) = try exchange.start() else { Issue.record("first request without credential"); return }
        guard case let .send(stored?) = try exchange.handle(challenge), stored.username == "alice" else {
            Issue.record("then the stored credential"); return
        }
        guard case let .prompt(space, reason, suggested) = try exchange.handle(challenge) else {
            Issue.record("then a prompt"); return
        }
        #expect(space == Self.space && reason == .storedCredentialRejected(username: "alice") && suggested == "alice")
        guard case .send(_?) = try exchange.handlePromptResult(Credential(username: "carol", password: "p")) else {
            Issue.record("then the entered credential"); return
        }
        #expect(throws: AuthenticationError.credentialsRejected(space: Self.space, username: "carol")) {
            try exchange.handle(challenge)
        }
        #expect(exchange.requestCount == 3)
        #expect(exchange.promptCount == 1)
        #expect(store.storeCount == 0)
    }

    @Test func exchangeStoresOnlyOn2xx() throws {
        for status in [200, 204, 299, 301, 403, 404, 500] {
            let store = InMemoryCredentialStore()
            let authenticator = KeystoreAuthenticator(store: store, prompt: ScriptedPrompt([]))
            var exchange = try authenticator.makeExchange(for: Self.url)
            _ = try exchange.start()
            _ = try exchange.handle(.init(statusCode: 401, wwwAuthenticate: [#"Basic realm="fake""#]))
            _ = try exchange.handlePromptResult(Credential(username: "dave", password: "p"))
            guard case .deliver = try exchange.handle(.init(statusCode: status)) else {
                Issue.record("\(status) is delivered"); continue
            }
            #expect(store.storeCount == ((200..<300).contains(status) ? 1 : 0), "status \(status)")
        }
    }

    @Test func errorMessagesNeverContainThePassword() async throws {
        let secret = "S3cret-Pa55word"
        let server = InMemoryBasicAuthServer(users: ["alice": "other"])
        let store = InMemoryCredentialStore([Self.space: Credential(username: "alice", password: secret)])
        var messages: [String] = []
        for prompt in [nil, ScriptedPrompt([Credential(username: "alice", password: secret)]) as (any CredentialPrompting)?] {
            do {
                _ = try await perform(KeystoreAuthenticator(store: store, prompt: prompt, options: .init(eraseRejectedCredentials: false)), server)
                Issue.record("expected a rejection")
            } catch {
                messages.append("\(error)")
                messages.append(error.localizedDescription)
                messages.append(String(reflecting: error))
            }
        }
        #expect(messages.count == 6)
        for message in messages {
            #expect(!message.contains(secret))
            #expect(!message.contains(basic("alice", secret)))
            #expect(message.contains("alice"))
        }
    }
}

typealias Exchange = KeystoreAuthenticator.Exchange

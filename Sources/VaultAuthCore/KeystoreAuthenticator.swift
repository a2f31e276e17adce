import Foundation
import Synchronization
import VaultCore
import VaultCredentials

/// Answers HTTP Basic challenges with credentials from a ``CredentialStoring`` and asks a
/// ``CredentialPrompting`` for fresh ones: the SAP mobile-services tutorials' `KeystoreAuthenticator`, with git's credential rules.
///
/// The rules, for one request (one ``Exchange``):
/// - A stored credential is sent **once**. If the server answers 401 to it, it is stale: it is never sent again
///   by this authenticator, it is erased from the store (``Options/eraseRejectedCredentials``, git's
///   `credential reject`), and the user is asked once for a fresh one.
/// - After the second rejection the request fails with ``AuthenticationError/credentialsRejected(space:username:)``.
///   So there are at most 2 prompts and at most 3 requests per request (4 never happens).
/// - A credential the user typed is stored only after the server accepted it (2xx). Nothing else is stored,
///   and a 403 (or any status other than 401) erases nothing.
/// - Without a prompt, the request fails at once with a clear error instead of waiting.
/// - Credentials go only over `https`, or over `http` to a loopback address when
///   ``Options/allowInsecureLoopbackHTTP`` is set; never to an origin other than the one that challenged.
///
/// The decision logic is ``Exchange``, a state machine without I/O; ``perform(_:using:)`` drives it over any
/// transport, and VaultAuth's `AuthenticatingHTTPClient` over SwiftNIO. ``perform(_:using:)`` runs the exchange's
/// steps, which call the credential store (the vault blocks: file I/O, `fsync`, another process's lock), off
/// the cooperative pool (`runBlocking`).
public final class KeystoreAuthenticator: Sendable {
    /// What the authenticator may do.
    public struct Options: Sendable, Equatable {
        /// Allow sending credentials over plain `http` to a loopback address (`127.0.0.0/8`, `::1`, `localhost`).
        /// Plain `http` to any other host never carries credentials. Default `false`.
        public var allowInsecureLoopbackHTTP: Bool
        /// Answer challenges with stored credentials. `false` makes every challenge go to the prompt (a login
        /// with a username and password given by a script). Default `true`.
        public var useStoredCredentials: Bool
        /// Store credentials the user entered once the server accepted them. Default `true`.
        public var storeAcceptedCredentials: Bool
        /// Erase a stored credential that the server rejected with 401 (git's `credential reject`). When `false`
        /// it is kept in the store but still never sent again by this authenticator. Default `true`.
        public var eraseRejectedCredentials: Bool

        public init(
            allowInsecureLoopbackHTTP: Bool = false,
            useStoredCredentials: Bool = true,
            storeAcceptedCredentials: Bool = true,
            eraseRejectedCredentials: Bool = true
        ) {
            self.allowInsecureLoopbackHTTP = allowInsecureLoopbackHTTP
            self.useStoredCredentials = useStoredCredentials
            self.storeAcceptedCredentials = storeAcceptedCredentials
            self.eraseRejectedCredentials = eraseRejectedCredentials
        }
    }

    /// Where credentials are kept.
    public let store: any CredentialStoring
    /// Who is asked for credentials; `nil` when nobody can be asked (then a missing or stale credential fails
    /// the request at once).
    public let prompt: (any CredentialPrompting)?
    public let options: Options

    private struct State {
        var staleSpaces: Set<ProtectionSpace> = []
        var knownSpaces: [Origin: ProtectionSpace] = [:]
    }

    private let state = Mutex(State())

    public init(store: any CredentialStoring, prompt: (any CredentialPrompting)?, options: Options = Options()) {
        self.store = store
        self.prompt = prompt
        self.options = options
    }

    /// `true` if the stored credential of `space` was rejected and will not be sent again.
    public func isStale(_ space: ProtectionSpace) -> Bool {
        state.withLock { $0.staleSpaces.contains(space) }
    }

    /// Makes requests to `space`'s origin carry its stored credential from the first request on, without waiting
    /// for a 401 (as the device-registration flow does). The authenticator also remembers each space a server
    /// accepted a credential for.
    public func rememberProtectionSpace(_ space: ProtectionSpace) {
        state.withLock { $0.knownSpaces[space.origin] = space }
    }

    func knownSpace(for origin: Origin) -> ProtectionSpace? {
        state.withLock { $0.knownSpaces[origin] }
    }

    func markStale(_ space: ProtectionSpace) {
        state.withLock { _ = $0.staleSpaces.insert(space) }
    }

    func markFresh(_ space: ProtectionSpace) {
        state.withLock { _ = $0.staleSpaces.remove(space) }
    }

    /// `true` if credentials may be sent to `origin`.
    public func mayCarryCredentials(to origin: Origin) -> Bool {
        origin.isSecure || (options.allowInsecureLoopbackHTTP && origin.isLoopback)
    }

    /// Starts the decision logic for one request to `url`.
    ///
    /// - Throws: ``AuthenticationError/unsupportedURL(_:)`` if `url` is not an absolute `http`/`https` URL.
    public func makeExchange(for url: URL) throws(AuthenticationError) -> Exchange {
        guard let origin = Origin(url) else { throw .unsupportedURL(url.absoluteString) }
        return Exchange(authenticator: self, url: url, origin: origin)
    }

    /// Sends `request` through `transport`, answering Basic challenges by the rules above.
    ///
    /// `request`'s own `Authorization` header is replaced on every attempt (removed when no credential is sent).
    /// `transport` must return the response of a 401 too (with any body), not fail on it; `Body` is what it
    /// made of the response's body (VaultAuth's `AuthenticatingHTTPClient` drops a 401's and reads or streams the others).
    ///
    /// - Returns: the first response that is not answered with another attempt (any status but a handled 401).
    /// - Throws: ``AuthenticationError``, or what `transport`, the store or the prompt throw.
    public func perform<Body>(
        _ request: HTTPRequest,
        using transport: (HTTPRequest) async throws -> (Body, HTTPResponse)
    ) async throws -> (Body, HTTPResponse) {
        var exchange = try makeExchange(for: request.url)
        var step: Exchange.Step
        (exchange, step) = try await Self.offPool(exchange) { try $0.start() }
        while true {
            switch step {
            case let .send(credential):
                var attempt = request
                attempt.headers.set("Authorization", credential?.authorizationHeaderValue())
                let (body, response) = try await transport(attempt)
                let answer = Exchange.Response(response)
                (exchange, step) = try await Self.offPool(exchange) { try $0.handle(answer) }
                if case .deliver = step { return (body, response) }
            case let .prompt(space, reason, suggestedUsername):
                guard let prompt else {  // Exchange only asks when a prompt exists.
                    throw AuthenticationError.noPromptAvailable(space: space, detail: "no prompt is configured")
                }
                let credential = try await prompt.credential(
                    for: space, reason: reason, suggestedUsername: suggestedUsername)
                (exchange, step) = try await Self.offPool(exchange) { try $0.handlePromptResult(credential) }
            case .deliver:
                preconditionFailure("Exchange delivers only after a response")
            }
        }
    }

    /// Runs one step of `exchange` (which may read, write or erase in the credential store) on a thread of its
    /// own, and returns the advanced exchange with the step.
    private static func offPool(
        _ exchange: Exchange, _ body: @escaping @Sendable (inout Exchange) throws -> Exchange.Step
    ) async throws -> (Exchange, Exchange.Step) {
        try await runBlocking {
            var exchange = exchange
            let step = try body(&exchange)
            return (exchange, step)
        }
    }
}

extension KeystoreAuthenticator {
    /// The decision logic for one request, without I/O except the credential store: a state machine.
    ///
    /// Call ``start()``; perform each ``Step/send(_:)`` and pass the response to ``handle(_:)``; answer each
    /// ``Step/prompt(_:_:suggestedUsername:)`` with ``handlePromptResult(_:)``; stop at ``Step/deliver``
    /// (hand the last response to the caller) or at the first error.
    public struct Exchange: Sendable {
        /// What to do next.
        public enum Step: Sendable {
            /// Send the request (again), with an `Authorization: Basic` header for this credential, or none.
            case send(Credential?)
            /// Ask the user for a credential for the space, then call ``handlePromptResult(_:)``.
            case prompt(ProtectionSpace, CredentialPromptReason, suggestedUsername: String?)
            /// The last response is final: give it to the caller.
            case deliver
        }

        /// What the exchange needs to know of a response.
        public struct Response: Sendable {
            public var statusCode: Int
            /// The URL that answered (after redirects); `nil` means the request's URL.
            public var url: URL?
            /// The values of all `WWW-Authenticate` fields.
            public var wwwAuthenticate: [String]

            public init(statusCode: Int, url: URL? = nil, wwwAuthenticate: [String] = []) {
                self.statusCode = statusCode
                self.url = url
                self.wwwAuthenticate = wwwAuthenticate
            }

            /// Reads status, URL and `WWW-Authenticate` of `response`.
            public init(_ response: HTTPResponse) {
                self.init(
                    statusCode: response.statusCode, url: response.url,
                    wwwAuthenticate: response.headers.values("WWW-Authenticate"))
            }
        }

        enum Source: Sendable { case stored, entered }

        struct Sent: Sendable {
            let space: ProtectionSpace
            let credential: Credential
            let source: Source
        }

        let authenticator: KeystoreAuthenticator
        /// The URL requested.
        public let url: URL
        let origin: Origin
        var lastSent: Sent?
        var pendingPrompt: ProtectionSpace?
        var lastRejected: Sent?
        var rejections = 0
        var finished = false

        /// Requests sent so far (each ``Step/send(_:)``).
        public private(set) var requestCount = 0
        /// Prompts answered so far.
        public private(set) var promptCount = 0

        init(authenticator: KeystoreAuthenticator, url: URL, origin: Origin) {
            self.authenticator = authenticator
            self.url = url
            self.origin = origin
        }

        /// The first step: send without credentials, or with the stored one when the origin's protection space
        /// is known (``KeystoreAuthenticator/rememberProtectionSpace(_:)``).
        public mutating func start() throws -> Step {
            precondition(requestCount == 0, "start() is called once")
            let options = authenticator.options
            if options.useStoredCredentials, let space = authenticator.knownSpace(for: origin),
               authenticator.mayCarryCredentials(to: origin), !authenticator.isStale(space),
               let credential = try authenticator.store.credential(for: space) {
                return send(Sent(space: space, credential: credential, source: .stored))
            }
            requestCount += 1
            return .send(nil)
        }

        private mutating func send(_ sent: Sent) -> Step {
            lastSent = sent
            requestCount += 1
            return .send(sent.credential)
        }

        /// Decides what follows `response` to the last ``Step/send(_:)``.
        public mutating func handle(_ response: Response) throws -> Step {
            precondition(!finished && pendingPrompt == nil, "handle(_:) follows a .send step")
            let authenticator = self.authenticator
            guard response.statusCode == 401 else {
                finished = true
                // A 2xx from another origin (a redirect led there, without the credential) accepts nothing.
                if (200..<300).contains(response.statusCode), let sent = lastSent,
                   Origin(response.url ?? url) == origin {
                    if sent.source == .entered && authenticator.options.storeAcceptedCredentials {
                        try authenticator.store.store(sent.credential, for: sent.space)
                    }
                    authenticator.markFresh(sent.space)
                    authenticator.rememberProtectionSpace(sent.space)
                }
                return .deliver  // 403 and every other status: nothing stored, nothing erased
            }

            let challengedBy = response.url ?? url
            let challenges = AuthenticationChallenge.parse(response.wwwAuthenticate)
            guard let basic = challenges.first(where: { $0.hasScheme("Basic") && $0.token68 == nil }) else {
                throw AuthenticationError.unsupportedChallenge(url: challengedBy, schemes: challenges.map(\.scheme))
            }
            guard Origin(challengedBy) == origin else {
                throw AuthenticationError.crossOriginChallenge(requested: url, challengedBy: challengedBy)
            }
            let space = ProtectionSpace(origin: origin, realm: basic.parameters["realm"] ?? "")
            guard authenticator.mayCarryCredentials(to: origin) else {
                throw AuthenticationError.insecureTransport(url: url)
            }

            if let sent = lastSent {
                // A credential was rejected.
                rejections += 1
                if sent.source == .stored {
                    authenticator.markStale(sent.space)
                    if authenticator.options.eraseRejectedCredentials {
                        try authenticator.store.removeCredential(for: sent.space)
                    }
                }
                if rejections >= 2 {
                    throw AuthenticationError.credentialsRejected(space: sent.space, username: sent.credential.username)
                }
                guard authenticator.prompt != nil else { throw rejection(of: sent) }
                let reason: CredentialPromptReason = sent.source == .stored
                    ? .storedCredentialRejected(username: sent.credential.username)
                    : .enteredCredentialRejected(username: sent.credential.username)
                lastSent = nil
                lastRejected = sent
                pendingPrompt = space
                return .prompt(space, reason, suggestedUsername: sent.credential.username)
            }

            // Nothing was sent yet: the stored credential once, else the prompt.
            precondition(requestCount == 1, "only the first request goes without credentials")
            if authenticator.options.useStoredCredentials, !authenticator.isStale(space),
               let credential = try authenticator.store.credential(for: space) {
                return send(Sent(space: space, credential: credential, source: .stored))
            }
            guard authenticator.prompt != nil else {
                throw AuthenticationError.noPromptAvailable(
                    space: space, detail: "no credential is stored and no prompt is configured")
            }
            pendingPrompt = space
            return .prompt(space, .noStoredCredential, suggestedUsername: nil)
        }

        /// The failure for `sent` rejected with no attempt left to make: a stored credential is stale (and erased
        /// when the options say so), one the user entered is rejected.
        private func rejection(of sent: Sent) -> AuthenticationError {
            sent.source == .stored
                ? .storedCredentialRejected(
                    space: sent.space, username: sent.credential.username,
                    erased: authenticator.options.eraseRejectedCredentials)
                : .credentialsRejected(space: sent.space, username: sent.credential.username)
        }

        /// Takes the prompt's answer; a credential is sent next.
        ///
        /// `nil` (declined) fails with ``AuthenticationError/promptCancelled(space:)`` when nothing was rejected
        /// yet, and otherwise with the rejection it answered: ``AuthenticationError/storedCredentialRejected(space:username:erased:)``
        /// or ``AuthenticationError/credentialsRejected(space:username:)`` (so a script that supplies one
        /// credential gets "rejected", not "cancelled").
        public mutating func handlePromptResult(_ credential: Credential?) throws -> Step {
            guard let space = pendingPrompt else { preconditionFailure("handlePromptResult(_:) follows a .prompt step") }
            pendingPrompt = nil
            guard let credential else {
                finished = true
                if let rejected = lastRejected { throw rejection(of: rejected) }
                throw AuthenticationError.promptCancelled(space: space)
            }
            try credential.validate()
            promptCount += 1
            return send(Sent(space: space, credential: credential, source: .entered))
        }
    }
}

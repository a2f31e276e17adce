import FoundationEssentials
import Synchronization
import VaultAuthCore
import VaultCredentials

/// A server simulated in memory (no network) for a ``VaultAuthCore/KeystoreAuthenticator``'s `perform`: HTTP Basic
/// users and passwords, a 401 with `challenge` for anything else, and every `Authorization` header it was sent.
public final class InMemoryBasicAuthServer: Sendable {
    private struct State {
        var users: [String: String]
        var authorizations: [String?] = []
        var acceptedStatus = 200
        var challenge = #"Basic realm="fake", charset="UTF-8""#
        var respondingURL: URL?
    }

    private let state: Mutex<State>

    /// A server that knows `users` (name → password).
    public init(users: [String: String]) {
        state = Mutex(State(users: users))
    }

    /// The `Authorization` header of every request, in order (`nil`: none).
    public var authorizations: [String?] { state.withLock { $0.authorizations } }
    /// How many requests it answered.
    public var requestCount: Int { state.withLock { $0.authorizations.count } }
    /// The status of an answer to a request with a valid credential (200).
    public var acceptedStatus: Int {
        get { state.withLock { $0.acceptedStatus } }
        set { state.withLock { $0.acceptedStatus = newValue } }
    }
    /// The `WWW-Authenticate` challenge of a 401 (realm `fake`).
    public var challenge: String {
        get { state.withLock { $0.challenge } }
        set { state.withLock { $0.challenge = newValue } }
    }
    /// The URL the answers claim to come from (after redirects); `nil`: the request's.
    public var respondingURL: URL? {
        get { state.withLock { $0.respondingURL } }
        set { state.withLock { $0.respondingURL = newValue } }
    }

    /// Sets `user`'s password (a password changed on the server).
    public func setPassword(_ password: String, for user: String) { state.withLock { $0.users[user] = password } }

    /// The answer to `request`: `ok` with ``acceptedStatus`` for a valid credential, else a 401 with ``challenge``.
    public func respond(_ request: HTTPRequest) -> (Data, HTTPResponse) {
        let authorization = request.headers["Authorization"]
        let (valid, url, status, challenge) = state.withLock { state in
            state.authorizations.append(authorization)
            let valid = state.users.contains {
                Credential(username: $0.key, password: $0.value).authorizationHeaderValue() == authorization
            }
            return (valid, state.respondingURL ?? request.url, state.acceptedStatus, state.challenge)
        }
        if valid { return (Data("ok".utf8), HTTPResponse(statusCode: status, url: url)) }
        return (Data(), HTTPResponse(statusCode: 401, url: url, headers: HTTPHeaderFields([("WWW-Authenticate", challenge)])))
    }
}

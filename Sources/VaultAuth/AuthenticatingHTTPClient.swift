import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Sends requests over `URLSession` with a ``KeystoreAuthenticator`` answering HTTP Basic challenges.
///
/// `URLSession` never does the challenge dance itself: each attempt carries the `Authorization: Basic` header
/// the authenticator chose, and the session-level delegate cancels every credential challenge. On Linux
/// (swift-corelibs-foundation) this matters twice:
/// - a 401 with a `Basic` challenge waits forever unless a **session-level** delegate implements
///   `urlSession(_:task:didReceive:completionHandler:)` and calls the handler (per-task delegates and the async
///   variant are not called). Cancelling makes the task fail with `NSURLErrorCancelled`; the delegate keeps the
///   challenge's 401 response (`failureResponse`), which this client hands to the authenticator as the answer.
///   The body of such a 401 is not available and is delivered empty.
/// - corelibs copies every header, `Authorization` included, to the request of a redirect, even to another
///   origin. The delegate strips `Authorization` from a redirect to another origin (scheme, host or port).
///
/// Server certificates are checked by the system's trust evaluation (`.performDefaultHandling`); nothing is
/// blanket-trusted.
public final class AuthenticatingHTTPClient: Sendable {
    /// Default request timeout in seconds.
    public static let defaultTimeout: TimeInterval = 30

    public let authenticator: KeystoreAuthenticator
    private let session: URLSession
    private let delegate: SessionDelegate
    private let timeout: TimeInterval

    /// Makes a client with an ephemeral session (no cookies, no cache, no URL credential storage).
    ///
    /// - Parameter timeout: seconds before an idle request fails (`timeoutIntervalForRequest`); the whole
    ///   resource is bounded by 4 times that. Every request completes, with a response or an error.
    public init(authenticator: KeystoreAuthenticator, timeout: TimeInterval = AuthenticatingHTTPClient.defaultTimeout) {
        self.authenticator = authenticator
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout * 4
        configuration.urlCredentialStorage = nil
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let delegate = SessionDelegate()
        self.delegate = delegate
        self.session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Sends `request`, answering Basic challenges through the authenticator.
    ///
    /// - Returns: the body and the response (any status; a 401 only when it is not answered, see
    ///   ``KeystoreAuthenticator``).
    /// - Throws: ``AuthenticationError`` (rejected credentials, no prompt, insecure transport,
    ///   ``AuthenticationError/transportFailed(url:detail:)`` for network errors and timeouts),
    ///   `CancellationError` when the calling task is cancelled, or what the store or prompt throw.
    public func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await authenticator.perform(request) { attempt in
            try await self.send(attempt)
        }
    }

    /// One attempt, without any authentication logic: a 401 comes back as a response.
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        var request = request
        if request.timeoutInterval > timeout { request.timeoutInterval = timeout }
        let url = request.url ?? URL(fileURLWithPath: "/")
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: request) { [delegate] data, response, error in
                    let challenge401 = box.identifier.flatMap { delegate.takeChallengeResponse(for: $0) }
                    if let error {
                        let nsError = error as NSError
                        if nsError.domain == NSURLErrorDomain, nsError.code == NSURLErrorCancelled,
                           let challenge401 {
                            continuation.resume(returning: (Data(), challenge401))
                        } else if nsError.domain == NSURLErrorDomain, nsError.code == NSURLErrorCancelled,
                                  box.isCancelled {
                            continuation.resume(throwing: CancellationError())
                        } else {
                            continuation.resume(
                                throwing: AuthenticationError.transportFailed(
                                    url: url, detail: nsError.localizedDescription))
                        }
                    } else if let response = response as? HTTPURLResponse {
                        continuation.resume(returning: (data ?? Data(), response))
                    } else {
                        continuation.resume(
                            throwing: AuthenticationError.transportFailed(url: url, detail: "not an HTTP response"))
                    }
                }
                box.start(task)
            }
        } onCancel: {
            box.cancel()
        }
    }

    /// Cancels outstanding requests and releases the session.
    public func invalidate() {
        session.invalidateAndCancel()
    }
}

/// Holds the task of one attempt for cancellation from another thread.
private final class TaskBox: Sendable {
    private struct State {
        var task: URLSessionDataTask?
        var cancelled = false
    }

    private let state = Mutex(State())

    var identifier: Int? { state.withLock { $0.task?.taskIdentifier } }
    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func start(_ task: URLSessionDataTask) {
        let cancelNow = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancelNow { task.cancel() } else { task.resume() }
    }

    func cancel() {
        let task = state.withLock { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}

/// The session-level delegate: cancels credential challenges (keeping their 401), leaves server trust to the
/// system, strips `Authorization` on cross-origin redirects.
// @unchecked: an NSObject subclass (URLSession's delegate) cannot be checked Sendable; its one state is a Mutex.
final class SessionDelegate: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    private let challengeResponses = Mutex<[Int: HTTPURLResponse]>([:])

    /// Challenges left to the system (spelled out: the constants are unavailable in swift-corelibs-foundation,
    /// which never sends them).
    static let systemMethods: Set<String> = [
        "NSURLAuthenticationMethodServerTrust", "NSURLAuthenticationMethodClientCertificate",
    ]

    func takeChallengeResponse(for taskIdentifier: Int) -> HTTPURLResponse? {
        challengeResponses.withLock { $0.removeValue(forKey: taskIdentifier) }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if Self.systemMethods.contains(challenge.protectionSpace.authenticationMethod) {
            // Server trust and client certificates: the system's evaluation; never blanket trust.
            completionHandler(.performDefaultHandling, nil)
            return
        }
        // Every other challenge (Basic, Digest, anything unknown) is cancelled: `.performDefaultHandling` on a
        // 401 waits forever in swift-corelibs-foundation.
        if let response = challenge.failureResponse as? HTTPURLResponse {
            challengeResponses.withLock { $0[task.taskIdentifier] = response }
        }
        completionHandler(.cancelAuthenticationChallenge, nil)
    }

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.performDefaultHandling, nil)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(Self.redirect(request, from: response.url ?? task.currentRequest?.url))
    }

    /// `request` with `Authorization` removed unless it goes to the same origin as `previous`.
    static func redirect(_ request: URLRequest, from previous: URL?) -> URLRequest {
        var request = request
        let sameOrigin = previous.flatMap(Origin.init) != nil
            && previous.flatMap(Origin.init) == request.url.flatMap(Origin.init)
        if !sameOrigin {
            request.setValue(nil, forHTTPHeaderField: "Authorization")
        }
        return request
    }
}

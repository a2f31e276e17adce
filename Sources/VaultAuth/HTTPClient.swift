import Foundation
import NIOCore

/// Sends requests over ``HTTPTransport`` (SwiftNIO, NIOSSL) as they are: no challenge is answered, nothing is
/// added but what HTTP/1.1 needs. For requests that carry their own authentication (an S3 request signed with
/// ``SigV4Signer``, a token header).
///
/// The same guarantees as ``AuthenticatingHTTPClient``: `timeout` bounds the whole call however slowly a server
/// trickles; TLS by ``TLSOptions``; no proxy, no cookies, no cache; redirects by ``RedirectPolicy`` (by default
/// only within the origin: a signed request is not sent anywhere else).
public final class HTTPClient: Sendable {
    public let timeout: TimeInterval
    public let redirects: RedirectPolicy
    private let transport: HTTPTransport

    public init(timeout: TimeInterval = AuthenticatingHTTPClient.defaultTimeout, tls: TLSOptions = TLSOptions(), redirects: RedirectPolicy = .sameOriginOnly) {
        self.timeout = timeout
        self.redirects = redirects
        self.transport = HTTPTransport(tls: tls)
    }

    /// Sends `request` and collects the final response's body, at most `maximumBodySize` bytes.
    ///
    /// - Throws: ``AuthenticationError`` (``AuthenticationError/timedOut(url:seconds:)``,
    ///   ``AuthenticationError/responseTooLarge(url:limit:)``, TLS failures, a refused redirect,
    ///   ``AuthenticationError/transportFailed(url:detail:)``), `CancellationError`.
    public func data(for request: HTTPRequest, maximumBodySize: Int) async throws -> (Data, HTTPResponse) {
        let start = NIODeadline.now()
        let deadline = start + .nanoseconds(Int64(timeout * 1e9))
        return try await transport.send(request, deadline: deadline, timeout: timeout, redirects: redirects) { response, body in
            (try await body.collect(limit: maximumBodySize), response)
        }
    }
}

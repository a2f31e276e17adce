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
        try await data(for: request, maximumBodySize: { _ in maximumBodySize })
    }

    /// Sends `request` and collects the final response's body, at most `maximumBodySize(response)` bytes: a bound
    /// for that answer (its status). An answer whose `Content-Length` says more fails before any of its body is
    /// read. With `prefix`, the body's first `prefix.count` bytes (all of a shorter body) go to `prefix.check` as
    /// soon as they are in: what it throws ends the read there (a body that cannot be what is asked for is not
    /// read to its end). `progress` gets the final response and how many bytes of its body are in, after each piece
    /// (a download's progress bar).
    ///
    /// - Throws: as ``data(for:maximumBodySize:)``, and what `prefix.check` throws.
    public func data(
        for request: HTTPRequest, maximumBodySize: (HTTPResponse) -> Int,
        prefix: (count: Int, check: (HTTPResponse, Data) throws -> Void)? = nil,
        progress: ((HTTPResponse, Int) -> Void)? = nil
    ) async throws -> (Data, HTTPResponse) {
        let start = NIODeadline.now()
        let deadline = start + .nanoseconds(Int64(timeout * 1e9))
        return try await transport.send(request, deadline: deadline, timeout: timeout, redirects: redirects) { response, body in
            let limit = maximumBodySize(response)
            if let length = response.headers["Content-Length"].flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }), length > limit {
                throw AuthenticationError.responseTooLarge(url: response.url, limit: limit)
            }
            // What the check throws is the caller's own error, passed through as it is (not the network's).
            let check = prefix.map { prefix in
                (count: prefix.count, check: { (bytes: Data) in
                    do { try prefix.check(response, bytes) } catch { throw ConsumerFailure(error: error) }
                })
            }
            return (try await body.collect(limit: limit, prefix: check, progress: progress.map { report in { report(response, $0) } }), response)
        }
    }
}

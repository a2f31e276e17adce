import Foundation
import NIOCore

/// Sends requests over ``HTTPTransport`` (SwiftNIO, NIOSSL) with a ``KeystoreAuthenticator`` answering HTTP
/// Basic challenges.
///
/// - Every attempt carries the `Authorization: Basic` header the authenticator chose, or none.
/// - `timeout` bounds the whole call: every attempt (connecting, TLS, sending, the whole answer, the redirects
///   it follows) counts against it, however slowly a server trickles; the time a prompt waits for the user
///   does not. Past it the call fails with ``AuthenticationError/timedOut(url:seconds:)``.
/// - TLS: the system's roots plus ``TLSOptions/additionalTrustRoots``, the host name verified, and the pins of
///   ``TLSOptions/pinnedPublicKeys``; a failure closes the connection before anything is written.
/// - Redirects: ``RedirectPolicy``; nothing origin-bound follows a redirect to another origin.
/// - No proxy, no cookies, no cache.
/// - A 401's body is read (at most 64 KiB) and dropped; the final response's body goes to the caller:
///   ``data(for:maximumBodySize:)`` collects it up to a bound, ``stream(_:to:)`` hands it over piece by piece.
public final class AuthenticatingHTTPClient: Sendable {
    /// Default timeout of a call, in seconds.
    public static let defaultTimeout: TimeInterval = 30
    /// What ``data(for:maximumBodySize:)`` reads at most by default: 1 MiB.
    public static let defaultMaximumBodySize = 1 << 20

    public let authenticator: KeystoreAuthenticator
    public let timeout: TimeInterval
    public let redirects: RedirectPolicy
    private let transport: HTTPTransport

    /// Makes a client; nothing is connected until a request is sent.
    ///
    /// - Parameters:
    ///   - timeout: seconds the whole call may take, prompts not counted.
    ///   - tls: extra trust roots and public-key pins.
    ///   - redirects: whether a redirect to another origin is followed (without origin-bound fields) or fails.
    public init(
        authenticator: KeystoreAuthenticator, timeout: TimeInterval = AuthenticatingHTTPClient.defaultTimeout,
        tls: TLSOptions = TLSOptions(), redirects: RedirectPolicy = .follow
    ) {
        self.authenticator = authenticator
        self.timeout = timeout
        self.redirects = redirects
        self.transport = HTTPTransport(tls: tls)
    }

    /// Sends `request`, answering Basic challenges through the authenticator, and collects the final body.
    ///
    /// - Returns: the body and the response (any status; a 401 only when it is not answered, see
    ///   ``KeystoreAuthenticator``).
    /// - Throws: ``AuthenticationError`` (rejected credentials, no prompt, insecure transport, TLS failures,
    ///   ``AuthenticationError/timedOut(url:seconds:)``, ``AuthenticationError/responseTooLarge(url:limit:)``,
    ///   ``AuthenticationError/transportFailed(url:detail:)`` for other network errors), `CancellationError`
    ///   when the calling task is cancelled, or what the store or prompt throw.
    public func data(
        for request: HTTPRequest, maximumBodySize: Int = AuthenticatingHTTPClient.defaultMaximumBodySize
    ) async throws -> (Data, HTTPResponse) {
        let (body, response) = try await exchange(request) { _, body in try await body.collect(limit: maximumBodySize) }
        return (body, response)
    }

    /// Sends `request` like ``data(for:maximumBodySize:)`` and hands each piece of the final response's body to
    /// `sink` as it arrives (with the response's head), in bounded memory whatever the body's length.
    ///
    /// - Returns: the final response.
    public func stream(
        _ request: HTTPRequest, to sink: (HTTPResponse, UnsafeRawBufferPointer) throws -> Void
    ) async throws -> HTTPResponse {
        try await exchange(request) { response, body in
            while let buffer = try await body.next() {
                do {
                    try buffer.withUnsafeReadableBytes { try sink(response, $0) }
                } catch {
                    throw ConsumerFailure(error: error)
                }
            }
        }.1
    }

    /// The authenticator's loop over the transport: a 401's body is dropped, the final one goes to `consume`.
    private func exchange<T>(
        _ request: HTTPRequest, _ consume: (HTTPResponse, inout ResponseBody) async throws -> T
    ) async throws -> (T, HTTPResponse) {
        var remaining = TimeAmount.nanoseconds(Int64(timeout * 1e9))
        let (result, response) = try await authenticator.perform(request) { attempt -> (T?, HTTPResponse) in
            let start = NIODeadline.now()
            defer { remaining = remaining - (NIODeadline.now() - start) }
            return try await transport.send(
                attempt, deadline: start + remaining, timeout: timeout, redirects: redirects
            ) { response, body in
                if response.statusCode == 401 {
                    try await body.discard(limit: HTTPTransport.discardLimit)
                    return (nil, response)
                }
                return (try await consume(response, &body), response)
            }
        }
        // The authenticator delivers no 401 (it answers it or throws), so the body was consumed.
        guard let result else { preconditionFailure("a delivered response is not a 401") }
        return (result, response)
    }
}

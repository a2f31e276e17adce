import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// What happens to a redirect (`301`, `302`, `303`, `307`, `308` with a `Location`).
public enum RedirectPolicy: Sendable, Equatable {
    /// Follow up to ``HTTPTransport/maximumRedirects`` redirects. To another origin, only the fields that carry
    /// nothing origin-bound go along (`Accept`, `Accept-Language`, `User-Agent`, and `Content-Type` with a body):
    /// `Authorization`, `Cookie`, `X-SMP-APPCID` and every other field the caller set are dropped (curl's rule
    /// since CVE-2022-27776, and stricter: curl keeps custom fields).
    case follow
    /// Follow redirects within the origin; one to another origin fails with
    /// ``AuthenticationError/redirectRefused(from:to:reason:)`` (its answer could not be trusted as the origin's).
    case sameOriginOnly
}

/// HTTP/1.1 over SwiftNIO and NIOSSL, one connection per request (`Connection: close`), no proxy.
///
/// - Deadline: connecting (name resolution included), the TLS handshake, sending, and reading the whole answer
///   end by the deadline given to ``send(_:deadline:redirects:_:)``, redirects included; at the deadline the
///   connection is closed and the request fails with ``AuthenticationError/timedOut(url:seconds:)``, however
///   slowly the server trickles.
/// - TLS: ``TLSOptions``; a failed verification or pin closes the connection before the request is written.
/// - Proxies: none. `http_proxy`, `https_proxy`, `ALL_PROXY` and `NO_PROXY` are not read: every connection goes
///   straight to the URL's host (docs/AUTH.md, "Proxies").
/// - Redirects: followed here, by ``RedirectPolicy``; `https` never redirects to `http`.
struct HTTPTransport: Sendable {
    static let maximumRedirects = 10
    /// How much of a body that is thrown away (a redirect's, a 401's) is read before the connection is closed.
    static let discardLimit = 64 << 10
    /// Fields that may follow a redirect to another origin.
    static let portableFields: Set<String> = ["accept", "accept-language", "user-agent"]

    let tls: TLSOptions
    private let context: Result<NIOSSLContext, AuthenticationError>

    init(tls: TLSOptions) {
        self.tls = tls
        do {
            context = .success(try tls.makeContext())
        } catch {
            context = .failure(.invalidTLSOption("the TLS configuration cannot be used: \(error)"))
        }
    }

    /// Sends `request`, follows redirects by `redirects`, and hands the final response and its body to `handle`
    /// while the connection is open. `timeout` only names the bound in a ``AuthenticationError/timedOut(url:seconds:)``.
    func send<T>(
        _ request: HTTPRequest, deadline: NIODeadline, timeout: Double, redirects: RedirectPolicy,
        _ handle: (HTTPResponse, inout ResponseBody) async throws -> T
    ) async throws -> T {
        var current = request
        for hop in 0...Self.maximumRedirects {
            let step: Hop<T> = try await once(current, deadline: deadline, timeout: timeout) { response, body in
                guard let next = try Self.redirect(of: current, by: response, policy: redirects) else {
                    return .final(try await handle(response, &body))
                }
                guard hop < Self.maximumRedirects else {
                    throw AuthenticationError.redirectRefused(from: request.url, to: next.url, reason: .tooMany)
                }
                try await body.discard(limit: Self.discardLimit)
                return .redirect(next)
            }
            switch step {
            case .final(let value): return value
            case .redirect(let next): current = next
            }
        }
        preconditionFailure("the last hop returns or throws")
    }

    private enum Hop<T> {
        case final(T)
        case redirect(HTTPRequest)
    }

    /// The request a redirect leads to, or `nil` when `response` is not a redirect.
    static func redirect(
        of request: HTTPRequest, by response: HTTPResponse, policy: RedirectPolicy
    ) throws(AuthenticationError) -> HTTPRequest? {
        guard [301, 302, 303, 307, 308].contains(response.statusCode), let location = response.headers["Location"]
        else { return nil }
        guard let target = URL(string: location, relativeTo: request.url)?.absoluteURL, let to = Origin(target),
              let from = Origin(request.url)
        else {
            throw .redirectRefused(from: request.url, to: URL(string: "about:blank")!, reason: .unsupportedLocation)
        }
        if from.isSecure && !to.isSecure { throw .redirectRefused(from: request.url, to: target, reason: .downgrade) }
        var next = request
        next.url = target
        if response.statusCode == 303 && request.method != "HEAD"
            || [301, 302].contains(response.statusCode) && request.method == "POST" {
            next.method = "GET"
            next.body = nil
            next.headers.remove("Content-Type")
            next.headers.remove("Content-Length")
        }
        if from != to {
            guard policy == .follow else { throw .redirectRefused(from: request.url, to: target, reason: .crossOrigin) }
            let keepContentType = next.body != nil
            next.headers = HTTPHeaderFields(next.headers.fields.filter {
                let name = $0.name.lowercased()
                return portableFields.contains(name) || keepContentType && name == "content-type"
            })
        }
        return next
    }

    /// One request on one connection, no redirect logic.
    private func once<T>(
        _ request: HTTPRequest, deadline: NIODeadline, timeout: Double,
        _ handle: (HTTPResponse, inout ResponseBody) async throws -> T
    ) async throws -> T {
        let url = request.url
        guard let origin = Origin(url) else { throw AuthenticationError.unsupportedURL(url.absoluteString) }
        let watch = ConnectionWatch(pins: tls)
        let remaining = deadline - .now()
        guard remaining > .zero else { throw AuthenticationError.timedOut(url: url, seconds: timeout) }
        do {
            let channel = try await connect(origin, deadline: deadline, remaining: remaining, watch: watch)
            return try await withTaskCancellationHandler {
                try await channel.executeThenClose { inbound, outbound in
                    // One write: the server cannot answer (and close) between the parts. A server may still answer
                    // before it read everything (and close): then its answer counts, not the failed write.
                    var parts: [HTTPClientRequestPart] = [.head(Self.head(of: request, origin: origin))]
                    if let body = request.body, !body.isEmpty { parts.append(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
                    parts.append(.end(nil))
                    var writeError: (any Error)?
                    do { try await outbound.write(contentsOf: parts) } catch { writeError = error }
                    var iterator = inbound.makeAsyncIterator()
                    var head: HTTPResponseHead?
                    while head == nil {
                        switch try await iterator.next() {
                        case .head(let received): head = received
                        case .body, .end: continue
                        case nil:
                            if let writeError { throw writeError }
                            throw AuthenticationError.transportFailed(
                                url: url, detail: "the server closed the connection without an answer")
                        }
                    }
                    var headers = HTTPHeaderFields()
                    for (name, value) in head!.headers { headers.add(name, value) }
                    let response = HTTPResponse(statusCode: Int(head!.status.code), url: url, headers: headers)
                    var body = ResponseBody(iterator: iterator, url: url)
                    return try await handle(response, &body)
                }
            } onCancel: {
                watch.cancel()
            }
        } catch let failure as ConsumerFailure {
            throw failure.error  // the caller's own error (e.g. stdout closed), not the network's
        } catch {
            throw watch.translate(error, url: url, timeout: timeout)
        }
    }

    private func connect(
        _ origin: Origin, deadline: NIODeadline, remaining: TimeAmount, watch: ConnectionWatch
    ) async throws -> NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart> {
        let sslContext: NIOSSLContext?
        if origin.isSecure { sslContext = try context.get() } else { sslContext = nil }
        let host = origin.host
        let isAddress = origin.isAddressLiteral
        let tls = self.tls
        return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(remaining)
            .connect(host: host, port: origin.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    watch.attach(channel, deadline: deadline)
                    if let sslContext {
                        let handler = try NIOSSLClientHandler._makeSSLClientHandler(
                            context: sslContext, serverHostname: isAddress ? nil : host
                        ) { certificate, channel in
                            // Runs after the chain and the host name verified; nothing was written yet.
                            if tls.accepts(certificate) { return channel.eventLoop.makeSucceededVoidFuture() }
                            watch.pinMismatch()
                            return channel.eventLoop.makeFailedFuture(PinnedKeyMismatch())
                        }
                        try channel.pipeline.syncOperations.addHandler(handler)
                        try channel.pipeline.syncOperations.addHandler(ErrorRecorder(watch: watch))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                        wrappingChannelSynchronously: channel)
                }
            }
    }

    static func head(of request: HTTPRequest, origin: Origin) -> HTTPRequestHead {
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method), uri: target)
        let defaultPort = origin.isSecure ? 443 : 80
        head.headers.add(name: "Host", value: origin.port == defaultPort ? origin.urlHost : "\(origin.urlHost):\(origin.port)")
        for field in request.headers where field.name.lowercased() != "host" && field.name.lowercased() != "connection"
            && field.name.lowercased() != "content-length" {
            head.headers.add(name: field.name, value: field.value)
        }
        head.headers.add(name: "Connection", value: "close")
        if let body = request.body {
            head.headers.add(name: "Content-Length", value: String(body.count))
        } else if ["POST", "PUT", "PATCH"].contains(request.method) {
            head.headers.add(name: "Content-Length", value: "0")
        }
        return head
    }
}

/// The body of a response, read while its connection is open.
struct ResponseBody {
    fileprivate var iterator: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
    let url: URL
    private(set) var finished = false

    fileprivate init(iterator: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator, url: URL) {
        self.iterator = iterator
        self.url = url
    }

    /// The next piece of the body; `nil` at its end.
    mutating func next() async throws -> ByteBuffer? {
        guard !finished else { return nil }
        while true {
            switch try await iterator.next() {
            case .body(let buffer): return buffer
            case .end:
                finished = true
                return nil
            case .head: continue
            case nil:
                throw AuthenticationError.transportFailed(
                    url: url, detail: "the connection closed before the answer was complete")
            }
        }
    }

    /// The whole body; more than `limit` bytes fail with ``AuthenticationError/responseTooLarge(url:limit:)``.
    /// With `prefix`, its `check` sees the first `count` bytes (all of a shorter body) as soon as they are in;
    /// `progress` the count of bytes in after each piece.
    mutating func collect(
        limit: Int, prefix: (count: Int, check: (Data) throws -> Void)? = nil, progress: ((Int) -> Void)? = nil
    ) async throws -> Data {
        var data = Data()
        var unchecked = prefix
        while var buffer = try await next() {
            guard data.count + buffer.readableBytes <= limit else {
                throw AuthenticationError.responseTooLarge(url: url, limit: limit)
            }
            buffer.withUnsafeReadableBytes { data.append(contentsOf: $0) }
            buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
            progress?(data.count)
            if let prefix = unchecked, data.count >= prefix.count {
                try prefix.check(data.prefix(prefix.count))
                unchecked = nil
            }
        }
        try unchecked?.check(data)
        return data
    }

    /// Reads and drops up to `limit` bytes of the body; a longer one is left unread (its connection is closed).
    mutating func discard(limit: Int) async throws {
        var count = 0
        while count <= limit, let buffer = try await next() { count += buffer.readableBytes }
    }
}

/// An error of the code that consumes a body (not of the connection): passed through untranslated.
struct ConsumerFailure: Error {
    let error: any Error
}

/// The pin check's failure (translated by ``ConnectionWatch``).
struct PinnedKeyMismatch: Error {}

/// What happened to one connection, seen from the event loop (deadline, pin, TLS errors) and from the caller
/// (cancellation); it turns what NIO throws into ``AuthenticationError``.
final class ConnectionWatch: Sendable {
    private struct State {
        var channel: (any Channel)?
        var timer: Scheduled<Void>?
        var timedOut = false
        var pinMismatch = false
        var tlsError: String?
        var cancelled = false
    }

    private let state = Mutex(State())
    let pins: TLSOptions

    init(pins: TLSOptions) {
        self.pins = pins
    }

    /// Closes `channel` at `deadline`.
    func attach(_ channel: any Channel, deadline: NIODeadline) {
        let timer = channel.eventLoop.scheduleTask(deadline: deadline) { [self] in
            state.withLock { $0.timedOut = true }
            channel.close(promise: nil)
        }
        channel.closeFuture.whenComplete { _ in timer.cancel() }
        let cancelled = state.withLock { state in
            state.channel = channel
            state.timer = timer
            return state.cancelled
        }
        if cancelled { channel.close(promise: nil) }
    }

    func cancel() {
        let channel = state.withLock { state in
            state.cancelled = true
            return state.channel
        }
        channel?.close(promise: nil)
    }

    func pinMismatch() { state.withLock { $0.pinMismatch = true } }

    func record(_ error: any Error) {
        let text = Self.describeTLS(error)
        state.withLock { state in
            if state.tlsError == nil, let text { state.tlsError = text }
        }
    }

    /// The user-facing words for a TLS error, or `nil` when `error` is not one.
    static func describeTLS(_ error: any Error) -> String? {
        let text = String(describing: error)
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "the server's certificate is not valid for this host name"
        }
        if error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError {
            if text.contains("CERTIFICATE_VERIFY_FAILED") {
                return "the server's certificate is not trusted (it is not signed by a trusted CA, or it expired)"
            }
            return "the TLS handshake failed (\(text))"
        }
        return nil
    }

    func translate(_ error: any Error, url: URL, timeout: Double) -> any Error {
        let state = state.withLock { $0 }
        if state.cancelled { return CancellationError() }
        if state.pinMismatch || error is PinnedKeyMismatch { return AuthenticationError.pinnedPublicKeyMismatch(url: url) }
        if state.timedOut { return AuthenticationError.timedOut(url: url, seconds: timeout) }
        if let tls = state.tlsError ?? Self.describeTLS(error) { return AuthenticationError.tlsFailed(url: url, detail: tls) }
        if let error = error as? AuthenticationError { return error }
        if let error = error as? ChannelError, case .connectTimeout = error {
            return AuthenticationError.timedOut(url: url, seconds: timeout)
        }
        if let error = error as? NIOConnectionError {
            if error.connectionErrors.isEmpty { return AuthenticationError.transportFailed(url: url, detail: "cannot resolve the host name") }
            return AuthenticationError.transportFailed(url: url, detail: Self.describe(error.connectionErrors[0].error))
        }
        return AuthenticationError.transportFailed(url: url, detail: Self.describe(error))
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED: return "connection refused"
            case ECONNRESET: return "connection reset by the server"
            case ENETUNREACH, EHOSTUNREACH: return "the host is unreachable"
            default: return String(cString: strerror(error.errnoCode))
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout: return "timed out connecting"
            case .ioOnClosedChannel, .alreadyClosed, .eof: return "the connection closed"
            default: break
            }
        }
        if error is HTTPParserError { return "the answer is not valid HTTP/1.1" }
        return String(describing: error)
    }
}

/// Records TLS errors as they pass (the HTTP handlers after it see them only as a closed connection).
private final class ErrorRecorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let watch: ConnectionWatch

    init(watch: ConnectionWatch) { self.watch = watch }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        watch.record(error)
        context.fireErrorCaught(error)
    }
}

extension Origin {
    /// `true` when the host is an IP address literal (no SNI for those; the certificate must name the address).
    var isAddressLiteral: Bool {
        host.contains(":") || host.split(separator: ".").count == 4 && host.split(separator: ".").allSatisfy { UInt8($0) != nil }
    }
}

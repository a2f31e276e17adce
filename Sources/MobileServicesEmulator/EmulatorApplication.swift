import Hummingbird
import Logging

/// Builds the emulator as a Hummingbird application.
///
/// Run it with `try await app.runService()` (stops on SIGINT/SIGTERM), or in tests with HummingbirdTesting:
/// `try await app.test(.router) { client in ... }` (in process) or `.live` (a real socket on loopback).
///
/// - Parameters:
///   - configuration: application id, users, admin token, body limit.
///   - state: registrations and request counters; pass your own to inspect or change them from a test
///     (e.g. ``EmulatorState/removeConnection(_:)``).
///   - host: address to bind; `127.0.0.1` by default.
///   - port: port to bind; 0 picks a free one, reported to `onListening`.
///   - requestLogger: called once per answered request with `METHOD path status` (appcids in paths are
///     replaced by `<appcid>`; no headers, bodies or query strings are ever included).
///   - onListening: called once the server listens, with the bound host and port.
public func buildEmulatorApplication(
    configuration: EmulatorConfiguration,
    state: EmulatorState = EmulatorState(),
    host: String = "127.0.0.1",
    port: Int = 0,
    requestLogger: (@Sendable (String) -> Void)? = nil,
    onListening: @escaping @Sendable (_ host: String, _ port: Int) async -> Void = { _, _ in }
) -> some ApplicationProtocol {
    // Hummingbird's own messages go to stderr and only from warning up: stdout carries the one "listening on" line.
    var logger = Logger(label: "mobile-services-emulator") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = .warning
    return Application(
        responder: EmulatorResponder(configuration: configuration, state: state, requestLogger: requestLogger),
        configuration: ApplicationConfiguration(
            address: .hostname(host, port: port),
            serverName: "mobile-services-emulator"
        ),
        onServerRunning: { channel in
            await onListening(host, channel.localAddress?.port ?? port)
        },
        logger: logger
    )
}

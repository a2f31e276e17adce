import ArgumentParser
import Foundation
import MobileServicesEmulator
#if canImport(Glibc)
import Glibc
#endif

/// `mobile-services-emulator --port 0 --app-id com.example.demo --users-file users.txt`
///
/// stdout: exactly one line, `listening on http://HOST:PORT`, once the server accepts connections.
/// stderr: one line per request, `METHOD path status`, and errors. Passwords, tokens and headers are never printed.
@main
enum EmulatorMain {
    static func main() async {
        // No crash report that prints memory (it holds the users' passwords): the signals the Swift runtime's
        // backtracer takes get their default action back, as ProcessHardening does for the vault's binaries
        // (this target depends on nothing of ours but the wire format).
        for signal in [SIGQUIT, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV, SIGTRAP, SIGSYS] {
            _ = Glibc.signal(signal, SIG_DFL)
        }
        await EmulatorCommand.main()
    }
}

struct EmulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mobile-services-emulator",
        abstract: "A loopback emulator of the mobile-services registration API and its proxied OData back end."
    )

    @Option(help: "Address to bind. The administrator API without --admin-token-file needs a loopback address.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to bind; 0 picks a free port (read it from the 'listening on' line).")
    var port: Int = 0

    @Option(name: .customLong("app-id"), help: "The application id served, e.g. com.example.demo.")
    var appId: String

    @Option(name: .customLong("users-file"), help: "File of 'user:password' lines ('#' comments and blank lines ignored).")
    var usersFile: String

    @Option(
        name: .customLong("admin-token-file"),
        help: "File holding the bearer token required by /admin/... (without it, /admin answers loopback clients only).")
    var adminTokenFile: String?

    @Flag(name: .customLong("quiet"), help: "Do not log requests to stderr.")
    var quiet = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if adminTokenFile == nil, !isLoopbackHost(host) {
            throw ValidationError("binding \(host) needs --admin-token-file: without a token the administrator API is for loopback only")
        }
    }

    func run() async throws {
        let users: [String: String]
        do {
            users = try UsersFile.load(path: usersFile)
        } catch {
            throw StartupError(message: "\(usersFile): \(error)")
        }
        var adminToken: String?
        if let adminTokenFile {
            guard let data = FileManager.default.contents(atPath: adminTokenFile),
                let text = String(data: data, encoding: .utf8)
            else { throw StartupError(message: "cannot read the admin token file \(adminTokenFile)") }
            adminToken = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let configuration: EmulatorConfiguration
        do {
            configuration = try EmulatorConfiguration(appId: appId, users: users, adminToken: adminToken)
        } catch {
            throw StartupError(message: error.description)
        }
        let logger: (@Sendable (String) -> Void)? = quiet ? nil : { @Sendable line in Self.write(line + "\n", to: .standardError) }
        let app = buildEmulatorApplication(
            configuration: configuration,
            host: host,
            port: port,
            requestLogger: logger,
            onListening: { host, port in
                let shownHost = host.contains(":") ? "[\(host)]" : host
                // FileHandle writes are unbuffered: the line is out as soon as this returns.
                Self.write("listening on http://\(shownHost):\(port)\n", to: .standardOutput)
            }
        )
        try await app.runService()
    }

    static func write(_ text: String, to handle: FileHandle) {
        handle.write(Data(text.utf8))
    }
}

/// A startup failure: ArgumentParser prints `Error: <message>` and the process exits with status 1.
struct StartupError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

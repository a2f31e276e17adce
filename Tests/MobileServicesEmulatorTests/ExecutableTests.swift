import Foundation
import Synchronization
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing
import VaultTestSupport

/// Runs the built `mobile-services-emulator` binary as a real process.
@Suite("The mobile-services-emulator executable", .serialized)
struct ExecutableTests {
    @Test("--port 0 prints exactly one 'listening on' line, serves on that port, logs without secrets, stops on SIGTERM")
    func listensAndServes() async throws {
        let binary = try emulatorBinary()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let usersFile = directory.appendingPathComponent("users.txt")
        try "# demo users\nalice:s3cret:with-colon\n\nbob:hunter2\n".write(to: usersFile, atomically: true, encoding: .utf8)

        let running = try RunningProcess(binary, arguments: ["--port", "0", "--app-id", "com.example.demo", "--users-file", usersFile.path])
        defer { running.stop() }

        let firstLine = try #require(try await running.firstStdoutLine(timeout: .seconds(60)), "no 'listening on' line on stdout")
        let prefix = "listening on http://127.0.0.1:"
        #expect(firstLine.hasPrefix(prefix), "unexpected first line: \(firstLine)")
        let port = try #require(Int(firstLine.dropFirst(prefix.count)), "no port in: \(firstLine)")
        #expect(port > 0 && port < 65536)

        // Talk to it over a real socket.
        let client = TestClient(host: "127.0.0.1", port: port)
        client.connect()
        var postHeaders = HTTPFields()
        postHeaders[.authorization] = "Basic " + Data("alice:s3cret:with-colon".utf8).base64EncodedString()
        postHeaders[.contentType] = "application/json"
        let created = try await client.post(
            "/odata/applications/latest/com.example.demo/Connections", headers: postHeaders,
            body: ByteBuffer(string: #"{"DeviceType":"x86_64"}"#))
        #expect(created.status == .created)
        let location = try #require(created.headers[.location])
        #expect(location.hasPrefix("http://"), "\(location)")
        #expect(location.contains("/odata/applications/latest/com.example.demo/Connections('"), "\(location)")
        let anonymous = try await client.get("/com.example.demo")
        #expect(anonymous.status == .unauthorized)
        let stats = try await client.get("/admin/stats")
        #expect(stats.status == .ok)
        #expect(String(buffer: stats.body ?? ByteBuffer()).contains(#""connections.create":{"201":1}"#))
        try await client.shutdown()

        let status = running.terminateAndWait()
        #expect(status == 0, "exit status after SIGTERM")
        let stdout = running.remainingStdout()
        #expect(stdout.isEmpty, "stdout must carry only the one line, got more: \(stdout)")
        let stderr = running.stderrText()
        #expect(stderr.contains("POST /odata/applications/latest/com.example.demo/Connections 201"))
        #expect(stderr.contains("GET /com.example.demo 401"))
        #expect(!stderr.contains("s3cret") && !stderr.contains("hunter2") && !stderr.contains("Basic "))
    }

    @Test("a malformed users file stops startup with the line number and a non-zero exit")
    func malformedUsersFile() async throws {
        let binary = try emulatorBinary()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let usersFile = directory.appendingPathComponent("users.txt")
        try "alice:topsecret\n# comment\nbob-without-password\n".write(to: usersFile, atomically: true, encoding: .utf8)

        let running = try RunningProcess(binary, arguments: ["--port", "0", "--app-id", "com.example.demo", "--users-file", usersFile.path])
        defer { running.stop() }
        let status = running.waitForExit()
        #expect(status != 0)
        let stderr = running.stderrText()
        #expect(stderr.contains("line 3"), "stderr: \(stderr)")
        #expect(!stderr.contains("topsecret"))
        #expect(running.remainingStdout().isEmpty)
    }

    @Test("a non-loopback --host without --admin-token-file is refused")
    func nonLoopbackNeedsToken() async throws {
        let binary = try emulatorBinary()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let usersFile = directory.appendingPathComponent("users.txt")
        try "alice:pw\n".write(to: usersFile, atomically: true, encoding: .utf8)
        let running = try RunningProcess(
            binary, arguments: ["--host", "0.0.0.0", "--port", "0", "--app-id", "com.example.demo", "--users-file", usersFile.path])
        defer { running.stop() }
        #expect(running.waitForExit() != 0)
        #expect(running.stderrText().contains("--admin-token-file"))
    }

    @Test("with --admin-token-file, /admin needs the bearer token")
    func adminTokenFile() async throws {
        let binary = try emulatorBinary()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let usersFile = directory.appendingPathComponent("users.txt")
        try "alice:pw\n".write(to: usersFile, atomically: true, encoding: .utf8)
        let tokenFile = directory.appendingPathComponent("admin-token")
        try "tok-42\n".write(to: tokenFile, atomically: true, encoding: .utf8)

        let running = try RunningProcess(
            binary,
            arguments: ["--port", "0", "--app-id", "com.example.demo", "--users-file", usersFile.path, "--admin-token-file", tokenFile.path])
        defer { running.stop() }
        let line = try #require(try await running.firstStdoutLine(timeout: .seconds(60)))
        let port = try #require(Int(line.split(separator: ":").last ?? ""))
        let client = TestClient(host: "127.0.0.1", port: port)
        client.connect()
        #expect(try await client.get("/admin/connections").status == .unauthorized)
        var good = HTTPFields()
        good[.authorization] = "Bearer tok-42"
        #expect(try await client.get("/admin/connections", headers: good).status == .ok)
        try await client.shutdown()
        #expect(!running.stderrText().contains("tok-42"))
    }
}

// MARK: - Finding and running the binary

/// The `mobile-services-emulator` built with the tests: `$MOBILE_SERVICES_EMULATOR` if set, else next to the test
/// bundle (SwiftPM puts every product of the package in the same build directory).
func emulatorBinary(sourceLocation: SourceLocation = #_sourceLocation) throws -> URL {
    let fileManager = FileManager.default
    var candidates: [URL] = []
    if let override = ProcessInfo.processInfo.environment["MOBILE_SERVICES_EMULATOR"] {
        candidates.append(URL(fileURLWithPath: override))
    }
    var directories = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
    if let executable = Bundle.main.executableURL { directories.append(executable.deletingLastPathComponent()) }
    for directory in directories {
        // On macOS the test bundle is Foo.xctest/Contents/MacOS/Foo: look a few levels up too.
        var current = directory
        for _ in 0..<4 {
            candidates.append(current.appendingPathComponent("mobile-services-emulator"))
            current = current.deletingLastPathComponent()
        }
    }
    if let found = candidates.first(where: { fileManager.isExecutableFile(atPath: $0.path) }) {
        return found
    }
    Issue.record(
        """
        mobile-services-emulator binary not found (looked at \(candidates.map(\.path))). Build it first \
        (`swift build --product mobile-services-emulator` with the same --scratch-path as the tests) or set \
        MOBILE_SERVICES_EMULATOR to its path.
        """, sourceLocation: sourceLocation)
    throw BinaryNotFound()
}

struct BinaryNotFound: Error {}

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("emu-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A child process with its stdout and stderr captured.
final class RunningProcess: Sendable {
    private struct Output {
        var stdoutBuffer = Data()
        var stderrBuffer = Data()
        var stdoutClosed = false
        var stderrClosed = false
    }

    private let process = Process()
    private let stdout = Pipe()
    private let stderr = Pipe()
    private let output = Mutex(Output())

    init(_ executable: URL, arguments: [String]) throws {
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        stdout.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            self?.output.withLock {
                if data.isEmpty { $0.stdoutClosed = true } else { $0.stdoutBuffer.append(data) }
            }
            if data.isEmpty { handle.readabilityHandler = nil }
        }
        stderr.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            self?.output.withLock {
                if data.isEmpty { $0.stderrClosed = true } else { $0.stderrBuffer.append(data) }
            }
            if data.isEmpty { handle.readabilityHandler = nil }
        }
        try process.run()
    }

    /// The first complete line on stdout (consumed), or nil if stdout closed or the time ran out first.
    func firstStdoutLine(timeout: Duration) async throws -> String? {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            let line: String?? = output.withLock { output in
                if let newline = output.stdoutBuffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: output.stdoutBuffer[output.stdoutBuffer.startIndex..<newline], as: UTF8.self)
                    output.stdoutBuffer.removeSubrange(output.stdoutBuffer.startIndex...newline)
                    return .some(line)
                }
                return output.stdoutClosed ? .some(nil) : nil
            }
            if let line { return line }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// SIGTERM, then the exit status.
    func terminateAndWait() -> Int32 {
        if process.isRunning { process.terminate() }
        return waitForExit()
    }

    /// Waits (at most 60 s) for the process to exit on its own, then lets the pipes drain.
    func waitForExit() -> Int32 {
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            stop()
            return -1
        }
        let drained = Date().addingTimeInterval(5)
        while Date() < drained && !(output.withLock { $0.stdoutClosed && $0.stderrClosed }) { Thread.sleep(forTimeInterval: 0.02) }
        return process.terminationStatus
    }

    func remainingStdout() -> String { output.withLock { String(decoding: $0.stdoutBuffer, as: UTF8.self) } }
    func stderrText() -> String { output.withLock { String(decoding: $0.stderrBuffer, as: UTF8.self) } }

    /// Kills the process if it is still running (for `defer`).
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
    }
}

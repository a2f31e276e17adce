import Foundation
import MobileServices
import MobileServicesEmulator
import Testing
import VaultTestSupport
import VaultAuth
import VaultCore

let testAppId = "com.example.demo"
let testUsers = ["alice": "s3cret:with-colon", "bob": "hunter2"]
let testDevice = DeviceInfo(deviceType: "x86_64", deviceModel: "Debian GNU/Linux 12", userName: "alice@testhost")
/// Plain http to the loopback emulator needs the authenticator's explicit opt-in.
let loopbackOptions = KeystoreAuthenticator.Options(allowInsecureLoopbackHTTP: true)

/// The real emulator (Hummingbird) on 127.0.0.1 with a free port, in this process, so the test can read and
/// change its state (request counters, the administrator's delete).
final class Emulator: Sendable {
    let state: EmulatorState
    let port: Int
    private let task: Task<Void, Error>

    private init(state: EmulatorState, port: Int, task: Task<Void, Error>) {
        self.state = state
        self.port = port
        self.task = task
    }

    var server: String { "http://127.0.0.1:\(port)" }
    var configuration: MobileServicesConfiguration {
        get throws { try MobileServicesConfiguration(server: server, applicationId: testAppId) }
    }
    /// The protection space the emulator's challenge names.
    var space: ProtectionSpace { ProtectionSpace(origin: Origin(scheme: "http", host: "127.0.0.1", port: port), realm: "mobile-services") }

    static func start() async throws -> Emulator {
        let state = EmulatorState()
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let app = buildEmulatorApplication(
            configuration: try EmulatorConfiguration(appId: testAppId, users: testUsers), state: state,
            onListening: { _, port in
                continuation.yield(port)
                continuation.finish()
            })
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        // The first port, or nothing if the server died; bounded by a timeout.
        let port = await withTaskGroup(of: Int?.self) { group in
            group.addTask { await ports.first { _ in true } }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                continuation.finish()
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let port else {
            task.cancel()
            throw TestFailure("the emulator did not start listening")
        }
        return Emulator(state: state, port: port, task: task)
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    /// Total requests answered so far, all routes.
    var totalRequests: Int { state.requestCounts().values.reduce(0) { $0 + $1.values.reduce(0, +) } }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` with a fresh emulator, stopped afterwards on every path.
func withEmulator<T>(_ body: (Emulator) async throws -> T) async throws -> T {
    let emulator = try await Emulator.start()
    do {
        let result = try await body(emulator)
        await emulator.stop()
        return result
    } catch {
        await emulator.stop()
        throw error
    }
}

/// A private temporary directory with a vault path; removed at deinit.
final class TestVault: @unchecked Sendable {
    let directory: String
    let path: String
    let passphrase = SecureBytes(string: "correct horse battery staple")

    init() throws {
        directory = try makePrivateDirectory(prefix: "ms-test")
        path = directory + "/test.vault"
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// A new store object on the vault (a new "process start"), not open.
    func makeStore() -> SecureKeyValueStore {
        SecureKeyValueStore(path: path, options: .insecureForTesting)
    }

    /// A new store object, opened (the vault is created if missing).
    func openStore() throws -> SecureKeyValueStore {
        let store = makeStore()
        try store.open(with: passphrase)
        return store
    }

    /// The vault file's bytes.
    func bytes() throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }
}

/// A scripted prompt that records each question.
final class RecordingPrompt: @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [Credential?]
    private var _reasons: [CredentialPromptReason] = []

    /// `answers` are given in order; once used up, the prompt declines (`nil`).
    init(_ answers: [Credential?] = []) {
        self.answers = answers
    }

    convenience init(username: String, password: String) {
        self.init([Credential(username: username, password: password)])
    }

    var reasons: [CredentialPromptReason] { lock.withLock { _reasons } }
    var count: Int { reasons.count }

    var prompt: ClosureCredentialPrompt {
        ClosureCredentialPrompt { _, reason, _ in
            self.lock.withLock {
                self._reasons.append(reason)
                return self.answers.isEmpty ? nil : self.answers.removeFirst()
            }
        }
    }
}

func makeClient(
    _ emulator: Emulator, store: SecureKeyValueStore, prompt: RecordingPrompt?,
    options: KeystoreAuthenticator.Options = loopbackOptions
) throws -> MobileServicesClient {
    MobileServicesClient(
        configuration: try emulator.configuration, store: store, prompt: prompt?.prompt, options: options,
        deviceInfo: testDevice, timeout: 10)
}

/// The fixed keys this feature writes, for "nothing stored" checks (with ``noCredentialStored(in:)``).
let registrationKeys = [
    Keys.applicationConnectionId, Keys.primary, Keys.legacyUsername, Keys.legacyPassword, Keys.legacySpace,
    Keys.server, Keys.applicationId,
]

/// A loopback port nobody answers on, for as long as the value lives: the socket is bound but never listens, so a
/// connection is refused, and no server started by a concurrent test can be given the same port (a port found free
/// and closed again was handed to another test's server that answered 503).
final class RefusingLoopbackPort {
    let port: Int
    private let fd: Int32

    init() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = self.fd
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(fd, generic, length) == 0 && getsockname(fd, generic, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw TestFailure("bind failed")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}

/// A one-route HTTP server (Python's `http.server`) for answers the emulator never gives: every request without
/// `Authorization` gets a 401 Basic challenge (realm `mobile-services`); every other request gets `status` with
/// `body`. It counts requests.
final class ScriptedServer: @unchecked Sendable {
    private let python: PythonServer
    var port: Int { python.port }

    init(status: Int, body: Data) throws {
        python = try PythonServer(.scripted(status: status, body: body))
    }

    var server: String { python.origin }

    func stop() { python.stop() }
}

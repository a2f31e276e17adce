import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import VaultCore
@testable import VaultAuth

struct TimedOut: Error, CustomStringConvertible {
    let seconds: Double
    var description: String { "timed out after \(seconds) s (a hang)" }
}

/// Runs `body`, failing with ``TimedOut`` instead of hanging when it takes longer than `seconds`.
func withTimeout<T: Sendable>(
    _ seconds: Double, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw TimedOut(seconds: seconds)
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// A temporary directory removed when the value is released.
final class TemporaryDirectory: Sendable {
    let path: String
    init() throws {
        let template = NSTemporaryDirectory() + "vaultauth-tests-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let result = mkdtemp(&bytes) else { throw POSIXError(.EIO) }
        path = String(cString: result)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A prompt that answers from a list and counts how often it was asked.
final class ScriptedPrompt: CredentialPrompting, @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [Credential?]
    private var _calls: [(ProtectionSpace, CredentialPromptReason, String?)] = []

    init(_ answers: [Credential?]) { self.answers = answers }

    var count: Int { lock.withLock { _calls.count } }
    var reasons: [CredentialPromptReason] { lock.withLock { _calls.map(\.1) } }
    var suggestedUsernames: [String?] { lock.withLock { _calls.map(\.2) } }
    var spaces: [ProtectionSpace] { lock.withLock { _calls.map(\.0) } }

    func credential(
        for space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) async throws -> Credential? {
        lock.withLock {
            _calls.append((space, reason, suggestedUsername))
            return answers.isEmpty ? nil : answers.removeFirst()
        }
    }
}

func password(of credential: Credential?) -> String? { credential?.password.stringValue }

/// A vault in a temporary directory with the cheap test KDF.
func makeTestVault(in directory: TemporaryDirectory, name: String = "auth.vault") throws -> SecureKeyValueStore {
    let store = SecureKeyValueStore(path: directory.path + "/" + name, options: .insecureForTesting)
    try store.open(with: SecureBytes(string: "test passphrase"))
    return store
}

/// Runs a command to completion; returns its exit status and combined output.
@discardableResult
func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (Int32, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}

/// The full path of `name` on PATH (plus the sbin directories), or nil.
func which(_ name: String) -> String? {
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin:/usr/local/sbin"
    for directory in path.split(separator: ":") {
        let candidate = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// A free TCP port on 127.0.0.1 (bound to port 0, read back, closed).
func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

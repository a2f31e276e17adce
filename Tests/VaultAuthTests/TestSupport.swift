import Foundation
import Testing
import VaultTestSupport
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

/// VaultTestSupport's, for every file of this target (without an import in each).
typealias TemporaryDirectory = VaultTestSupport.TemporaryDirectory

func password(of credential: Credential?) -> String? { credential?.password.stringValue }

/// A vault in a temporary directory with the cheap test KDF.
func makeTestVault(in directory: TemporaryDirectory, name: String = "auth.vault") throws -> SecureKeyValueStore {
    let store = SecureKeyValueStore(path: directory.path + "/" + name, options: .insecureForTesting)
    try store.open(with: SecureBytes(string: "test passphrase"))
    return store
}

import Foundation
import Testing
import VaultCore
import VaultSodium
import VaultTestSupport

@testable import VaultAge

/// Helpers of the VaultAge tests: hex, temporary directories, the `age` tools.
enum AgeTestSupport {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    /// `age` and `age-keygen` (Debian's `age` package: `scripts/install-deps --test`), or nil.
    static let age = findTool("age")
    static let ageKeygen = findTool("age-keygen")
    static var ageIsInstalled: Bool { age != nil && ageKeygen != nil }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    static func bytes(hex: String) -> [UInt8] { CCTVAgeVector.bytes(hex: hex) }

    static func sha256(_ bytes: SecureBytes) -> [UInt8] {
        bytes.withUnsafeBytes { Sodium.sha256($0) }
    }

    /// A new empty directory under the system's temporary directory, removed by `body`'s end.
    static func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vault-age-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try body(path)
    }

    /// Deterministic bytes (not random: a failure can be replayed).
    static func pattern(count: Int, seed: UInt8 = 0) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ ($0 >> 8)) }
    }
}

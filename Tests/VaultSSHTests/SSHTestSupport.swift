import Foundation
import Testing
import VaultTestSupport

/// OpenSSH's tools, the oracles of these tests. Absent on a user's clone: the tests that need them are skipped
/// saying so; under CI (`CI=true`) they run and the absence fails.
enum OpenSSH {
    static let keygen = findTool("ssh-keygen")
    static var runs: Bool { keygen != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    /// A directory of its own, removed at the end.
    final class Directory {
        let path: String
        init() throws {
            path = NSTemporaryDirectory() + "vault-ssh-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        func read(_ name: String) throws -> String { try String(contentsOfFile: path + "/" + name, encoding: .utf8) }
        func write(_ name: String, _ text: String) throws {
            try text.write(toFile: path + "/" + name, atomically: false, encoding: .utf8)
            chmod(path + "/" + name, 0o600)
        }
    }

    /// `ssh-keygen ARGS`, which must succeed; its output.
    @discardableResult
    static func keygen(_ arguments: [String]) throws -> String {
        let tool = try #require(keygen, "ssh-keygen is not on PATH (CI=true): scripts/install-deps --test installs openssh-client")
        let (status, output) = try runTool(tool, arguments)
        try #require(status == 0, "ssh-keygen \(arguments.joined(separator: " ")): \(output)")
        return output
    }

    /// A new key file `name` in `directory` (and its `.pub`), made by ssh-keygen.
    static func newKey(_ type: String, in directory: Directory, name: String = "id", passphrase: String = "", comment: String = "alice@example", extra: [String] = []) throws -> String {
        let path = directory.path + "/" + name
        let bits = type == "rsa" ? ["-b", "2048"] : []
        try keygen(["-q", "-t", type] + bits + ["-N", passphrase, "-C", comment, "-f", path] + extra)
        return path
    }
}

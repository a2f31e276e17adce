import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A fresh private directory (`mkdtemp`, mode 0700) under `root` (the process's temporary directory by default),
/// named `prefix-XXXXXX`; its path (as `mkdtemp` made it: no `//`). It is not removed: see ``TemporaryDirectory``
/// for one that is.
public func makePrivateDirectory(prefix: String, root: String = NSTemporaryDirectory()) throws -> String {
    let base = root.hasSuffix("/") ? String(root.dropLast()) : root
    var template = Array((base + "/" + prefix + "-XXXXXX").utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
    return String(cString: made)
}

/// A fresh private directory (0700) for one test, removed with everything in it when the value goes away (its
/// permissions put back first, in case the test took them away). The one helper the test targets share.
public final class TemporaryDirectory: Sendable {
    public let path: String

    /// - Precondition: `mkdtemp` succeeds (a test cannot go on without its directory).
    public init(prefix: String = "vault-tests") {
        do {
            path = try makePrivateDirectory(prefix: prefix)
        } catch {
            preconditionFailure("mkdtemp failed: \(error)")
        }
    }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// The names in the directory, sorted.
    public func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    deinit {
        _ = chmod(path, 0o700)
        try? FileManager.default.removeItem(atPath: path)
    }
}

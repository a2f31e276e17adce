import Foundation
import VaultTestSupport
import Testing

@testable import VaultCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Shared helpers for the VaultCore tests. Every vault lives in a fresh directory (VaultTestSupport's
// `TemporaryDirectory`: `mkdtemp`, mode 0700)
// and uses the explicit test hook (`Options.insecureForTesting`: 1 pass, 8 KiB) unless a test is about the
// real presets.

/// VaultTestSupport's, for every file of this target (without an import in each).
typealias TemporaryDirectory = VaultTestSupport.TemporaryDirectory

/// The passphrase most tests use, and a wrong one.
let testPassphrase = SecureBytes(string: "correct horse battery staple")
let otherPassphrase = SecureBytes(string: "correct horse battery stapler")

/// A store with the cheap test KDF.
func testStore(_ path: String, lockTimeoutSeconds: Double? = nil) -> FormatOneStore {
    var options = VaultStoreOptions.insecureForTesting
    if let lockTimeoutSeconds { options.lockTimeoutSeconds = lockTimeoutSeconds }
    return FormatOneStore(path: path, options: options)
}

/// Creates a vault at `path` with `entries` (cheap KDF) and closes it.
@discardableResult
func makeVault(_ path: String, entries: [(String, String)] = []) throws -> FormatOneStore {
    let store = testStore(path)
    try store.create(with: testPassphrase)
    if !entries.isEmpty {
        try store.update { changes in
            for (name, value) in entries { try changes.put(value, forKey: name) }
        }
    }
    store.close()
    return store
}

/// Opens `path` with a fresh store and returns the error it throws, or `nil` if it opened.
func openError(
    _ path: String, passphrase: SecureBytes = testPassphrase,
    options: VaultStoreOptions = .insecureForTesting
) -> VaultError? {
    let store = FormatOneStore(path: path, options: options)
    do {
        try store.open(with: passphrase, createIfMissing: false)
        store.close()
        return nil
    } catch let error as VaultError {
        return error
    } catch {
        Issue.record("not a VaultError: \(type(of: error))")
        return nil
    }
}

/// The whole file at `path`.
func readBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Replaces the file at `path` with `bytes`, mode 0600 (the vault's own mode).
func writeBytes(_ bytes: [UInt8], to path: String) throws {
    unlink(path)
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw VaultError.io(operation: "open", path: path, errno: errno) }
    defer { close(fd) }
    guard fchmod(fd, 0o600) == 0 else { throw VaultError.io(operation: "fchmod", path: path, errno: errno) }
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
        guard n > 0 else { throw VaultError.io(operation: "write", path: path, errno: errno) }
        offset += n
    }
}

/// `st_mode & 0o7777` of `path` (not following a final symlink).
func permissions(_ path: String) -> mode_t {
    var info = stat()
    guard lstat(path, &info) == 0 else { return 0o177777 }
    return info.st_mode & 0o7777
}

/// Stores a little-endian integer at `offset` of `bytes`.
func patch<T: FixedWidthInteger>(_ bytes: inout [UInt8], at offset: Int, _ value: T) {
    withUnsafeBytes(of: value.littleEndian) { raw in
        for (index, byte) in raw.enumerated() { bytes[offset + index] = byte }
    }
}

/// Reads a little-endian integer at `offset` of `bytes`.
func load<T: FixedWidthInteger>(_ bytes: [UInt8], at offset: Int, as: T.Type) -> T {
    var value = T.zero
    withUnsafeMutableBytes(of: &value) { raw in
        for index in 0..<raw.count { raw[index] = bytes[offset + index] }
    }
    return T(littleEndian: value)
}

/// Whether `needle` occurs anywhere in `haystack`.
func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return needle.isEmpty }
    for start in 0...(haystack.count - needle.count)
    where haystack[start] == needle[0] && haystack[start..<start + needle.count].elementsEqual(needle) {
        return true
    }
    return false
}

/// Byte offsets of the fields of a v1 file (docs/FORMAT.md), written out here rather than taken from the
/// library so that a layout change fails the tests.
enum Layout {
    static let magic = 0..<8
    static let version = 8
    static let kdf = 10
    static let flags = 11
    static let opsLimit = 12
    static let memLimit = 20
    static let salt = 28..<44
    static let generation = 44
    static let keyNonce = 52..<76
    static let wrappedKey = 76..<124
    static let header = 0..<124
    static let bodyNonce = 124..<148
    static let bodyStart = 148
    /// An empty vault: header, body nonce, MAC and one 256-byte padding block.
    static let emptyFileByteCount = 420
}

/// Runs `executable` with `arguments`, returning exit status, stdout and stderr.
func run(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil
) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Read both pipes to the end before waiting, so a large output cannot block the child.
    let group = DispatchGroup()
    nonisolated(unsafe) var errData = Data()
    group.enter()
    DispatchQueue.global().async {
        errData = err.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitForExit()
    return (
        process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self)
    )
}

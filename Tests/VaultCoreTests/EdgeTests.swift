import Foundation
import Testing

@testable import VaultCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The edges of the format's limits (issue 11, items 8 and 11): files larger than a vault can be, the
/// largest value, the last generation.
@Suite("Format limits at their edges")
struct FormatLimitEdgeTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("test.vault") }

    /// A valid vault's first 148 bytes (header and body nonce), then the file extended sparsely to `size`.
    private func sparseVault(size: off_t) throws {
        try makeVault(path)
        let prefix = Array(try readBytes(path)[0..<148])
        try writeBytes(prefix, to: path)
        #expect(truncate(path, size) == 0, "truncate: errno \(errno)")
    }

    @Test("a file larger than a vault can be (1 TiB, 4 GiB sparse) is refused as corrupt before it is read",
        arguments: [off_t(1) << 40, off_t(4) << 30, off_t(VaultFormat.maximumFileByteCount + 1)])
    func tooLargeFileRefusedAtOnce(_ size: off_t) throws {
        try sparseVault(size: size)
        let start = Date()
        let error = openError(path)
        #expect(Date().timeIntervalSince(start) < 1, "open took \(Date().timeIntervalSince(start)) s")
        #expect(error == .corrupt(path: path, reason: .tooLarge(byteCount: Int(size))))
        #expect(Corruption.tooLarge(byteCount: 1).code == "too_large")
    }

    @Test("a huge file without the magic is refused as bad magic, not read")
    func tooLargeWithoutMagic() throws {
        try writeBytes(Array(repeating: 0x41, count: 148), to: path)
        #expect(truncate(path, off_t(1) << 40) == 0)
        #expect(openError(path) == .corrupt(path: path, reason: .badMagic))
    }

    @Test("the header parser refuses bytes longer than the maximum file size")
    func parserRefusesOversizedBuffer() throws {
        try makeVault(path)
        var file = try readBytes(path)
        file += [UInt8](repeating: 0, count: VaultFormat.maximumFileByteCount + 1 - file.count)
        #expect(throws: VaultError.corrupt(path: path, reason: .tooLarge(byteCount: file.count))) {
            _ = try VaultEnvelope.parseHeader(file, path: path, policy: VaultStoreOptions.insecureForTesting.kdfPolicy)
        }
    }

    @Test("a value of exactly the maximum size (67,108,864 bytes) is stored and read back; one more is refused")
    func maximumValue() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        let value = [UInt8](repeating: 0x5A, count: VaultFormat.maximumValueByteCount)
        try store.put(value, forKey: "big")
        #expect(throws: VaultError.valueTooLarge(key: "bigger", byteCount: value.count + 1)) {
            try store.put(value + [0], forKey: "bigger")
        }
        store.close()
        let reopened = testStore(path)
        try reopened.open(with: testPassphrase)
        #expect(try reopened.getBytes("big")?.count == VaultFormat.maximumValueByteCount)
    }

    /// About two minutes and 4 GB of memory (15 values of 64 MiB): run with VAULT_LARGE_TESTS=1.
    @Test("a write that would make the vault larger than the maximum is refused, nothing written",
        .enabled(if: ProcessInfo.processInfo.environment["VAULT_LARGE_TESTS"] == "1"))
    func vaultTooLarge() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        let value = SecureBytes([UInt8](repeating: 0x5A, count: VaultFormat.maximumValueByteCount))
        let fits = VaultFormat.maximumPlaintextByteCount / VaultFormat.maximumValueByteCount - 1
        try store.update { changes in
            for index in 0..<fits { try changes.put(value, forKey: "v\(index)") }
        }
        let before = store.generation
        let error = #expect(throws: VaultError.self) {
            try store.update { changes in
                try changes.put(value, forKey: "v\(fits)")
                try changes.put(value, forKey: "v\(fits + 1)")
            }
        }
        guard case .vaultTooLarge(let errorPath, let count)? = error else {
            Issue.record("not vaultTooLarge: \(String(describing: error))")
            return
        }
        #expect(errorPath == path && count > VaultFormat.maximumFileByteCount)
        #expect(store.generation == before)
        store.close()
        #expect(openError(path) == nil)
    }

    @Test("a vault at generation 2^64-1: a write throws generationExhausted (no trap), the vault still opens")
    func generationExhausted() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("v", forKey: "k")
        // Written through the store's own write path, so the header hash and the body agree.
        try store.modify { current, regions in
            var header = current.header
            header.generation = .max
            return try store.rewrite(current, as: header, applying: [], values: nil, regions: &regions)
        }
        #expect(store.generation == UInt64.max)
        #expect(throws: VaultError.generationExhausted(path: path)) { try store.put("w", forKey: "k") }
        #expect(throws: VaultError.generationExhausted(path: path)) {
            try store.changePassphrase(to: otherPassphrase)
        }
        store.close()
        let reopened = testStore(path)
        try reopened.open(with: testPassphrase)
        #expect(try reopened.getString("k") == "v")
        #expect(reopened.generation == UInt64.max)
        #expect(throws: VaultError.generationExhausted(path: path)) { try reopened.remove("k") }
    }
}

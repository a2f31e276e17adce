import Foundation
import Testing

@testable import VaultCore

/// Vaults written by the library, read by `Tests/Interop/read_vault.py`: an independent reader written from
/// docs/FORMAT.md alone with PyNaCl.
@Suite("Interoperability with the Python reader")
struct InteropTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("interop.vault") }

    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/read_vault.py").path

    /// Makes sure PyNaCl is importable, installing it from PyPI once if it is not.
    static let pythonReady: Bool = {
        if (try? run("/usr/bin/env", ["python3", "-c", "import nacl"]))?.status == 0 { return true }
        _ = try? run("/usr/bin/env", ["python3", "-m", "pip", "install", "--quiet", "pynacl"])
        return (try? run("/usr/bin/env", ["python3", "-c", "import nacl"]))?.status == 0
    }()

    /// Runs the reader on `vault` with `passphrase` in `VAULT_PASSPHRASE` (never on the command line).
    func readVault(
        _ vault: String, passphrase: String, testHook: Bool = true
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        try #require(Self.pythonReady, "python3 with PyNaCl is needed")
        var environment = ProcessInfo.processInfo.environment
        environment["VAULT_PASSPHRASE"] = passphrase
        environment["VAULT_TESTING_INSECURE_KDF"] = testHook ? "1" : nil
        return try run("/usr/bin/env", ["python3", Self.script, vault], environment: environment)
    }

    struct Account: Codable {
        var user: String
        var port: Int
    }

    @Test("the reader prints exactly the entries the library wrote: text, unicode names, binary, empty, JSON")
    func readsLibraryVault() throws {
        let everyByte = (0...255).map { UInt8($0) }
        let store = testStore(path)
        try store.create(with: SecureBytes(string: "pässphrase ✓"))
        try store.update { changes in
            try changes.put("alice", forKey: "username")
            try changes.put("ünïcödé ✓", forKey: "pässwörd 🔑")
            try changes.put(SecureBytes(everyByte), forKey: "binary")
            try changes.put(SecureBytes([]), forKey: "empty")
            try changes.put("line1\nline2", forKey: #"quote"and\backslash"#)
            try changes.put("to be removed", forKey: "removed")
        }
        try store.putJSON(Account(user: "alice", port: 8443), forKey: "json")
        try store.put("overwritten", forKey: "username")
        #expect(try store.remove("removed"))
        try store.put(String(repeating: "x", count: 1000), forKey: "long")

        let base64 = Data(everyByte).base64EncodedString()
        let long = String(repeating: "x", count: 1000)
        let expected = #"{"binary": {"base64": ""# + base64 + #""}, "empty": "", "json": "{\"port\":8443,\"user\":\"alice\"}", "#
            + #""long": ""# + long + #"", "pässwörd 🔑": "ünïcödé ✓", "quote\"and\\backslash": "line1\nline2", "#
            + #""username": "overwritten"}"# + "\n"

        let result = try readVault(path, passphrase: "pässphrase ✓")
        #expect(result.status == 0)
        #expect(result.stderr == "")
        #expect(result.stdout == expected)

        // After a passphrase change the reader follows, and the old passphrase is refused.
        try store.changeEncryptionKey(with: SecureBytes(string: "new passphrase"))
        let after = try readVault(path, passphrase: "new passphrase")
        #expect(after.status == 0)
        #expect(after.stdout == expected)
        #expect(try readVault(path, passphrase: "pässphrase ✓").status == 3)
    }

    // MARK: A checked-in vector

    static let vectors = URL(fileURLWithPath: script).deletingLastPathComponent().appendingPathComponent("vectors").path
    static let vectorPassphrase = "vector passphrase ✓"

    /// The generator of `Tests/Interop/vectors/v1-test-kdf.vault` (run with `VAULT_REGENERATE_VECTORS=1`).
    /// The expected reader output, `v1-test-kdf.json`, is written by hand, not by this generator.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["VAULT_REGENERATE_VECTORS"] == "1"))
    func regenerateVector() throws {
        let store = testStore(path)
        try store.create(with: SecureBytes(string: Self.vectorPassphrase))
        try store.update { changes in
            try changes.put("alice", forKey: "username")
            try changes.put("ünïcödé ✓", forKey: "pässwörd 🔑")
            try changes.put(SecureBytes((0...255).map { UInt8($0) }), forKey: "binary")
            try changes.put(SecureBytes([]), forKey: "empty")
        }
        try writeBytes(try readBytes(path), to: Self.vectors + "/v1-test-kdf.vault")
    }

    @Test("the checked-in v1 vector opens with the library and the reader, with the expected content")
    func checkedInVector() throws {
        let vector = try readBytes(Self.vectors + "/v1-test-kdf.vault")
        let expected = try String(contentsOfFile: Self.vectors + "/v1-test-kdf.json", encoding: .utf8)
        try writeBytes(vector, to: path)  // a private copy: git does not keep mode 0600

        let store = testStore(path)
        try store.open(with: SecureBytes(string: Self.vectorPassphrase), createIfMissing: false)
        #expect(try store.keys() == ["binary", "empty", "pässwörd 🔑", "username"])
        #expect(try store.getString("username") == "alice")
        #expect(try store.getString("pässwörd 🔑") == "ünïcödé ✓")
        #expect(try store.getData("binary") == Data((0...255).map { UInt8($0) }))
        #expect(try store.getData("empty") == Data())
        #expect(store.generation == 2)

        let result = try readVault(path, passphrase: Self.vectorPassphrase)
        #expect(result.status == 0)
        #expect(result.stdout == expected)
        #expect(openError(path, passphrase: testPassphrase) == .wrongPassphrase(path: path))
    }

    @Test("an empty vault reads as {}")
    func emptyVault() throws {
        try makeVault(path)
        let result = try readVault(path, passphrase: "correct horse battery staple")
        #expect(result.status == 0)
        #expect(result.stdout == "{}\n")
    }

    @Test("a wrong passphrase: exit 3, a clear message, nothing on stdout")
    func wrongPassphrase() throws {
        try makeVault(path, entries: [("k", "v")])
        for wrong in ["correct horse battery stapler", "", "Correct horse battery staple"] {
            let result = try readVault(path, passphrase: wrong)
            #expect(result.status == 3)
            #expect(result.stdout == "")
            #expect(result.stderr == "read_vault: incorrect passphrase (or the file was tampered with)\n")
        }
    }

    @Test("the reader checks the header binding, the KDF range and the structure like the library")
    func damagedFiles() throws {
        try makeVault(path, entries: [("k", "v")])
        let original = try readBytes(path)
        let target = directory.file("damaged.vault")
        let good = "correct horse battery staple"

        // Without the test hook, the cheap test parameters are out of range: refused before the KDF.
        let strict = try readVault(path, passphrase: good, testHook: false)
        #expect(strict.status == 6)
        #expect(strict.stderr == "read_vault: Argon2id parameters out of range (opslimit 1, memlimit 8192)\n")

        var generation = original
        patch(&generation, at: Layout.generation, UInt64(99))  // only the header hash covers it
        try writeBytes(generation, to: target)
        #expect(try readVault(target, passphrase: good).status == 3)

        var forged = original
        patch(&forged, at: Layout.memLimit, UInt64(1) << 42)
        try writeBytes(forged, to: target)
        let refused = try readVault(target, passphrase: good)
        #expect(refused.status == 6)
        #expect(refused.stderr == "read_vault: Argon2id parameters out of range (opslimit 1, memlimit 4398046511104)\n")

        try writeBytes(Array(original.dropLast()), to: target)
        #expect(try readVault(target, passphrase: good).stderr == "read_vault: truncated or extended\n")

        var version = original
        patch(&version, at: Layout.version, UInt16(2))
        try writeBytes(version, to: target)
        #expect(try readVault(target, passphrase: good).stderr == "read_vault: unsupported format version 2\n")

        let missing = try readVault(directory.file("missing.vault"), passphrase: good)
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("read_vault: cannot read '"))
    }
}

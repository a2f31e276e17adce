import Foundation
import Testing

@testable import VaultCore

/// Replays the malformed-file vectors of `Tests/Vectors/v1` (made by `Tests/Vectors/generate.py`, see the README
/// there) against the library and the independent Python reader: each must give exactly its `expect:` case.
@Suite("Malformed-file vectors")
struct VectorTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Vectors").path
    static let directory = root + "/v1"

    struct Vector: CustomStringConvertible, Sendable {
        var name: String
        var fields: [String: String]
        var description: String { name }
        subscript(_ key: String) -> String? { fields[key] }
    }

    static let vectors: [Vector] = {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".expect") }.sorted()
        return names.map { file in
            let text = (try? String(contentsOfFile: directory + "/" + file, encoding: .utf8)) ?? ""
            var fields = [String: String]()
            for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let value = line[line.index(after: colon)...]
                fields[String(line[..<colon])] = String(value.hasPrefix(" ") ? value.dropFirst() : value)
            }
            return Vector(name: String(file.dropLast(".expect".count)), fields: fields)
        }
    }()

    /// The error the vector's header names, for a copy of the vault at `path`; `nil` for success. A corrupt
    /// vector's `code:` is the reason's stable code (``Corruption/code``: the wording may change, the code does
    /// not); its `reason:` line is the text, for people reading the vector.
    static func expectedError(_ vector: Vector, path: String) throws -> Expected? {
        func field(_ key: String) throws -> String { try #require(vector[key], "\(vector.name): no '\(key)'") }
        switch try field("expect") {
        case "success": return nil
        case "corrupt": return .corrupt(path: path, code: try field("code"))
        case let other: return try expectedVaultError(other, field: field, path: path).map(Expected.error)
        }
    }

    enum Expected: Equatable, CustomStringConvertible {
        case error(VaultError)
        case corrupt(path: String, code: String)

        func matches(_ error: VaultError) -> Bool {
            switch self {
            case .error(let expected): return error == expected
            case .corrupt(let path, let code):
                guard case .corrupt(let actualPath, let actual) = error else { return false }
                return actualPath == path && actual.code == code
            }
        }

        var description: String {
            switch self {
            case .error(let error): return String(describing: error)
            case .corrupt(let path, let code): return "corrupt(\(path), \(code))"
            }
        }
    }

    static func expectedVaultError(_ expect: String, field: (String) throws -> String, path: String) throws -> VaultError? {
        switch expect {
        case "wrongPassphrase": return .wrongPassphrase(path: path)
        case "unsupportedVersion": return .unsupportedVersion(path: path, version: try #require(Int(try field("version"))))
        case "unsupportedKDF": return .unsupportedKDF(path: path, algorithm: try #require(Int(try field("algorithm"))))
        case "kdfParametersOutOfRange":
            return .kdfParametersOutOfRange(
                path: path, opsLimit: try #require(UInt64(try field("opslimit"))),
                memLimitBytes: try #require(UInt64(try field("memlimit"))))
        case let other:
            Issue.record("unknown expectation '\(other)' (for \(path))")
            return nil
        }
    }

    /// What `read_vault.py` prints for a vault: `{name: utf8 string or {"base64": ...}}`, sorted.
    static func shown(_ store: FormatOneStore) throws -> Any {
        var object = [String: Any]()
        for name in try store.keys() {
            let data = try #require(try store.getData(name))
            if let text = String(data: data, encoding: .utf8), String(decoding: data, as: UTF8.self) == text {
                object[name] = text
            } else {
                object[name] = ["base64": data.base64EncodedString()]
            }
        }
        return object
    }

    @Test("the vector set is complete")
    func inventory() throws {
        #expect(Self.vectors.count >= 70)
        let cases = Set(Self.vectors.compactMap { $0["expect"] })
        #expect(cases == ["success", "wrongPassphrase", "corrupt", "unsupportedVersion", "unsupportedKDF",
                          "kdfParametersOutOfRange"])
        for vector in Self.vectors {
            #expect(FileManager.default.fileExists(atPath: Self.directory + "/\(vector.name).vault"), "\(vector.name)")
        }
    }

    @Test("each vector opens, or fails with exactly its expected error", arguments: vectors)
    func replay(_ vector: Vector) throws {
        let directory = TemporaryDirectory()
        let path = directory.file("vector.vault")
        try writeBytes(try readBytes(Self.directory + "/\(vector.name).vault"), to: path)  // mode 0600: git does not keep it
        let options: VaultStoreOptions = vector["kdf-policy"] == "standard" ? .init() : .insecureForTesting
        let passphrase = SecureBytes(string: try #require(vector["passphrase"]))
        let store = FormatOneStore(path: path, options: options)
        let expected = try Self.expectedError(vector, path: path)
        do {
            try store.open(with: passphrase, createIfMissing: false)
            defer { store.close() }
            #expect(expected == nil, "\(vector.name) opened; expected \(String(describing: expected))")
            if expected == nil {
                #expect(store.generation == UInt64(vector["generation"] ?? ""))
                let want = try JSONSerialization.jsonObject(with: Data(try #require(vector["entries"]).utf8))
                #expect((try Self.shown(store) as? NSDictionary) == (want as? NSDictionary))
            }
        } catch let error as VaultError {
            #expect(expected?.matches(error) == true, "\(vector.name): \(error)")
        }
        // Whatever happened, the file is untouched.
        #expect(try readBytes(path) == readBytes(Self.directory + "/\(vector.name).vault"))
    }

    @Test("the independent Python reader gives the same verdict (exit code, and the entries)", arguments: vectors)
    func pythonReplay(_ vector: Vector) throws {
        try #require(InteropTests.pythonReady, "python3 with PyNaCl is needed")
        var environment = ProcessInfo.processInfo.environment
        environment["VAULT_PASSPHRASE"] = vector["passphrase"]
        environment["VAULT_TESTING_INSECURE_KDF"] = vector["kdf-policy"] == "test" ? "1" : nil
        let result = try run(
            "/usr/bin/env", ["python3", InteropTests.script, Self.directory + "/\(vector.name).vault"],
            environment: environment)
        #expect(result.status == Int32(vector["python-exit"] ?? ""), "\(vector.name): \(result.stderr)")
        if result.status == 0 {
            #expect(result.stdout == (vector["entries"] ?? "") + "\n")
        }
    }

    @Test("the checked-in vectors are exactly what the generator writes")
    func generatorReproducesTheVectors() throws {
        try #require(InteropTests.pythonReady, "python3 with PyNaCl is needed")
        let out = TemporaryDirectory()
        let result = try run("/usr/bin/env", ["python3", Self.root + "/generate.py", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        let generated = out.listing()
        let checkedIn = ((try? FileManager.default.contentsOfDirectory(atPath: Self.directory)) ?? [])
            .filter { $0.hasSuffix(".vault") || $0.hasSuffix(".expect") }.sorted()
        #expect(generated == checkedIn)
        for name in generated {
            #expect(try readBytes(out.file(name)) == readBytes(Self.directory + "/" + name), "\(name) differs")
        }
    }
}

import Foundation
import Testing

@testable import VaultCore
import VaultSodium

/// The file format v1 (docs/FORMAT.md): layout, padding, confidentiality of names and values, nonces, and what
/// a reader does with every damaged or forged file.
@Suite("Vault format v1")
struct VaultFormatTests {
    let directory = TemporaryDirectory()
    var path: String { directory.file("test.vault") }

    // MARK: Layout

    @Test("a new vault's header: magic, version 1, Argon2id, no flags, parameters, generation 1; 420 bytes")
    func headerLayout() throws {
        try makeVault(path)
        let bytes = try readBytes(path)
        #expect(bytes.count == Layout.emptyFileByteCount)
        #expect(Array(bytes[Layout.magic]) == [0x89, 0x56, 0x41, 0x55, 0x4C, 0x54, 0x0D, 0x0A])
        #expect(load(bytes, at: Layout.version, as: UInt16.self) == 1)
        #expect(bytes[Layout.kdf] == 2)
        #expect(bytes[Layout.flags] == 0)
        #expect(load(bytes, at: Layout.opsLimit, as: UInt64.self) == 1)
        #expect(load(bytes, at: Layout.memLimit, as: UInt64.self) == 8192)
        #expect(load(bytes, at: Layout.generation, as: UInt64.self) == 1)
        #expect(bytes[Layout.salt].contains { $0 != 0 })
        #expect(bytes[Layout.keyNonce].contains { $0 != 0 })
        #expect(bytes[Layout.bodyNonce].contains { $0 != 0 })
    }

    @Test("ordinary writes keep salt, key nonce and wrapped key, bump the generation and change the body nonce")
    func writesAndHeader() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        var previous = try readBytes(path)
        for generation in UInt64(2)...6 {
            try store.put("same value", forKey: "same key")
            let bytes = try readBytes(path)
            #expect(load(bytes, at: Layout.generation, as: UInt64.self) == generation)
            #expect(bytes[Layout.salt] == previous[Layout.salt])
            #expect(bytes[Layout.keyNonce] == previous[Layout.keyNonce])
            #expect(bytes[Layout.wrappedKey] == previous[Layout.wrappedKey])
            #expect(bytes[Layout.bodyNonce] != previous[Layout.bodyNonce])
            previous = bytes
        }
    }

    @Test("the plaintext is padded to a multiple of 256 bytes, no more")
    func padding() throws {
        // Plaintext = 32 (header hash) + 4 (count) + per entry 2 + name + 4 + value + 16.
        // One entry named "k": 59 + value bytes; 197 bytes fill exactly 256.
        let cases: [(valueByteCount: Int, fileByteCount: Int)] = [
            (0, 420), (197, 420), (198, 676), (453, 676), (454, 932), (10_000, 148 + 16 + 10_240),
        ]
        for (valueByteCount, fileByteCount) in cases {
            let vault = directory.file("pad-\(valueByteCount).vault")
            let store = testStore(vault)
            try store.create(with: testPassphrase)
            try store.put([UInt8](repeating: 0x41, count: valueByteCount), forKey: "k")
            #expect(try readBytes(vault).count == fileByteCount, "value of \(valueByteCount) bytes")
        }
    }

    @Test("entry names and values do not appear in the file")
    func namesAndValuesNotVisible() throws {
        let name = "CANARY-NAME-7f3a9c"
        let value = "CANARY-VALUE-d41d8c"
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put(value, forKey: name)
        try store.put(Array(value.utf8), forKey: "second " + name)
        try store.changeEncryptionKey(with: otherPassphrase)
        store.close()
        let bytes = try readBytes(path)
        for needle in [name, value, "CANARY", "second", "correct horse"] {
            #expect(!contains(bytes, Array(needle.utf8)), "'\(needle)' is visible in the file")
        }
        // The search itself works.
        #expect(contains(bytes, [0x89, 0x56, 0x41, 0x55, 0x4C, 0x54]))
        // Nor does anything stay behind in the directory.
        #expect(directory.listing() == ["test.vault", "test.vault.lock"])
    }

    @Test("every write uses a fresh body nonce: the same content never gives the same body")
    func freshNonces() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        var nonces = Set<[UInt8]>()
        var bodies = Set<[UInt8]>()
        for _ in 0..<32 {
            try store.put("same", forKey: "same")
            let bytes = try readBytes(path)
            nonces.insert(Array(bytes[Layout.bodyNonce]))
            bodies.insert(Array(bytes[Layout.bodyStart...]))
        }
        #expect(nonces.count == 32)
        #expect(bodies.count == 32)

        // Two vaults with the same passphrase and content share nothing random.
        let other = directory.file("other.vault")
        try makeVault(other)
        try makeVault(directory.file("third.vault"))
        let a = try readBytes(other)
        let b = try readBytes(directory.file("third.vault"))
        #expect(a[Layout.salt] != b[Layout.salt])
        #expect(a[Layout.keyNonce] != b[Layout.keyNonce])
        #expect(a[Layout.bodyNonce] != b[Layout.bodyNonce])
    }

    // MARK: Damaged files

    /// The error a reader must give when bit `bit` of byte `offset` of `original` is flipped.
    private static func expectedFlipError(
        _ original: [UInt8], offset: Int, bit: Int, path: String
    ) -> (VaultError) -> Bool {
        var flipped = original
        flipped[offset] ^= 1 << bit
        switch offset {
        case Layout.magic:
            return { if case .corrupt(path, _) = $0 { true } else { false } }
        case Layout.version, Layout.version + 1:
            let version = Int(load(flipped, at: Layout.version, as: UInt16.self))
            return { $0 == .unsupportedVersion(path: path, version: version) }
        case Layout.kdf:
            return { $0 == .unsupportedKDF(path: path, algorithm: Int(flipped[Layout.kdf])) }
        case Layout.flags:
            return { $0 == .corrupt(path: path, reason: .unknownFlags(flipped[Layout.flags])) }
        case Layout.opsLimit..<Layout.memLimit + 8:
            let ops = load(flipped, at: Layout.opsLimit, as: UInt64.self)
            let mem = load(flipped, at: Layout.memLimit, as: UInt64.self)
            // The test policy: opslimit 1...4, memlimit 8 KiB...1 GiB in whole KiB.
            if (1...4).contains(ops) && (8192...(1 << 30)).contains(mem) && mem % 1024 == 0 {
                return { $0 == .wrongPassphrase(path: path) }  // the KDF gives another key
            }
            return { $0 == .kdfParametersOutOfRange(path: path, opsLimit: ops, memLimitBytes: mem) }
        default:
            // Salt, generation, key nonce, wrapped key, body nonce, body: authenticated.
            return { $0 == .wrongPassphrase(path: path) }
        }
    }

    @Test("every single-bit flip of a small vault gives the expected typed error, never a crash")
    func everyBitFlip() throws {
        try makeVault(path, entries: [("k", "v")])
        let original = try readBytes(path)
        #expect(original.count == Layout.emptyFileByteCount)
        let target = directory.file("flipped.vault")
        var failures = [String]()
        var refused = 0
        for offset in 0..<original.count {
            for bit in 0..<8 {
                var flipped = original
                flipped[offset] ^= 1 << bit
                try writeBytes(flipped, to: target)
                let expected = Self.expectedFlipError(original, offset: offset, bit: bit, path: target)
                guard let error = openError(target) else {
                    failures.append("byte \(offset) bit \(bit): opened")
                    continue
                }
                refused += 1
                if !expected(error) { failures.append("byte \(offset) bit \(bit): \(error)") }
            }
        }
        #expect(refused == original.count * 8)
        #expect(failures.isEmpty, "\(failures.count) unexpected results, first: \(failures.prefix(5))")

        // An unmodified copy still opens, with its content.
        try writeBytes(original, to: target)
        let store = testStore(target)
        try store.open(with: testPassphrase, createIfMissing: false)
        #expect(try store.getString("k") == "v")
        #expect(openError(path) == nil)
    }

    @Test("every truncation (0 to size-1 bytes) is corrupt, never a crash")
    func everyTruncation() throws {
        try makeVault(path, entries: [("k", "v")])
        let original = try readBytes(path)
        let target = directory.file("truncated.vault")
        var failures = [String]()
        for length in 0..<original.count {
            try writeBytes(Array(original[0..<length]), to: target)
            let error = openError(target)
            if error != .corrupt(path: target, reason: .truncated(byteCount: length)) {
                failures.append("\(length) bytes: \(error.map { "\($0)" } ?? "opened")")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) unexpected results, first: \(failures.prefix(5))")
        try writeBytes(original, to: target)
        #expect(openError(target) == nil)
    }

    @Test("trailing bytes: a partial block is corrupt, a whole block fails authentication")
    func trailingBytes() throws {
        try makeVault(path, entries: [("k", "v")])
        let original = try readBytes(path)
        let target = directory.file("extended.vault")
        for extra in [1, 15, 16, 255, 257, 300] {
            try writeBytes(original + [UInt8](repeating: 0, count: extra), to: target)
            #expect(
                openError(target)
                    == .corrupt(path: target, reason: .sizeMismatch(byteCount: original.count + extra)))
        }
        for extra in [256, 512] {
            try writeBytes(original + [UInt8](repeating: 0, count: extra), to: target)
            #expect(openError(target) == .wrongPassphrase(path: target))
            try writeBytes(original + Sodium.randomBytes(count: extra), to: target)
            #expect(openError(target) == .wrongPassphrase(path: target))
        }
    }

    @Test("files that are not vaults: empty, text, a prefix of the magic")
    func notVaults() throws {
        let target = directory.file("x.vault")
        try writeBytes([], to: target)
        #expect(openError(target) == .corrupt(path: target, reason: .truncated(byteCount: 0)))
        try writeBytes(Array("hello, world\n".utf8), to: target)
        #expect(openError(target) == .corrupt(path: target, reason: .badMagic))
        try writeBytes([0x89, 0x56, 0x41], to: target)
        #expect(openError(target) == .corrupt(path: target, reason: .truncated(byteCount: 3)))
        try writeBytes(Array("VAULT".utf8), to: target)
        #expect(openError(target) == .corrupt(path: target, reason: .badMagic))
        // A well-formed header followed by random bytes.
        try makeVault(path)
        var forged = try readBytes(path)
        forged.replaceSubrange(Layout.bodyStart..., with: Sodium.randomBytes(count: forged.count - Layout.bodyStart))
        try writeBytes(forged, to: target)
        #expect(openError(target) == .wrongPassphrase(path: target))
    }

    @Test("version, algorithm and flags are checked before anything else in the header")
    func versionAlgorithmFlags() throws {
        try makeVault(path)
        let original = try readBytes(path)
        let target = directory.file("edited.vault")
        for version: UInt16 in [0, 2, 0x100, .max] {
            var bytes = original
            patch(&bytes, at: Layout.version, version)
            patch(&bytes, at: Layout.opsLimit, UInt64.max)  // out of range too: the version wins
            try writeBytes(bytes, to: target)
            #expect(openError(target) == .unsupportedVersion(path: target, version: Int(version)))
        }
        for algorithm: UInt8 in [0, 1, 3, 0xFF] {
            var bytes = original
            bytes[Layout.kdf] = algorithm
            bytes[Layout.flags] = 1  // unknown flag too: the algorithm wins
            try writeBytes(bytes, to: target)
            #expect(openError(target) == .unsupportedKDF(path: target, algorithm: Int(algorithm)))
        }
        for flags: UInt8 in [1, 0x80] {
            var bytes = original
            bytes[Layout.flags] = flags
            patch(&bytes, at: Layout.memLimit, UInt64(1) << 42)
            try writeBytes(bytes, to: target)
            #expect(openError(target) == .corrupt(path: target, reason: .unknownFlags(flags)))
        }
        // A truncated file with an unsupported version: the version is reported once the fixed part is there.
        var short = Array(original[0..<Layout.bodyStart])
        patch(&short, at: Layout.version, UInt16(2))
        try writeBytes(short, to: target)
        #expect(openError(target) == .unsupportedVersion(path: target, version: 2))
    }

    @Test("out-of-range KDF parameters are refused without running the KDF")
    func kdfParametersOutOfRange() throws {
        try makeVault(path)
        let original = try readBytes(path)
        let target = directory.file("forged.vault")
        let forged: [(ops: UInt64, mem: UInt64)] = [
            (0, 8 << 10), (5, 8 << 10), (1 << 63, 8 << 10), (.max, 8 << 10),
            (1, 1 << 42), (1, 4 << 10), (1, 0), (1, (8 << 10) + 512), (1, (1 << 30) + 1024), (1, .max),
            (1 << 63, 1 << 42),
        ]
        for (ops, mem) in forged {
            var bytes = original
            patch(&bytes, at: Layout.opsLimit, ops)
            patch(&bytes, at: Layout.memLimit, mem)
            try writeBytes(bytes, to: target)
            #expect(openError(target) == .kdfParametersOutOfRange(path: target, opsLimit: ops, memLimitBytes: mem))
            // The standard policy refuses them too.
            #expect(
                openError(target, options: VaultStoreOptions())
                    == .kdfParametersOutOfRange(path: target, opsLimit: ops, memLimitBytes: mem))
        }
        // Had the KDF run on the 4 TiB header, it would have failed differently: libsodium refuses the request.
        // So kdfParametersOutOfRange above proves the range check came first.
        let salt = Array(original[Layout.salt])
        for parameters in [
            Argon2id.Parameters(opsLimit: 1, memLimitBytes: 1 << 42),
            Argon2id.Parameters(opsLimit: 1 << 63, memLimitBytes: 8 << 10),
        ] {
            #expect(throws: VaultError.cryptoFailure(function: "crypto_pwhash")) {
                try Argon2id.deriveKey(from: testPassphrase, salt: salt, parameters: parameters)
            }
        }
        // A file that is also truncated still reports the parameters: the range check comes before the size check.
        var short = Array(original[0..<Layout.bodyStart + 10])
        patch(&short, at: Layout.memLimit, UInt64(1) << 42)
        try writeBytes(short, to: target)
        #expect(openError(target) == .kdfParametersOutOfRange(path: target, opsLimit: 1, memLimitBytes: 1 << 42))
    }

    @Test("in-range edits of the parameters fail authentication (the header is bound to the body)")
    func inRangeParameterEdits() throws {
        try makeVault(path, entries: [("k", "v")])
        let original = try readBytes(path)
        let target = directory.file("edited.vault")
        for (ops, mem) in [(UInt64(2), UInt64(8 << 10)), (1, 16 << 10), (1, 9 << 10)] {
            var bytes = original
            patch(&bytes, at: Layout.opsLimit, ops)
            patch(&bytes, at: Layout.memLimit, mem)
            try writeBytes(bytes, to: target)
            #expect(openError(target) == .wrongPassphrase(path: target))
        }
    }

    @Test("a header spliced onto another body of the same vault fails (the header hash binds them)")
    func headerBodySplice() throws {
        let store = testStore(path)
        try store.create(with: testPassphrase)
        try store.put("old", forKey: "k")
        let older = try readBytes(path)
        try store.put("new", forKey: "k")
        let newer = try readBytes(path)
        store.close()
        // Same salt and wrapped key: both halves decrypt under the same keys, only the binding differs.
        #expect(older[Layout.wrappedKey] == newer[Layout.wrappedKey])
        let target = directory.file("spliced.vault")
        try writeBytes(Array(older[Layout.header]) + Array(newer[Layout.header.upperBound...]), to: target)
        #expect(openError(target) == .wrongPassphrase(path: target))
        try writeBytes(Array(newer[Layout.header]) + Array(older[Layout.header.upperBound...]), to: target)
        #expect(openError(target) == .wrongPassphrase(path: target))
        // An edited generation alone fails the same way.
        var bumped = newer
        patch(&bumped, at: Layout.generation, UInt64(99))
        try writeBytes(bumped, to: target)
        #expect(openError(target) == .wrongPassphrase(path: target))
    }

    // MARK: Header encoding (internal)

    @Test("Header.encoded() lays out the fields at the documented offsets")
    func headerEncoding() throws {
        let header = VaultFormat.Header(
            parameters: .init(opsLimit: 0x0102_0304_0506_0708, memLimitBytes: 0x1112_1314_1516_1718),
            salt: Array(0x20..<0x30), generation: 0x2122_2324_2526_2728,
            keyNonce: Array(0x40..<0x58), wrappedKey: Array(0x60..<0x90))
        let bytes = header.encoded()
        #expect(bytes.count == 124)
        #expect(Array(bytes[0..<12]) == [0x89, 0x56, 0x41, 0x55, 0x4C, 0x54, 0x0D, 0x0A, 1, 0, 2, 0])
        #expect(Array(bytes[12..<20]) == [8, 7, 6, 5, 4, 3, 2, 1])
        #expect(Array(bytes[20..<28]) == [0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11])
        #expect(Array(bytes[Layout.salt]) == Array(0x20..<0x30))
        #expect(Array(bytes[44..<52]) == [0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21])
        #expect(Array(bytes[Layout.keyNonce]) == Array(0x40..<0x58))
        #expect(Array(bytes[Layout.wrappedKey]) == Array(0x60..<0x90))
    }

    // MARK: Plaintext structure (internal: these files can only be made with the data key)

    private static let hash = [UInt8](repeating: 0xAB, count: 32)

    /// A plaintext: header hash, count, the given entry bytes, zero padding to a multiple of 256.
    private static func plaintext(count: UInt32, _ body: [UInt8], hash: [UInt8] = hash, extraPadding: Int = 0) -> SecureBytes {
        var bytes = hash
        bytes.appendLittleEndian(count)
        bytes += body
        let padded = (bytes.count + 255) / 256 * 256 + extraPadding
        bytes += [UInt8](repeating: 0, count: padded - bytes.count)
        return SecureBytes(bytes)
    }

    private static func entry(_ name: [UInt8], _ value: [UInt8], created: Int64 = 1, modified: Int64 = 2) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.appendLittleEndian(UInt16(name.count))
        bytes += name
        bytes.appendLittleEndian(UInt32(value.count))
        bytes += value
        bytes.appendLittleEndian(created)
        bytes.appendLittleEndian(modified)
        return bytes
    }

    private static func parse(_ plaintext: SecureBytes, hash: [UInt8] = hash) throws -> VaultContents {
        try VaultContents(plaintext: plaintext, headerHash: hash, path: "p")
    }

    @Test("a well-formed plaintext parses: names, values, times, file order")
    func plaintextParses() throws {
        let body = Self.entry(Array("zeta".utf8), [1, 2, 3], created: -5, modified: 1_700_000_000_000)
            + Self.entry(Array("alpha".utf8), [])
        let contents = try Self.parse(Self.plaintext(count: 2, body))
        #expect(contents.order == ["zeta", "alpha"])
        #expect(contents.withValue("zeta") { Array($0) } == [1, 2, 3])
        #expect(contents.withValue("alpha") { Array($0) } == [])
        #expect(contents.withValue("missing") { Array($0) } == nil)
        #expect(contents.entries["zeta"]?.created == -5)
        #expect(contents.entries["zeta"]?.modified == 1_700_000_000_000)
        // Names are not checked for control characters when read (only when written through the API).
        #expect(try Self.parse(Self.plaintext(count: 1, Self.entry([0x0A], [0]))).order == ["\n"])
    }

    @Test("malformed plaintexts are corrupt; a wrong header hash is wrongPassphrase")
    func plaintextRejections() throws {
        let good = Self.entry(Array("name".utf8), Array("value".utf8))
        #expect(throws: VaultError.wrongPassphrase(path: "p")) {
            try Self.parse(Self.plaintext(count: 1, good), hash: [UInt8](repeating: 0xAC, count: 32))
        }
        func expectCorrupt(_ plaintext: SecureBytes, _ reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let error = #expect(throws: VaultError.self, sourceLocation: sourceLocation) { try Self.parse(plaintext) }
            guard case .corrupt(let path, let actual)? = error else {
                Issue.record("expected corrupt, got \(String(describing: error))", sourceLocation: sourceLocation)
                return
            }
            #expect(path == "p" && actual.description == reason, sourceLocation: sourceLocation)
        }
        expectCorrupt(SecureBytes([UInt8](repeating: 0xAB, count: 35)), "plaintext too short")
        expectCorrupt(Self.plaintext(count: 2, good + good), "duplicate entry name")
        let nfc = Self.entry(Array("caf\u{E9}".utf8), [1])
        let nfd = Self.entry(Array("cafe\u{301}".utf8), [2])
        expectCorrupt(Self.plaintext(count: 2, nfc + nfd), "duplicate entry name")
        expectCorrupt(Self.plaintext(count: 1, Self.entry([], [1])), "entry 0 has a bad name length")
        expectCorrupt(
            Self.plaintext(count: 1, Self.entry([UInt8](repeating: 0x61, count: 4097), [1])),
            "entry 0 has a bad name length")
        expectCorrupt(Self.plaintext(count: 1, Self.entry([0xC3, 0x28], [1])), "entry 0 has a name that is not UTF-8")
        expectCorrupt(Self.plaintext(count: 1, Self.entry([0xED, 0xA0, 0x80], [1])), "entry 0 has a name that is not UTF-8")
        expectCorrupt(Self.plaintext(count: 2, good), "entry 1 has a bad name length")  // runs into the padding
        expectCorrupt(Self.plaintext(count: 0xFFFF_FFFF, good), "entry count 4294967295 exceeds the data")
        expectCorrupt(Self.plaintext(count: 0, good), "bad padding")
        expectCorrupt(Self.plaintext(count: 1, good, extraPadding: 256), "bad padding")
        expectCorrupt(Self.plaintext(count: 1, good + [0, 0, 1]), "bad padding")
        // A value length that runs past the end, and one above the 64 MiB limit.
        var long = good
        patch(&long, at: 2 + 4, UInt32(300))
        expectCorrupt(Self.plaintext(count: 1, long), "entry 0 has a bad value length")
        patch(&long, at: 2 + 4, UInt32(64 << 20) + 1)
        expectCorrupt(Self.plaintext(count: 1, long), "entry 0 has a bad value length")
        // A name length that runs past the end.
        var name = good
        patch(&name, at: 0, UInt16(4000))
        expectCorrupt(Self.plaintext(count: 1, name), "entry 0 has a bad name length")
    }
}

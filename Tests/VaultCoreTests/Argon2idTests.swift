import Foundation
import Testing

@testable import VaultCore

@Suite("Argon2id")
struct Argon2idTests {
    private static let salt: [UInt8] = Array(0..<16)
    private static let password = SecureBytes(string: "correct horse battery staple")

    @Test("the presets are libsodium's interactive, moderate and sensitive limits")
    func presets() {
        #expect(Argon2id.Parameters.interactive == .init(opsLimit: 2, memLimitBytes: 67_108_864))
        #expect(Argon2id.Parameters.moderate == .init(opsLimit: 3, memLimitBytes: 268_435_456))
        #expect(Argon2id.Parameters.sensitive == .init(opsLimit: 4, memLimitBytes: 1_073_741_824))
        #expect(Argon2id.Parameters.insecureForTesting == .init(opsLimit: 1, memLimitBytes: 8192))
        #expect(Argon2id.Parameters.moderate.description == "256 MiB, 3 passes")
        #expect(Argon2id.saltByteCount == 16)
    }

    @Test("the standard policy accepts interactive...sensitive, each limit on its own, in whole KiB")
    func standardPolicy() {
        let policy = Argon2id.KDFPolicy.standard
        let mib: UInt64 = 1 << 20
        let accepted: [Argon2id.Parameters] = [
            .init(opsLimit: 2, memLimitBytes: 64 * mib), .init(opsLimit: 3, memLimitBytes: 256 * mib),
            .init(opsLimit: 4, memLimitBytes: 1024 * mib), .init(opsLimit: 2, memLimitBytes: 1024 * mib),
            .init(opsLimit: 4, memLimitBytes: 64 * mib), .init(opsLimit: 3, memLimitBytes: 64 * mib + 1024),
        ]
        for parameters in accepted { #expect(policy.accepts(parameters), "\(parameters)") }
        let refused: [Argon2id.Parameters] = [
            .init(opsLimit: 1, memLimitBytes: 64 * mib), .init(opsLimit: 5, memLimitBytes: 64 * mib),
            .init(opsLimit: 0, memLimitBytes: 0), .init(opsLimit: 2, memLimitBytes: 64 * mib - 1024),
            .init(opsLimit: 2, memLimitBytes: 1024 * mib + 1024), .init(opsLimit: 2, memLimitBytes: 64 * mib + 1),
            .init(opsLimit: 1, memLimitBytes: 8192), .init(opsLimit: .max, memLimitBytes: .max),
            .init(opsLimit: 2, memLimitBytes: 1 << 42),
        ]
        for parameters in refused { #expect(!policy.accepts(parameters), "\(parameters)") }
        #expect(policy.minimum == .interactive)
        #expect(policy.maximum == .sensitive)
    }

    @Test("the test policy also accepts libsodium's minimum, and nothing below it")
    func testPolicy() {
        let policy = Argon2id.KDFPolicy.insecureForTesting
        #expect(policy.accepts(.insecureForTesting))
        #expect(policy.accepts(.interactive))
        #expect(policy.accepts(.sensitive))
        #expect(!policy.accepts(.init(opsLimit: 0, memLimitBytes: 8192)))
        #expect(!policy.accepts(.init(opsLimit: 1, memLimitBytes: 7168)))
        #expect(!policy.accepts(.init(opsLimit: 5, memLimitBytes: 8192)))
        #expect(!policy.accepts(.init(opsLimit: 1, memLimitBytes: 8193)))
        #expect(policy.minimum == .insecureForTesting)
    }

    /// Vectors computed with the Argon2 reference implementation through argon2-cffi 23
    /// (`argon2.low_level.hash_secret_raw(password, salt, time_cost=t, memory_cost=m KiB, parallelism=1,
    /// hash_len=32, type=Type.ID, version=19)`), i.e. independently of libsodium, with
    /// password "correct horse battery staple" and salt 00 01 02 ... 0f.
    @Test("derivations match the Argon2 reference implementation", arguments: [
        (UInt64(1), UInt64(8), "d17ea6341ca93da6079ea2f64dc4aa31dd1aaf9caa67fb42ac4afd0714706f26"),
        (2, 64, "2df47ede6358ed17a9976d4fcedb897a10036d432a4acef17d263bfc98bd20ac"),
        (3, 1024, "590d7ddd37a1ed86417a3614be47c9f782828a38902390018d39bb6556fee029"),
    ])
    func referenceVectors(opsLimit: UInt64, memoryKiB: UInt64, expected: String) throws {
        let key = try Argon2id.deriveKey(
            from: Self.password, salt: Self.salt, parameters: .init(opsLimit: opsLimit, memLimitBytes: memoryKiB * 1024))
        #expect(key.count == 32)
        #expect(key.unprotectedBytes.map { String(format: "%02x", $0) }.joined() == expected)
    }

    @Test("the key depends on passphrase, salt, opslimit and memlimit; the same inputs give the same key")
    func inputsMatter() throws {
        let parameters = Argon2id.Parameters.insecureForTesting
        let key = try Argon2id.deriveKey(from: Self.password, salt: Self.salt, parameters: parameters)
        #expect(try Argon2id.deriveKey(from: Self.password, salt: Self.salt, parameters: parameters) == key)
        var otherSalt = Self.salt
        otherSalt[15] ^= 1
        let variants = [
            try Argon2id.deriveKey(from: SecureBytes(string: "correct horse battery stapler"), salt: Self.salt, parameters: parameters),
            try Argon2id.deriveKey(from: Self.password, salt: otherSalt, parameters: parameters),
            try Argon2id.deriveKey(from: Self.password, salt: Self.salt, parameters: .init(opsLimit: 2, memLimitBytes: 8192)),
            try Argon2id.deriveKey(from: Self.password, salt: Self.salt, parameters: .init(opsLimit: 1, memLimitBytes: 9216)),
            try Argon2id.deriveKey(from: SecureBytes(string: ""), salt: Self.salt, parameters: parameters),
        ]
        for variant in variants { #expect(variant != key) }
        #expect(try Argon2id.deriveKey(from: Self.password, salt: Self.salt, parameters: parameters, byteCount: 64).count == 64)
    }

    @Test("parameters libsodium refuses give cryptoFailure, never a crash")
    func refusedParameters() {
        for parameters: Argon2id.Parameters in [
            .init(opsLimit: 0, memLimitBytes: 8192),
            .init(opsLimit: 1, memLimitBytes: 4096),
            .init(opsLimit: 1 << 63, memLimitBytes: 8192),
            .init(opsLimit: 1, memLimitBytes: 1 << 42),
            .init(opsLimit: 1, memLimitBytes: .max),
        ] {
            #expect(throws: VaultError.cryptoFailure(function: "crypto_pwhash"), "\(parameters)") {
                try Argon2id.deriveKey(from: Self.password, salt: Self.salt, parameters: parameters)
            }
        }
    }

    @Test("calibration stays within the range every vault accepts: a target below the minimum's cost gives the minimum")
    func calibrationBelowTheMinimum() throws {
        var lines = [String]()
        let parameters = try Argon2id.Parameters.calibrated(targetSeconds: 0.001) { lines.append($0) }
        #expect(parameters == .interactive)
        #expect(lines.first?.hasPrefix("calibrating Argon2id (1/4): 64 MiB, 2 passes takes ") == true)
    }
}

import VaultSodium
/// Argon2id v1.3 key derivation (`crypto_pwhash`, libsodium's default algorithm), one lane.
public enum Argon2id {
    /// The cost of one derivation: passes over memory and memory size.
    public struct Parameters: Hashable, Sendable, CustomStringConvertible {
        /// The number of passes (libsodium's `opslimit`).
        public var opsLimit: UInt64
        /// The memory used, in bytes (libsodium's `memlimit`).
        public var memLimitBytes: UInt64

        public init(opsLimit: UInt64, memLimitBytes: UInt64) {
            self.opsLimit = opsLimit
            self.memLimitBytes = memLimitBytes
        }

        /// 2 passes, 64 MiB (`crypto_pwhash_OPSLIMIT_INTERACTIVE`, `crypto_pwhash_MEMLIMIT_INTERACTIVE`).
        public static let interactive = Parameters(opsLimit: 2, memLimitBytes: 64 << 20)
        /// 3 passes, 256 MiB: the default for new vaults (`..._MODERATE`).
        public static let moderate = Parameters(opsLimit: 3, memLimitBytes: 256 << 20)
        /// 4 passes, 1 GiB (`..._SENSITIVE`).
        public static let sensitive = Parameters(opsLimit: 4, memLimitBytes: 1 << 30)

        /// 1 pass, 8 KiB: libsodium's minimum. **For tests only**: a vault made with these parameters
        /// opens only where ``KDFPolicy/allowsInsecureParametersForTesting`` is set.
        public static let insecureForTesting = Parameters(opsLimit: 1, memLimitBytes: 8 << 10)

        /// In words for users: the memory, then the passes (libsodium's memlimit and opslimit).
        public var description: String {
            let memory = memLimitBytes % (1 << 20) == 0 ? "\(memLimitBytes >> 20) MiB" : "\(memLimitBytes >> 10) KiB"
            return "\(memory), \(opsLimit) \(opsLimit == 1 ? "pass" : "passes")"
        }
    }

    /// Which parameters a vault may ask for. Checked on the unauthenticated header **before** the KDF runs,
    /// so a forged header can make us neither allocate absurd memory nor accept a weak key.
    public struct KDFPolicy: Sendable, Hashable {
        /// Accepts parameters from ``Parameters/interactive`` to ``Parameters/sensitive`` (each limit on its own).
        public static let standard = KDFPolicy(allowsInsecureParametersForTesting: false)
        /// The explicit test hook: also accepts libsodium's minimum (``Parameters/insecureForTesting``).
        public static let insecureForTesting = KDFPolicy(allowsInsecureParametersForTesting: true)

        public let allowsInsecureParametersForTesting: Bool

        public var minimum: Parameters {
            allowsInsecureParametersForTesting ? .insecureForTesting : .interactive
        }
        public var maximum: Parameters { .sensitive }

        public func accepts(_ parameters: Parameters) -> Bool {
            (minimum.opsLimit...maximum.opsLimit).contains(parameters.opsLimit)
                && (minimum.memLimitBytes...maximum.memLimitBytes).contains(parameters.memLimitBytes)
                && parameters.memLimitBytes % 1024 == 0
        }
    }

    /// The size of the salt, in bytes (`crypto_pwhash_SALTBYTES`).
    public static let saltByteCount = 16

    /// Derives a `byteCount`-byte key from `passphrase` and `salt`.
    ///
    /// - Throws: ``VaultError/cryptoFailure(function:)`` if libsodium fails (typically out of memory).
    ///
    /// The corresponding libsodium function is `crypto_pwhash` with `crypto_pwhash_ALG_ARGON2ID13`.
    public static func deriveKey(
        from passphrase: SecureBytes,
        salt: [UInt8],
        parameters: Parameters,
        byteCount: Int = 32
    ) throws -> SecureBytes {
        precondition(salt.count == saltByteCount, "Argon2id salt must be \(saltByteCount) bytes")
        // memlimit is a size_t: a value that does not fit is refused like any other libsodium cannot honour
        // (`Int(_:)` would trap).
        guard let memLimit = Int(exactly: parameters.memLimitBytes) else {
            throw VaultError.cryptoFailure(function: "crypto_pwhash")
        }
        return try SecureBytes(count: byteCount) { (output) throws in
            try passphrase.withUnsafeBytes { (pass) throws in
                try salt.withUnsafeBytes { (saltBytes) throws in
                    try sodium { try Sodium.argon2id(
                        into: output, passphrase: pass, salt: saltBytes,
                        opsLimit: parameters.opsLimit, memLimit: memLimit
                    ) }
                }
            }
        }
    }
}

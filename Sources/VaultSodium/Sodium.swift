internal import CSodium
import Synchronization

/// A libsodium call that reported failure; `function` names it. Callers turn it into their library's error.
package struct SodiumFailure: Error, Equatable, Sendable {
    package let function: String
}

/// The one place that calls libsodium: this module is the only importer of `CSodium` (an `internal import`,
/// so no other module can reach the C functions, as swift-crypto's `CryptoBoringWrapper` does for BoringSSL).
///
/// The wrappers turn libsodium's `-1` into ``SodiumFailure`` at the call site and never hand out a pointer
/// that outlives its closure.
package enum Sodium {
    /// Initialises libsodium once per process; safe to call from several threads (`sodium_init` is).
    package static let initialized: Bool = {
        sodium_init() >= 0
    }()

    package static func ensureInitialized() throws(SodiumFailure) {
        guard initialized else { throw SodiumFailure(function: "sodium_init") }
    }

    // MARK: Guarded memory

    /// Allocates `byteCount` bytes of guarded memory (guard pages, canary, `mlock`, excluded from core dumps).
    ///
    /// The corresponding libsodium function is `sodium_malloc`.
    package static func allocate(byteCount: Int) -> UnsafeMutableRawPointer {
        precondition(initialized, "libsodium failed to initialise")
        // sodium_malloc(0) is valid; we still ask for one byte so the pointer is never NULL for an empty secret.
        let size = max(byteCount, 1)
        if let kept = spareRegions.withLock({ $0.take(byteCount: size) }) { return kept }
        guard let pointer = sodium_malloc(size) else {
            fatalError("sodium_malloc(\(byteCount)) failed: out of memory")
        }
        return pointer
    }

    /// Zeroes and frees memory returned by ``allocate(byteCount:)`` for `byteCount` bytes; in a process that keeps
    /// spare regions (``keepSpareRegions(_:)``), a small one is zeroed and kept for the next allocation of its size.
    ///
    /// The corresponding libsodium function is `sodium_free` (which calls `sodium_memzero`).
    package static func free(_ pointer: UnsafeMutableRawPointer, byteCount: Int) {
        let size = max(byteCount, 1)
        if spareRegions.withLock({ $0.keeps(byteCount: size) }) {
            sodium_memzero(pointer, size)
            if spareRegions.withLock({ $0.keep(pointer, byteCount: size) }) { return }
        }
        sodium_free(pointer)
    }

    /// Keeps up to `count` freed regions of at most ``SpareRegions/largestByteCount`` bytes each, zeroed and still
    /// guarded and locked, for the next allocation of the same size (0: none, the default). For the agent, which
    /// answers every request in new guarded regions: each is an `mmap`, three `mprotect`s, an `madvise` and an
    /// `mlock`, and freeing it four calls more, where every `mprotect` and `munmap` of a process with several
    /// threads interrupts the other CPUs to flush their TLBs (46 % of the agent's CPU per `get`,
    /// Benchmarks/README.md, "The last figure"). A region is reused only for its own size, so that its bytes
    /// still end at its guard page and libsodium's canary is where `sodium_free` checks it.
    package static func keepSpareRegions(_ count: Int) {
        let evicted = spareRegions.withLock { spares in spares.resize(to: count) }
        for address in evicted { sodium_free(UnsafeMutableRawPointer(bitPattern: address)) }
    }

    private static let spareRegions = Mutex(SpareRegions())

    /// Zeroed guarded regions kept for reuse, by size (``keepSpareRegions(_:)``); addresses as integers, for
    /// the ``Mutex``.
    package struct SpareRegions: Sendable {
        /// The largest region kept: a frame's or a value's, not a whole vault's plaintext.
        package static let largestByteCount = 16 * 1024
        private var limit = 0
        private var regions: [(byteCount: Int, address: UInt)] = []

        func keeps(byteCount: Int) -> Bool { limit > 0 && byteCount <= Self.largestByteCount }

        mutating func take(byteCount: Int) -> UnsafeMutableRawPointer? {
            guard let index = regions.lastIndex(where: { $0.byteCount == byteCount }) else { return nil }
            return UnsafeMutableRawPointer(bitPattern: regions.remove(at: index).address)
        }

        /// Keeps `pointer`'s region; false when there is no room (the caller frees it).
        mutating func keep(_ pointer: UnsafeMutableRawPointer, byteCount: Int) -> Bool {
            guard keeps(byteCount: byteCount) else { return false }
            if regions.count >= limit { return false }
            regions.append((byteCount, UInt(bitPattern: pointer)))
            return true
        }

        /// A new limit; the addresses of the regions past it, to free.
        mutating func resize(to count: Int) -> [UInt] {
            limit = max(count, 0)
            guard regions.count > limit else { return [] }
            let evicted = regions[limit...].map(\.address)
            regions.removeSubrange(limit...)
            return evicted
        }
    }

    /// Zeroes `byteCount` bytes in a way the compiler may not optimise away.
    ///
    /// The corresponding libsodium function is `sodium_memzero`.
    package static func zero(_ pointer: UnsafeMutableRawPointer, byteCount: Int) {
        sodium_memzero(pointer, byteCount)
    }

    /// Compares two buffers of equal length in constant time.
    ///
    /// The corresponding libsodium function is `sodium_memcmp`.
    package static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        if a.count == 0 { return true }
        return sodium_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }

    // MARK: Randomness

    /// Fills `buffer` with bytes from the kernel's CSPRNG.
    ///
    /// The corresponding libsodium function is `randombytes_buf`.
    package static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(initialized, "libsodium failed to initialise")
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }

    package static func randomBytes(count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { fillRandom($0) }
        return bytes
    }

    // MARK: crypto_secretbox (XSalsa20-Poly1305)

    package static let secretBoxKeyByteCount = Int(crypto_secretbox_keybytes())
    package static let secretBoxNonceByteCount = Int(crypto_secretbox_noncebytes())
    package static let secretBoxMACByteCount = Int(crypto_secretbox_macbytes())

    /// Encrypts and authenticates `plaintext` under `key` with `nonce`, writing MAC then ciphertext into `output`.
    ///
    /// `output.count` must be `plaintext.count + secretBoxMACByteCount`.
    ///
    /// The corresponding libsodium function is `crypto_secretbox_easy`.
    package static func secretBoxSeal(
        _ plaintext: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer,
        key: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) throws(SodiumFailure) {
        precondition(key.count == secretBoxKeyByteCount && nonce.count == secretBoxNonceByteCount)
        precondition(output.count == plaintext.count + secretBoxMACByteCount)
        let result = crypto_secretbox_easy(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self),
            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyInput,
            UInt64(plaintext.count),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        )
        guard result == 0 else { throw SodiumFailure(function: "crypto_secretbox_easy") }
    }

    /// Verifies and decrypts a box (MAC then ciphertext) into `output`.
    ///
    /// Returns `false` when the MAC does not verify (wrong key or tampered data); `output` is then zeroed.
    ///
    /// The corresponding libsodium function is `crypto_secretbox_open_easy`.
    package static func secretBoxOpen(
        _ box: UnsafeRawBufferPointer,
        nonce: UnsafeRawBufferPointer,
        key: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) -> Bool {
        precondition(key.count == secretBoxKeyByteCount && nonce.count == secretBoxNonceByteCount)
        precondition(box.count >= secretBoxMACByteCount && output.count == box.count - secretBoxMACByteCount)
        let result = crypto_secretbox_open_easy(
            output.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyOutput,
            box.baseAddress!.assumingMemoryBound(to: UInt8.self),
            UInt64(box.count),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        )
        if result != 0, let base = output.baseAddress {
            sodium_memzero(base, output.count)
        }
        return result == 0
    }

    // MARK: crypto_pwhash (Argon2id v1.3)

    package static let argon2idAlgorithm = Int32(crypto_pwhash_ALG_ARGON2ID13)
    package static let argon2idSaltByteCount = Int(crypto_pwhash_saltbytes())

    /// Derives `output.count` bytes from `passphrase` and `salt` with Argon2id v1.3.
    ///
    /// - Throws: ``SodiumFailure`` when libsodium refuses (out of memory, limits).
    ///
    /// The corresponding libsodium function is `crypto_pwhash` with `crypto_pwhash_ALG_ARGON2ID13`.
    package static func argon2id(
        into output: UnsafeMutableRawBufferPointer,
        passphrase: UnsafeRawBufferPointer,
        salt: UnsafeRawBufferPointer,
        opsLimit: UInt64,
        memLimit: Int
    ) throws(SodiumFailure) {
        try ensureInitialized()
        precondition(salt.count == argon2idSaltByteCount)
        let result = crypto_pwhash(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self),
            UInt64(output.count),
            passphrase.baseAddress?.assumingMemoryBound(to: CChar.self) ?? emptyPassphrase,
            UInt64(passphrase.count),
            salt.baseAddress!.assumingMemoryBound(to: UInt8.self),
            opsLimit,
            memLimit,
            argon2idAlgorithm
        )
        guard result == 0 else { throw SodiumFailure(function: "crypto_pwhash") }
    }

    // MARK: crypto_hash_sha256

    /// SHA-256 of `input` (for public-key pins in curl's `sha256//` syntax, which name SHA-256).
    ///
    /// The corresponding libsodium function is `crypto_hash_sha256`.
    package static func sha256(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(initialized, "libsodium failed to initialise")
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        let result = digest.withUnsafeMutableBytes { out in
            crypto_hash_sha256(
                out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                input.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyInput, UInt64(input.count))
        }
        precondition(result == 0, "crypto_hash_sha256 cannot fail")
        return digest
    }

    // MARK: crypto_generichash (BLAKE2b)

    package static let hashByteCount = Int(crypto_generichash_BYTES)

    /// Unkeyed BLAKE2b with a 32-byte output.
    ///
    /// The corresponding libsodium function is `crypto_generichash`.
    package static func blake2b256(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(initialized, "libsodium failed to initialise")
        var digest = [UInt8](repeating: 0, count: hashByteCount)
        let result = digest.withUnsafeMutableBytes { out in
            crypto_generichash(
                out.baseAddress!.assumingMemoryBound(to: UInt8.self), hashByteCount,
                input.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyInput, UInt64(input.count),
                nil, 0
            )
        }
        precondition(result == 0, "crypto_generichash cannot fail with these arguments")
        return digest
    }

    /// Keyed BLAKE2b of `input` with `outputByteCount` bytes of output (16 to 64).
    ///
    /// The corresponding libsodium function is `crypto_generichash`.
    package static func blake2b(
        _ input: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, outputByteCount: Int
    ) -> [UInt8] {
        precondition(initialized, "libsodium failed to initialise")
        precondition(outputByteCount >= Int(crypto_generichash_BYTES_MIN) && outputByteCount <= Int(crypto_generichash_BYTES_MAX))
        precondition(key.count >= Int(crypto_generichash_KEYBYTES_MIN) && key.count <= Int(crypto_generichash_KEYBYTES_MAX))
        var digest = [UInt8](repeating: 0, count: outputByteCount)
        let result = digest.withUnsafeMutableBytes { out in
            crypto_generichash(
                out.baseAddress!.assumingMemoryBound(to: UInt8.self), outputByteCount,
                input.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyInput, UInt64(input.count),
                key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count
            )
        }
        precondition(result == 0, "crypto_generichash cannot fail with these arguments")
        return digest
    }

    /// Keyed BLAKE2b of `input` written into `out` (16 to 64 bytes): for a derived key that must stay in guarded
    /// memory.
    ///
    /// The corresponding libsodium function is `crypto_generichash`.
    package static func blake2b(
        _ input: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) {
        precondition(initialized, "libsodium failed to initialise")
        precondition(out.count >= Int(crypto_generichash_BYTES_MIN) && out.count <= Int(crypto_generichash_BYTES_MAX))
        precondition(key.count >= Int(crypto_generichash_KEYBYTES_MIN) && key.count <= Int(crypto_generichash_KEYBYTES_MAX))
        let result = crypto_generichash(
            out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
            input.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyInput, UInt64(input.count),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count
        )
        precondition(result == 0, "crypto_generichash cannot fail with these arguments")
    }

    /// A uniformly random integer in `0..<upperBound` (no modulo bias).
    ///
    /// The corresponding libsodium function is `randombytes_uniform`.
    package static func uniformRandom(below upperBound: UInt32) -> UInt32 {
        precondition(initialized, "libsodium failed to initialise")
        return randombytes_uniform(upperBound)
    }

    // Valid addresses for zero-length inputs and outputs (libsodium dereferences nothing when the length is 0), for
    // every file of this module: never written, never read.
    nonisolated(unsafe) static let emptyInput = UnsafePointer(UnsafeMutablePointer<UInt8>.allocate(capacity: 1))
    nonisolated(unsafe) static let emptyOutput = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    private nonisolated(unsafe) static let emptyPassphrase = UnsafePointer(UnsafeMutablePointer<CChar>.allocate(capacity: 1))
}

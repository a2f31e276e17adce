import VaultSodium

/// Runs `body` with `byteCount` bytes of guarded memory (`sodium_malloc`: guard pages, `mlock`, no core dumps) for
/// an intermediate secret (a shared secret, a wrap key, a payload key), zeroed and freed when `body` returns.
func withGuardedScratch<R, E: Error>(
    byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
) throws(E) -> R {
    let pointer = Sodium.allocate(byteCount: byteCount)
    defer { Sodium.free(pointer, byteCount: byteCount) }  // zeroed before it is unmapped or kept
    return try body(UnsafeMutableRawBufferPointer(start: pointer, count: byteCount))
}

extension AgeError {
    /// A libsodium failure, named by its function.
    init(_ failure: SodiumFailure) {
        self = .cryptoFailure(function: failure.function)
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` that keeps `body`'s typed error (the standard library's rethrows `any Error`).
    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { bytes in Result { () throws(E) in try body(bytes) } }
        return try result.get()
    }

    /// `withUnsafeMutableBytes` that keeps `body`'s typed error.
    mutating func withMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeMutableBytes { bytes in Result { () throws(E) in try body(bytes) } }
        return try result.get()
    }
}

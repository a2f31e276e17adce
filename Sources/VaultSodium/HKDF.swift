extension Sodium {
    // MARK: HKDF-SHA-256 (RFC 5869), on crypto_auth_hmacsha256

    /// The size of HKDF-SHA-256's pseudorandom key (SHA-256's output).
    package static let hkdfSHA256PseudorandomKeyByteCount = hmacSHA256ByteCount

    /// The most HKDF-SHA-256 can expand to: 255 blocks of 32 bytes (RFC 5869 §2.3).
    package static let hkdfSHA256MaximumOutputByteCount = 255 * hmacSHA256ByteCount

    /// HKDF-Extract (RFC 5869 §2.2) with SHA-256: `PRK = HMAC-SHA-256(key: salt, message: inputKeyingMaterial)`,
    /// written into `pseudorandomKey` (32 bytes).
    ///
    /// An empty `salt` is RFC 5869's "not provided", a string of 32 zero bytes: HMAC pads a key shorter than its
    /// 64-byte block with zeros, so the empty key and 32 zero bytes are the same key.
    ///
    /// libsodium 1.0.18 has no HKDF function (1.0.19's `crypto_kdf_hkdf_sha256_*` is not in Debian 12); the
    /// corresponding libsodium functions are `crypto_auth_hmacsha256_init`, `_update` and `_final`.
    package static func hkdfSHA256Extract(
        salt: UnsafeRawBufferPointer, inputKeyingMaterial: UnsafeRawBufferPointer,
        into pseudorandomKey: UnsafeMutableRawBufferPointer
    ) {
        precondition(pseudorandomKey.count == hkdfSHA256PseudorandomKeyByteCount)
        hmacSHA256(key: salt, message: inputKeyingMaterial, into: pseudorandomKey)
    }

    /// HKDF-Expand (RFC 5869 §2.3) with SHA-256: fills `output` (1 to 8,160 bytes) with
    /// `T(1) || T(2) || …`, where `T(i) = HMAC-SHA-256(key: PRK, message: T(i-1) || info || i)` and `T(0)` is empty.
    ///
    /// Whole blocks are computed in `output` itself; a last partial block goes through a stack buffer that is
    /// zeroed before the call returns.
    ///
    /// The corresponding libsodium functions are `crypto_auth_hmacsha256_init`, `_update` and `_final`.
    package static func hkdfSHA256Expand(
        pseudorandomKey: UnsafeRawBufferPointer, info: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) {
        precondition(pseudorandomKey.count >= hkdfSHA256PseudorandomKeyByteCount, "RFC 5869: PRK is at least HashLen bytes")
        precondition(output.count > 0 && output.count <= hkdfSHA256MaximumOutputByteCount)
        let blockByteCount = hmacSHA256ByteCount
        withUnsafeTemporaryAllocation(byteCount: blockByteCount + 1, alignment: 1) { scratch in
            defer { zero(scratch.baseAddress!, byteCount: scratch.count) }
            let lastBlock = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<blockByteCount])
            let counter = UnsafeMutableRawBufferPointer(rebasing: scratch[blockByteCount...])
            var previous = UnsafeRawBufferPointer(start: nil, count: 0)
            var offset = 0
            var index: UInt8 = 1
            while offset < output.count {
                counter[0] = index
                let whole = output.count - offset >= blockByteCount
                let block = whole ? UnsafeMutableRawBufferPointer(rebasing: output[offset..<offset + blockByteCount]) : lastBlock
                hmacSHA256(key: pseudorandomKey, messageParts: [previous, info, UnsafeRawBufferPointer(counter)], into: block)
                if !whole {
                    let tail = output.count - offset
                    UnsafeMutableRawBufferPointer(rebasing: output[offset...]).copyMemory(
                        from: UnsafeRawBufferPointer(rebasing: lastBlock[0..<tail]))
                }
                previous = UnsafeRawBufferPointer(block)
                offset += blockByteCount
                index &+= 1
            }
        }
    }

    /// HKDF-SHA-256 (RFC 5869): Extract with `salt`, then Expand with `info` into `output` (1 to 8,160 bytes).
    ///
    /// The pseudorandom key lives on the stack for the duration of the call and is zeroed before it returns.
    ///
    /// The corresponding libsodium functions are `crypto_auth_hmacsha256_init`, `_update` and `_final`.
    package static func hkdfSHA256(
        inputKeyingMaterial: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer, info: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) {
        withUnsafeTemporaryAllocation(byteCount: hkdfSHA256PseudorandomKeyByteCount, alignment: 1) { prk in
            defer { zero(prk.baseAddress!, byteCount: prk.count) }
            hkdfSHA256Extract(salt: salt, inputKeyingMaterial: inputKeyingMaterial, into: prk)
            hkdfSHA256Expand(pseudorandomKey: UnsafeRawBufferPointer(prk), info: info, into: output)
        }
    }
}

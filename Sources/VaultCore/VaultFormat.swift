/// The byte layout of a vault file, version 1. `docs/FORMAT.md` is the specification; this file follows it.
///
/// ```
/// file      = header (124 bytes) || body nonce (24) || body box (>= 16 + 256)
/// header    = magic (8) || version u16 || kdf u8 || flags u8 || opslimit u64 || memlimit u64 || salt (16)
///             || generation u64 || key nonce (24) || wrapped data key (48)          (integers little-endian)
/// body box  = crypto_secretbox_easy(plaintext, body nonce, data key)
/// plaintext = BLAKE2b-256(header) || count u32 || entries || zero padding to a multiple of 256
/// entry     = name length u16 || name (UTF-8) || value length u32 || value || created i64 || modified i64
/// ```
enum VaultFormat {
    static let magic: [UInt8] = [0x89, 0x56, 0x41, 0x55, 0x4C, 0x54, 0x0D, 0x0A]  // "\x89VAULT\r\n"
    static let version: UInt16 = 1
    static let kdfArgon2id13: UInt8 = 2  // crypto_pwhash_ALG_ARGON2ID13

    static let headerByteCount = 124
    static let nonceByteCount = 24
    static let macByteCount = 16
    static let dataKeyByteCount = 32
    static let wrappedKeyByteCount = dataKeyByteCount + macByteCount
    static let headerHashByteCount = 32
    static let paddingQuantum = 256
    /// The smallest valid file: header, body nonce, and a box around one padding quantum.
    static let minimumFileByteCount = headerByteCount + nonceByteCount + macByteCount + paddingQuantum

    static let maximumNameByteCount = 4096
    static let maximumValueByteCount = 64 << 20
    /// The largest plaintext a writer produces and a reader accepts: 1 GiB (16 values of the maximum size).
    static let maximumPlaintextByteCount = 1 << 30
    /// The largest valid file (1 GiB + 164 bytes): larger files are refused before they are read.
    static let maximumFileByteCount = headerByteCount + nonceByteCount + macByteCount + maximumPlaintextByteCount

    /// The parsed, not yet authenticated header.
    struct Header: Equatable, Sendable {
        var parameters: Argon2id.Parameters
        var salt: [UInt8]
        var generation: UInt64
        var keyNonce: [UInt8]
        var wrappedKey: [UInt8]

        /// The generation of the next write: one more than this header's. At 2^64−1 there is none (the
        /// generation never wraps: a lower one would look like a rollback).
        func nextGeneration(path: String) throws -> UInt64 {
            guard generation < UInt64.max else { throw VaultError.generationExhausted(path: path) }
            return generation + 1
        }

        /// The 124 header bytes, exactly as written.
        func encoded() -> [UInt8] {
            var out = [UInt8]()
            out.reserveCapacity(headerByteCount)
            out += magic
            out.appendLittleEndian(version)
            out.append(kdfArgon2id13)
            out.append(0)  // flags
            out.appendLittleEndian(parameters.opsLimit)
            out.appendLittleEndian(parameters.memLimitBytes)
            out += salt
            out.appendLittleEndian(generation)
            out += keyNonce
            out += wrappedKey
            assert(out.count == headerByteCount)
            return out
        }

        /// Parses the header of `file`, checking everything that can be checked without a key.
        ///
        /// The order matters: magic, size, version, algorithm, flags, then the KDF range (`policy`), so that
        /// a forged header is refused before the KDF runs.
        static func parse(
            _ file: UnsafeRawBufferPointer, path: String, policy: Argon2id.KDFPolicy
        ) throws -> Header {
            guard file.count >= magic.count, file.prefix(magic.count).elementsEqual(magic) else {
                if file.count < magic.count, file.elementsEqual(magic.prefix(file.count)) {
                    throw VaultError.corrupt(path: path, reason: .truncated(byteCount: file.count))
                }
                throw VaultError.corrupt(path: path, reason: .badMagic)
            }
            guard file.count <= maximumFileByteCount else {
                throw VaultError.corrupt(path: path, reason: .tooLarge(byteCount: file.count))
            }
            guard file.count >= headerByteCount + nonceByteCount else {
                throw VaultError.corrupt(path: path, reason: .truncated(byteCount: file.count))
            }
            var reader = ByteReader(file)
            reader.skip(magic.count)
            let version = reader.readUInt16()
            guard version == VaultFormat.version else {
                throw VaultError.unsupportedVersion(path: path, version: Int(version))
            }
            let kdf = reader.readUInt8()
            guard kdf == kdfArgon2id13 else { throw VaultError.unsupportedKDF(path: path, algorithm: Int(kdf)) }
            let flags = reader.readUInt8()
            guard flags == 0 else { throw VaultError.corrupt(path: path, reason: .unknownFlags(flags)) }
            let parameters = Argon2id.Parameters(opsLimit: reader.readUInt64(), memLimitBytes: reader.readUInt64())
            guard policy.accepts(parameters) else {
                throw VaultError.kdfParametersOutOfRange(
                    path: path, opsLimit: parameters.opsLimit, memLimitBytes: parameters.memLimitBytes)
            }
            guard file.count >= minimumFileByteCount else {
                throw VaultError.corrupt(path: path, reason: .truncated(byteCount: file.count))
            }
            guard (file.count - headerByteCount - nonceByteCount - macByteCount) % paddingQuantum == 0 else {
                throw VaultError.corrupt(path: path, reason: .sizeMismatch(byteCount: file.count))
            }
            return Header(
                parameters: parameters,
                salt: reader.readBytes(Argon2id.saltByteCount),
                generation: reader.readUInt64(),
                keyNonce: reader.readBytes(nonceByteCount),
                wrappedKey: reader.readBytes(wrappedKeyByteCount)
            )
        }
    }
}

/// Reads little-endian integers from a buffer whose length the caller has checked.
struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    var offset = 0

    init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    var remaining: Int { buffer.count - offset }

    mutating func skip(_ count: Int) { offset += count }

    mutating func readUInt8() -> UInt8 {
        defer { offset += 1 }
        return buffer[offset]
    }

    mutating func readUInt16() -> UInt16 { readInteger() }
    mutating func readUInt32() -> UInt32 { readInteger() }
    mutating func readUInt64() -> UInt64 { readInteger() }
    mutating func readInt64() -> Int64 { Int64(bitPattern: readInteger()) }

    private mutating func readInteger<T: FixedWidthInteger>() -> T {
        precondition(remaining >= MemoryLayout<T>.size)
        defer { offset += MemoryLayout<T>.size }
        return T(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// A big-endian integer (``ByteWriter/writeBigEndian(_:)``).
    mutating func readBigEndian<T: FixedWidthInteger>(_: T.Type = T.self) -> T {
        precondition(remaining >= MemoryLayout<T>.size)
        defer { offset += MemoryLayout<T>.size }
        return T(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    mutating func readBytes(_ count: Int) -> [UInt8] {
        precondition(remaining >= count)
        defer { offset += count }
        return Array(buffer[offset..<offset + count])
    }
}

extension Array where Element == UInt8 {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

/// Writes little-endian integers into a buffer sized in advance.
struct ByteWriter {
    let buffer: UnsafeMutableRawBufferPointer
    var offset = 0

    init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    mutating func write<T: FixedWidthInteger>(_ value: T) {
        buffer.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
    }

    /// `value`'s bytes most significant first (ids are stored so, to read as hex in a dump).
    mutating func writeBigEndian<T: FixedWidthInteger>(_ value: T) {
        buffer.storeBytes(of: value.bigEndian, toByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
    }

    mutating func write(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<offset + bytes.count]).copyMemory(from: bytes)
        offset += bytes.count
    }
}

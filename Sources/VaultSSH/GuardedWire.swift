import VaultCore

/// SSH's wire encoding read in place from guarded memory (a ``SecureBytes`` region, valid only inside its
/// `withUnsafeBytes`): fields are views of the region, never copies, so a private key's parts go from the vault's
/// field to guarded regions of their own with no copy in ordinary memory. ``SSHReader``'s checks and error words.
struct GuardedReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var isAtEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    mutating func byte(_ field: String) throws(SSHError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated(field: field) }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint32(_ field: String) throws(SSHError) -> UInt32 {
        guard remaining >= 4 else { throw .truncated(field: field) }
        defer { offset += 4 }
        return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A `string`, as a view of the region.
    mutating func string(_ field: String) throws(SSHError) -> UnsafeRawBufferPointer {
        let length = try uint32(field)
        guard Int(length) <= remaining else { throw .truncated(field: field) }
        defer { offset += Int(length) }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + Int(length)])
    }

    /// A `string` that is not secret (a type name, a public key), copied out.
    mutating func publicBytes(_ field: String) throws(SSHError) -> [UInt8] { Array(try string(field)) }

    /// A `string` that must be UTF-8 text (never a secret: names and comments).
    mutating func text(_ field: String) throws(SSHError) -> String {
        guard let text = String(validating: try string(field), as: UTF8.self) else { throw .malformed(field: field, reason: "not UTF-8") }
        return text
    }

    /// An `mpint` that must not be negative, as a view of its unsigned big-endian bytes without leading zeros.
    mutating func positiveMPInt(_ field: String) throws(SSHError) -> UnsafeRawBufferPointer {
        let value = try string(field)
        if let first = value.first, first & 0x80 != 0 { throw .malformed(field: field, reason: "negative") }
        let zeros = value.prefix { $0 == 0 }.count
        return UnsafeRawBufferPointer(rebasing: value[zeros...])
    }

    func requireEnd(_ field: String) throws(SSHError) {
        guard isAtEnd else { throw .malformed(field: field, reason: "\(remaining) bytes after its end") }
    }
}

extension SecureBytes {
    /// A copy of `bytes` in a guarded region of its own.
    static func guarded(_ bytes: UnsafeRawBufferPointer) -> SecureBytes {
        SecureBytes(count: bytes.count) { $0.copyMemory(from: bytes) }
    }

    /// The standard base64 (RFC 4648 §4) of `text` decoded into guarded memory, whitespace skipped, padding
    /// optional; `nil` when it is not base64. The only state outside the region is one 32-bit accumulator.
    static func base64Decoded(_ text: UnsafeRawBufferPointer) -> SecureBytes? {
        func value(_ char: UInt8) -> UInt32? {
            switch char {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): return UInt32(char - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): return UInt32(char - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(char - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+"): return 62
            case UInt8(ascii: "/"): return 63
            default: return nil
            }
        }
        func isSpace(_ char: UInt8) -> Bool { char == 0x20 || char == 0x09 || char == 0x0A || char == 0x0D }
        struct NotBase64: Error {}
        let digits = text.reduce(0) { $0 + (isSpace($1) || $1 == UInt8(ascii: "=") ? 0 : 1) }
        return try? SecureBytes(capacity: digits / 4 * 3 + 2) { (out: inout Appender) throws(NotBase64) in
            var accumulator: UInt32 = 0, count = 0, padding = 0
            for char in text where !isSpace(char) {
                if char == UInt8(ascii: "=") { padding += 1; continue }
                guard padding == 0, let six = value(char) else { throw NotBase64() }
                accumulator = accumulator << 6 | six
                count += 1
                if count % 4 == 0 {
                    out.append(UInt8(accumulator >> 16 & 0xFF))
                    out.append(UInt8(accumulator >> 8 & 0xFF))
                    out.append(UInt8(accumulator & 0xFF))
                    accumulator = 0
                }
            }
            switch count % 4 {
            case 0: guard padding == 0 else { throw NotBase64() }
            case 2:
                guard padding == 0 || padding == 2 else { throw NotBase64() }
                out.append(UInt8(accumulator >> 4 & 0xFF))
            case 3:
                guard padding <= 1 else { throw NotBase64() }
                out.append(UInt8(accumulator >> 10 & 0xFF))
                out.append(UInt8(accumulator >> 2 & 0xFF))
            default: throw NotBase64()
            }
        }
    }
}

extension SecureBytes {
    /// `bytes` in base64 between `begin` and `end` lines, 70 characters a line (OpenSSH's armor), in guarded memory.
    static func armored(_ bytes: UnsafeRawBufferPointer, begin: String, end: String) -> SecureBytes {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let encoded = (bytes.count + 2) / 3 * 4
        let capacity = begin.utf8.count + end.utf8.count + 2 + encoded + (encoded + 69) / 70
        return SecureBytes(capacity: capacity) { out in
            out.append(begin)
            out.append(UInt8(ascii: "\n"))
            var column = 0
            func emit(_ char: UInt8, _ out: inout Appender) {
                out.append(char)
                column += 1
                if column == 70 { out.append(UInt8(ascii: "\n")); column = 0 }
            }
            var index = 0
            while index < bytes.count {
                let left = bytes.count - index
                let group = UInt32(bytes[index]) << 16 | (left > 1 ? UInt32(bytes[index + 1]) << 8 : 0) | (left > 2 ? UInt32(bytes[index + 2]) : 0)
                emit(alphabet[Int(group >> 18 & 63)], &out)
                emit(alphabet[Int(group >> 12 & 63)], &out)
                emit(left > 1 ? alphabet[Int(group >> 6 & 63)] : UInt8(ascii: "="), &out)
                emit(left > 2 ? alphabet[Int(group & 63)] : UInt8(ascii: "="), &out)
                index += 3
            }
            if column != 0 { out.append(UInt8(ascii: "\n")) }
            out.append(end)
            out.append(UInt8(ascii: "\n"))
        }
    }
}

extension SecureBytes.Appender {
    /// SSH's `uint32`.
    mutating func appendSSH(uint32 value: UInt32) {
        for shift in [24, 16, 8, 0] { append(UInt8(value >> UInt32(shift) & 0xFF)) }
    }

    /// SSH's `string` of `bytes`.
    mutating func appendSSH(string bytes: UnsafeRawBufferPointer) {
        appendSSH(uint32: UInt32(bytes.count))
        append(bytes)
    }

    mutating func appendSSH(string bytes: [UInt8]) {
        bytes.withUnsafeBytes { appendSSH(string: $0) }
    }

    mutating func appendSSH(string text: String) {
        appendSSH(string: Array(text.utf8))
    }

    /// SSH's `mpint` of an unsigned big-endian number (leading zeros dropped, a zero byte before a set top bit).
    mutating func appendSSH(mpint unsigned: UnsafeRawBufferPointer) {
        let zeros = unsigned.prefix { $0 == 0 }.count
        let trimmed = UnsafeRawBufferPointer(rebasing: unsigned[zeros...])
        let pad = (trimmed.first ?? 0) & 0x80 != 0
        appendSSH(uint32: UInt32(trimmed.count + (pad ? 1 : 0)))
        if pad { append(UInt8(0)) }
        append(trimmed)
    }

    /// SSH's `mpint` of a secret number held in guarded memory.
    mutating func appendSSH(mpint secret: SecureBytes) {
        secret.withUnsafeBytes { appendSSH(mpint: $0) }
    }
}

/// The room an SSH `string` or `mpint` of `count` bytes takes on the wire, at most.
func sshFieldSize(_ count: Int) -> Int { 4 + 1 + count }

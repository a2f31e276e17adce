/// SSH's wire encoding (RFC 4251 §5): `uint32` big-endian, `string` (a length and bytes), `mpint` (two's
/// complement, big-endian, the shortest form), `boolean`; what keys, signatures and the agent protocol are made of.
public struct SSHReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int

    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    public var isAtEnd: Bool { offset == bytes.count }
    public var remaining: Int { bytes.count - offset }

    public mutating func byte(_ field: String) throws(SSHError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated(field: field) }
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func bool(_ field: String) throws(SSHError) -> Bool { try byte(field) != 0 }

    public mutating func uint32(_ field: String) throws(SSHError) -> UInt32 {
        guard remaining >= 4 else { throw .truncated(field: field) }
        defer { offset += 4 }
        return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    public mutating func raw(_ count: Int, _ field: String) throws(SSHError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw .truncated(field: field) }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    public mutating func string(_ field: String) throws(SSHError) -> [UInt8] {
        let length = try uint32(field)
        guard Int(length) <= remaining else { throw .truncated(field: field) }
        return try raw(Int(length), field)
    }

    /// A `string` that must be UTF-8 text.
    public mutating func text(_ field: String) throws(SSHError) -> String {
        let value = try string(field)
        guard let text = String(validating: value, as: UTF8.self) else { throw .malformed(field: field, reason: "not UTF-8") }
        return text
    }

    /// An `mpint` that must not be negative, as unsigned big-endian bytes without leading zeros.
    public mutating func positiveMPInt(_ field: String) throws(SSHError) -> [UInt8] {
        let value = try string(field)
        if let first = value.first, first & 0x80 != 0 { throw .malformed(field: field, reason: "negative") }
        return Array(value.drop { $0 == 0 })
    }

    /// Nothing may follow.
    public func requireEnd(_ field: String) throws(SSHError) {
        guard isAtEnd else { throw .malformed(field: field, reason: "\(remaining) bytes after its end") }
    }
}

/// Builds SSH's wire encoding.
public struct SSHWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func byte(_ value: UInt8) { bytes.append(value) }
    public mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }

    public mutating func uint32(_ value: UInt32) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    public mutating func raw(_ value: some Sequence<UInt8>) { bytes += value }

    public mutating func string(_ value: some Collection<UInt8>) {
        uint32(UInt32(value.count))
        bytes += value
    }

    public mutating func string(_ value: String) { string(Array(value.utf8)) }

    /// An unsigned big-endian number as an `mpint`: leading zeros dropped, one zero byte added when the top bit is set.
    public mutating func mpint(_ unsigned: some Collection<UInt8>) {
        let trimmed = Array(unsigned.drop { $0 == 0 })
        string(trimmed.first.map { $0 & 0x80 != 0 } == true ? [0] + trimmed : trimmed)
    }
}

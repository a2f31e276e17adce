/// The base64 of age's header: RFC 4648 §4's standard alphabet without `=` padding, canonical (RFC 4648 §3.5:
/// the bits after the last whole byte are zero). Encoders write only that; decoders refuse anything else,
/// padding and line breaks included (C2SP `age.md`, "Conventions used in this document").
package enum AgeBase64 {
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// The value of each ASCII character in ``alphabet``, 0xFF for the others.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }()

    /// The number of characters that encode `byteCount` bytes (no padding).
    static func encodedCount(_ byteCount: Int) -> Int { (byteCount * 8 + 5) / 6 }

    /// The number of bytes `characterCount` characters decode to, or nil for a length no encoder writes (4n + 1).
    static func decodedCount(_ characterCount: Int) -> Int? {
        characterCount % 4 == 1 ? nil : characterCount * 6 / 8
    }

    /// Appends the encoding of `bytes` to `output`.
    static func encode(_ bytes: some Collection<UInt8>, appendingTo output: inout [UInt8]) {
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = (accumulator << 8 | UInt32(byte)) & 0x3FFF
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(alphabet[Int(accumulator >> UInt32(bits) & 63)])
            }
        }
        if bits > 0 { output.append(alphabet[Int(accumulator << UInt32(6 - bits) & 63)]) }
    }

    /// The encoding of `bytes`.
    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(encodedCount(bytes.count))
        encode(bytes, appendingTo: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes canonical unpadded base64.
    ///
    /// - Throws: `failure` for a character outside the alphabet (`=`, CR and LF included), a length no encoder
    ///   writes, or non-zero bits after the last whole byte.
    package static func decode(_ text: some Collection<UInt8>, failure: AgeError) throws(AgeError) -> [UInt8] {
        guard let count = decodedCount(text.count) else { throw failure }
        var output: [UInt8] = []
        output.reserveCapacity(count)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            let value = values[Int(character)]
            guard value != 0xFF else { throw failure }
            accumulator = (accumulator << 6 | UInt32(value)) & 0x3FFF
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(accumulator >> UInt32(bits) & 0xFF))
            }
        }
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { throw failure }
        return output
    }
}

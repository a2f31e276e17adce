import VaultCore

/// RFC 4648 base32 (the alphabet `A`–`Z`, `2`–`7`), as TOTP secrets are written: any case, spaces and dashes
/// ignored (authenticator apps show secrets in groups), `=` padding optional but only at the end.
enum Base32 {
    /// The value of one base32 character, or `nil`.
    static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return byte - UInt8(ascii: "a")
        case UInt8(ascii: "2")...UInt8(ascii: "7"): return byte - UInt8(ascii: "2") + 26
        default: return nil
        }
    }

    /// Whether `byte` is skipped between characters (a space or a dash of a grouped secret).
    static func isSeparator(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "-")
    }

    /// Decodes `text` straight into guarded memory: the secret is never in ordinary memory.
    ///
    /// Trailing bits that do not make a whole byte must be zero, as RFC 4648 §3.5 asks of canonical encodings;
    /// a length no encoder makes (1, 3 or 6 characters in the last group) is refused.
    ///
    /// - Throws: ``OTPError/invalidBase32`` for any other character, padding that is not at the end, a length
    ///   no encoder makes, or nothing at all.
    static func decode(_ text: UnsafeRawBufferPointer) throws(OTPError) -> SecureBytes {
        var characters = 0
        var padded = false
        for byte in text {
            if isSeparator(byte) { continue }
            if byte == UInt8(ascii: "=") { padded = true; continue }
            guard !padded, value(of: byte) != nil else { throw .invalidBase32 }
            characters += 1
        }
        guard characters > 0, ![1, 3, 6].contains(characters % 8) else { throw .invalidBase32 }
        let count = characters * 5 / 8
        var badTail = false
        let decoded = SecureBytes(count: count) { output in
            var accumulator: UInt64 = 0
            var bits = 0
            var index = 0
            for byte in text {
                guard let value = value(of: byte) else { continue }
                accumulator = (accumulator << 5) | UInt64(value)
                bits += 5
                if bits >= 8 {
                    bits -= 8
                    output[index] = UInt8(truncatingIfNeeded: accumulator >> UInt64(bits))
                    index += 1
                }
            }
            badTail = bits > 0 && accumulator & ((1 << UInt64(bits)) - 1) != 0
            accumulator = 0
        }
        guard !badTail else { throw .invalidBase32 }
        return decoded
    }
}

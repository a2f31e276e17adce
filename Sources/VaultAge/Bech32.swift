import VaultCore

/// Bech32 (BIP 173) as age uses it (C2SP `age.md`, "Conventions used in this document"): without BIP 173's
/// 90-character limit on the whole string; all upper case or all lower case, never mixed; the checksum always
/// computed over the lower-case string. age writes recipients in lower case (`age1…`) and identities in upper
/// case (`AGE-SECRET-KEY-1…`).
///
/// Decoding works on bytes and writes the data straight into its destination, so that a secret key's bits are
/// never gathered in ordinary memory (``decode(_:)-(UnsafeRawBufferPointer)`` gives ``SecureBytes``).
public enum Bech32 {
    /// The data alphabet: character `alphabet[v]` stands for the 5-bit value `v`.
    public static let alphabet: [UInt8] = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)

    /// The number of checksum characters at the end of every Bech32 string.
    public static let checksumCharacterCount = 6

    /// The separator between the human-readable part and the data: the last `1` of the string.
    static let separator = UInt8(ascii: "1")

    /// The value of each lower-case ASCII character in ``alphabet``, 0xFF for the others.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 128)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }()

    /// BIP 173's checksum: a BCH code over 5-bit values, computed one value at a time.
    struct Checksum {
        private static let generator: [UInt32] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3]
        private(set) var value: UInt32 = 1

        /// `bech32_polymod`'s step for one 5-bit value.
        mutating func add(_ fiveBits: UInt8) {
            let top = value >> 25
            value = (value & 0x1ff_ffff) << 5 ^ UInt32(fiveBits)
            for i in 0..<5 where (top >> UInt32(i)) & 1 == 1 {
                value ^= Self.generator[i]
            }
        }

        /// BIP 173's `hrp_expand`, over the lower-case human-readable part.
        mutating func add(humanReadablePart: some Sequence<UInt8>) {
            for byte in humanReadablePart { add(Bech32.lowercased(byte) >> 5) }
            add(0)
            for byte in humanReadablePart { add(Bech32.lowercased(byte) & 31) }
        }
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    static func isUpperCase(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
    static func isLowerCase(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }

    // MARK: Encoding

    /// The length of the Bech32 encoding of `dataByteCount` bytes under a human-readable part of
    /// `humanReadablePartByteCount` characters: the part, `1`, one character per 5 bits (rounded up), the checksum.
    public static func encodedByteCount(humanReadablePartByteCount: Int, dataByteCount: Int) -> Int {
        humanReadablePartByteCount + 1 + (dataByteCount * 8 + 4) / 5 + checksumCharacterCount
    }

    /// Encodes `data` under `humanReadablePart` into `output`, whose count must be
    /// ``encodedByteCount(humanReadablePartByteCount:dataByteCount:)``: for a secret key, whose encoding is as
    /// secret as the key and belongs in guarded memory.
    ///
    /// The output is in the case of `humanReadablePart`, which must not mix cases and must hold only the
    /// characters `!` to `~` (a programming error otherwise).
    public static func encode(
        humanReadablePart: String, data: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) {
        let hrp = Array(humanReadablePart.utf8)
        precondition(!hrp.isEmpty && hrp.allSatisfy { $0 >= 33 && $0 <= 126 }, "invalid Bech32 human-readable part")
        precondition(!(hrp.contains(where: isUpperCase) && hrp.contains(where: isLowerCase)), "mixed-case human-readable part")
        precondition(output.count == encodedByteCount(humanReadablePartByteCount: hrp.count, dataByteCount: data.count))
        let upper = hrp.contains(where: isUpperCase)
        var checksum = Checksum()
        checksum.add(humanReadablePart: hrp)
        var position = 0
        func emit(_ byte: UInt8) {
            output[position] = byte
            position += 1
        }
        func emitValue(_ value: UInt8) {
            checksum.add(value)
            let character = alphabet[Int(value)]
            emit(upper && isLowerCase(character) ? character - 32 : character)
        }
        for byte in hrp { emit(byte) }
        emit(separator)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in data {
            accumulator = (accumulator << 8 | UInt32(byte)) & 0xFFF  // at most 12 bits are ever pending
            bits += 8
            while bits >= 5 {
                bits -= 5
                emitValue(UInt8(accumulator >> UInt32(bits) & 31))
            }
        }
        if bits > 0 { emitValue(UInt8(accumulator << UInt32(5 - bits) & 31)) }
        accumulator = 0
        for _ in 0..<checksumCharacterCount { checksum.add(0) }
        let polymod = checksum.value ^ 1
        for i in 0..<checksumCharacterCount {
            let value = UInt8(polymod >> UInt32(5 * (5 - i)) & 31)
            let character = alphabet[Int(value)]
            emit(upper && isLowerCase(character) ? character - 32 : character)
        }
        precondition(position == output.count)
    }

    /// The Bech32 encoding of `data` (public data: a recipient) under `humanReadablePart`, in its case.
    public static func encode(humanReadablePart: String, data: some Collection<UInt8>) -> String {
        let count = encodedByteCount(humanReadablePartByteCount: humanReadablePart.utf8.count, dataByteCount: data.count)
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            Array(data).withUnsafeBytes { encode(humanReadablePart: humanReadablePart, data: $0, into: UnsafeMutableRawBufferPointer(buffer)) }
            initialized = count
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Decoding

    /// Checks everything but the padding bits: case, separator, characters, checksum. Returns where the separator
    /// is and how many bytes the data part holds.
    static func check(_ text: UnsafeRawBufferPointer) throws(AgeError) -> (separator: Int, byteCount: Int) {
        if text.contains(where: isUpperCase) && text.contains(where: isLowerCase) {
            throw .invalidBech32(.mixedCase)
        }
        guard let separatorIndex = text.lastIndex(of: separator), separatorIndex >= 1 else {
            throw .invalidBech32(.missingSeparator)
        }
        let dataCharacterCount = text.count - separatorIndex - 1
        guard dataCharacterCount >= checksumCharacterCount else { throw .invalidBech32(.tooShort) }
        let hrp = UnsafeRawBufferPointer(rebasing: text[0..<separatorIndex])
        guard hrp.allSatisfy({ $0 >= 33 && $0 <= 126 }) else { throw .invalidBech32(.invalidCharacter) }
        var checksum = Checksum()
        checksum.add(humanReadablePart: hrp)
        for byte in text[(separatorIndex + 1)...] {
            let character = lowercased(byte)
            guard character < 128, values[Int(character)] != 0xFF else { throw .invalidBech32(.invalidCharacter) }
            checksum.add(values[Int(character)])
        }
        guard checksum.value == 1 else { throw .invalidBech32(.invalidChecksum) }
        let bitCount = (dataCharacterCount - checksumCharacterCount) * 5
        // BIP 173's convertbits without padding: fewer than 5 leftover bits (a whole unused group is refused).
        guard bitCount % 8 < 5 else { throw .invalidBech32(.invalidPadding) }
        return (separatorIndex, bitCount / 8)
    }

    /// Writes the data part of a checked string (``check(_:)``) into `output`; throws if the leftover bits are
    /// not zero.
    static func decodeData(
        _ text: UnsafeRawBufferPointer, separator separatorIndex: Int, into output: UnsafeMutableRawBufferPointer
    ) throws(AgeError) {
        var accumulator: UInt32 = 0
        var bits = 0
        var position = 0
        defer { accumulator = 0 }
        for byte in text[(separatorIndex + 1)..<(text.count - checksumCharacterCount)] {
            accumulator = (accumulator << 5 | UInt32(values[Int(lowercased(byte))])) & 0x1FFF
            bits += 5
            if bits >= 8 {
                bits -= 8
                output[position] = UInt8(accumulator >> UInt32(bits) & 0xFF)
                position += 1
            }
        }
        precondition(position == output.count)
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { throw .invalidBech32(.invalidPadding) }
    }

    /// Decodes a Bech32 string into guarded memory: for a secret key. The human-readable part is returned in the
    /// case of the input (age compares it case-sensitively: identities are upper case, recipients lower case).
    ///
    /// - Throws: ``AgeError/invalidBech32(_:)``.
    public static func decode(_ text: UnsafeRawBufferPointer) throws(AgeError) -> (humanReadablePart: String, data: SecureBytes) {
        let (separatorIndex, byteCount) = try check(text)
        let data = try SecureBytes(count: byteCount) { (output) throws(AgeError) in
            try decodeData(text, separator: separatorIndex, into: output)
        }
        return (String(decoding: text[0..<separatorIndex], as: UTF8.self), data)
    }

    /// Decodes a Bech32 string of public data (a recipient).
    ///
    /// - Throws: ``AgeError/invalidBech32(_:)``.
    public static func decode(_ string: String) throws(AgeError) -> (humanReadablePart: String, data: [UInt8]) {
        try Array(string.utf8).withBytes { (text) throws(AgeError) in
            let (separatorIndex, byteCount) = try check(text)
            var data = [UInt8](repeating: 0, count: byteCount)
            try data.withMutableBytes { (output) throws(AgeError) in
                try decodeData(text, separator: separatorIndex, into: output)
            }
            return (String(decoding: text[0..<separatorIndex], as: UTF8.self), data)
        }
    }
}

import VaultCore

/// An export being written, in guarded memory (``SecretBuffer``): the values go from the vault's guarded memory
/// into this buffer, escaped on the way, never through a `String`.
final class TextOutput {
    let buffer = SecretBuffer()
    /// How many CSV fields written start with `=`, `+`, `-` or `@`, which a spreadsheet may run as a formula.
    private(set) var formulaLikeFields = 0
    static let formulaStarts: Set<UInt8> = [UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "@")]

    func append(_ text: String) {
        var text = text
        text.withUTF8 { buffer.append(UnsafeRawBufferPointer($0)) }
    }

    func append(byte: UInt8) {
        withUnsafeBytes(of: byte) { buffer.append($0) }
    }

    /// The finished export.
    func result() -> SecureBytes {
        defer { buffer.wipe() }
        return buffer.secureBytes()
    }

    // MARK: JSON

    /// `bytes` (valid UTF-8) as a JSON string, quotes included: `"` and `\` escaped, control characters as `\uXXXX`
    /// (`\n`, `\r`, `\t` by their short forms).
    func jsonString(_ bytes: UnsafeRawBufferPointer) {
        append(byte: UInt8(ascii: "\""))
        var start = 0
        for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            if start < index { buffer.append(UnsafeRawBufferPointer(rebasing: bytes[start..<index])) }
            switch byte {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case 0x0A: append("\\n")
            case 0x0D: append("\\r")
            case 0x09: append("\\t")
            default: append("\\u00" + String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16))
            }
            start = index + 1
        }
        if start < bytes.count { buffer.append(UnsafeRawBufferPointer(rebasing: bytes[start...])) }
        append(byte: UInt8(ascii: "\""))
    }

    func jsonString(_ text: String) {
        var text = text
        text.withUTF8 { jsonString(UnsafeRawBufferPointer($0)) }
    }

    /// `bytes` in standard base64 with padding (RFC 4648 §4).
    func base64(_ bytes: UnsafeRawBufferPointer) {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var index = 0
        var group = [UInt8](repeating: 0, count: 4)
        defer { for i in group.indices { group[i] = 0 } }
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            let b0 = UInt32(bytes[index]), b1 = count > 1 ? UInt32(bytes[index + 1]) : 0, b2 = count > 2 ? UInt32(bytes[index + 2]) : 0
            let word = b0 << 16 | b1 << 8 | b2
            group[0] = alphabet[Int(word >> 18 & 63)]
            group[1] = alphabet[Int(word >> 12 & 63)]
            group[2] = count > 1 ? alphabet[Int(word >> 6 & 63)] : UInt8(ascii: "=")
            group[3] = count > 2 ? alphabet[Int(word & 63)] : UInt8(ascii: "=")
            group.withUnsafeBytes { buffer.append($0) }
            index += 3
        }
    }

    // MARK: XML

    /// `bytes` (valid UTF-8 with only characters XML 1.0 allows: ``isXMLText(_:)``) with `&`, `<`, `>`, `"` escaped;
    /// a carriage return as `&#13;`, so that a parser's line-end normalisation keeps it.
    func xmlText(_ bytes: UnsafeRawBufferPointer) {
        var start = 0
        for (index, byte) in bytes.enumerated() {
            let escaped: String
            switch byte {
            case UInt8(ascii: "&"): escaped = "&amp;"
            case UInt8(ascii: "<"): escaped = "&lt;"
            case UInt8(ascii: ">"): escaped = "&gt;"
            case UInt8(ascii: "\""): escaped = "&quot;"
            case 0x0D: escaped = "&#13;"
            default: continue
            }
            if start < index { buffer.append(UnsafeRawBufferPointer(rebasing: bytes[start..<index])) }
            append(escaped)
            start = index + 1
        }
        if start < bytes.count { buffer.append(UnsafeRawBufferPointer(rebasing: bytes[start...])) }
    }

    func xmlText(_ text: String) {
        var text = text
        text.withUTF8 { xmlText(UnsafeRawBufferPointer($0)) }
    }

    /// Whether `bytes` is UTF-8 made only of characters XML 1.0 allows (tab, newline, carriage return, U+0020 and
    /// above but for the surrogates and U+FFFE/U+FFFF): what an XML export can carry.
    static func isXMLText(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let text = String(validating: bytes, as: UTF8.self) else { return false }
        return isXMLText(text)
    }

    static func isXMLText(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { scalar in
            let value = scalar.value
            return value == 0x9 || value == 0xA || value == 0xD || (value >= 0x20 && value != 0xFFFE && value != 0xFFFF)
        }
    }

    // MARK: CSV

    /// `bytes` as one CSV field (RFC 4180): always quoted, `"` doubled.
    func csvField(_ bytes: UnsafeRawBufferPointer) {
        if let first = bytes.first, Self.formulaStarts.contains(first) { formulaLikeFields += 1 }
        append(byte: UInt8(ascii: "\""))
        var start = 0
        for (index, byte) in bytes.enumerated() where byte == UInt8(ascii: "\"") {
            buffer.append(UnsafeRawBufferPointer(rebasing: bytes[start...index]))
            append(byte: UInt8(ascii: "\""))
            start = index + 1
        }
        if start < bytes.count { buffer.append(UnsafeRawBufferPointer(rebasing: bytes[start...])) }
        append(byte: UInt8(ascii: "\""))
    }

    func csvField(_ text: String) {
        var text = text
        text.withUTF8 { csvField(UnsafeRawBufferPointer($0)) }
    }
}

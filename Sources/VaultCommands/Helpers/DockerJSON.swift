import FoundationEssentials
import Glibc
import VaultCore

// The JSON of docker-credential-helpers' protocol, read and written in guarded memory: the `Secret` never passes
// through a `String` (Foundation's JSON coders would copy it into ordinary memory).

/// A JSON object whose values are strings, e.g. `{"ServerURL":"…","Username":"…","Secret":"…"}`, read from
/// guarded memory; each value is decoded into guarded memory (the `Secret` never passes through a `String`).
/// Keys other than strings, and values other than strings, refuse the input.
enum JSONStringObject {
    static func parse(_ input: SecureBytes) throws -> [String: SecureBytes] {
        try input.withUnsafeBytes { bytes in
            var parser = Parser(bytes: bytes)
            return try parser.object()
        }
    }

    struct Parser {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        static let malformed = DockerHelperFailure("the input is not a JSON object of strings")

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ byte: UInt8) throws {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else { throw Self.malformed }
            index += 1
        }

        mutating func object() throws -> [String: SecureBytes] {
            var result: [String: SecureBytes] = [:]
            try expect(UInt8(ascii: "{"))
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    let key = try string()
                    try expect(UInt8(ascii: ":"))
                    let value = try string()
                    guard let name = key.stringValue else { throw Self.malformed }
                    result[name] = value
                    skipSpace()
                    guard index < bytes.count else { throw Self.malformed }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "}") { index += 1; break }
                    throw Self.malformed
                }
            }
            skipSpace()
            guard index == bytes.count else { throw Self.malformed }
            return result
        }

        /// A JSON string, decoded: measured first, then written into guarded memory.
        mutating func string() throws -> SecureBytes {
            try expect(UInt8(ascii: "\""))
            let start = index
            var count = 0
            try walk { _ in count += 1 }
            index = start
            return try SecureBytes(capacity: count) { out in
                try walk { out.append($0) }
            }
        }

        /// Calls `emit` with each decoded UTF-8 byte of the string starting at `index`, and moves past its quote.
        mutating func walk(_ emit: (UInt8) -> Void) throws {
            while true {
                guard index < bytes.count else { throw Self.malformed }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw Self.malformed }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): emit(escape)
                    case UInt8(ascii: "b"): emit(0x08)
                    case UInt8(ascii: "f"): emit(0x0C)
                    case UInt8(ascii: "n"): emit(0x0A)
                    case UInt8(ascii: "r"): emit(0x0D)
                    case UInt8(ascii: "t"): emit(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                                  bytes[index + 1] == UInt8(ascii: "u")
                            else { throw Self.malformed }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw Self.malformed }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw Self.malformed }
                        for unit in UTF8.encode(unicode)! { emit(unit) }
                    default: throw Self.malformed
                    }
                case 0..<0x20: throw Self.malformed
                default: emit(byte)
                }
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count else { throw Self.malformed }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                index += 1
                let nibble: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
                default: throw Self.malformed
                }
                value = value << 4 | UInt32(nibble)
            }
            return value
        }
    }
}

/// One JSON object of string members written as Go's `encoding/json` writes it (`<`, `>`, `&` escaped as
/// `\u003c`, `\u003e`, `\u0026`; then a newline), assembled in guarded memory.
struct JSONObjectWriter {
    private var members: [(key: String, text: String?, secret: SecureBytes?)] = []

    mutating func add(_ key: String, _ value: String?) { members.append((key, value ?? "", nil)) }
    mutating func add(_ key: String, _ value: SecureBytes) { members.append((key, nil, value)) }

    /// `byte` as it appears inside a JSON string.
    private static func escaped(_ byte: UInt8) -> [UInt8] {
        switch byte {
        case UInt8(ascii: "\""): return Array("\\\"".utf8)
        case UInt8(ascii: "\\"): return Array("\\\\".utf8)
        case 0x0A: return Array("\\n".utf8)
        case 0x0D: return Array("\\r".utf8)
        case 0x09: return Array("\\t".utf8)
        case 0..<0x20, UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "&"):
            let digits = Array("0123456789abcdef".utf8)
            return Array("\\u00".utf8) + [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
        default: return [byte]
        }
    }

    private static func escapedCount(_ bytes: UnsafeRawBufferPointer) -> Int {
        bytes.reduce(0) { $0 + escaped($1).count }
    }

    func bytes() -> SecureBytes {
        func forEachPiece(_ body: (UnsafeRawBufferPointer, Bool) -> Void) {
            Array("{".utf8).withUnsafeBytes { body($0, false) }
            for (number, member) in members.enumerated() {
                let head = (number > 0 ? "," : "") + "\""
                Array(head.utf8).withUnsafeBytes { body($0, false) }
                Array(member.key.utf8).withUnsafeBytes { body($0, true) }
                Array("\":\"".utf8).withUnsafeBytes { body($0, false) }
                if let text = member.text { Array(text.utf8).withUnsafeBytes { body($0, true) } }
                member.secret?.withUnsafeBytes { body($0, true) }
                Array("\"".utf8).withUnsafeBytes { body($0, false) }
            }
            Array("}\n".utf8).withUnsafeBytes { body($0, false) }
        }
        var count = 0
        forEachPiece { piece, escape in count += escape ? Self.escapedCount(piece) : piece.count }
        return SecureBytes(capacity: count) { out in
            forEachPiece { piece, escape in
                guard escape else { return out.append(piece) }
                for byte in piece {
                    for unit in Self.escaped(byte) { out.append(unit) }
                }
            }
        }
    }
}

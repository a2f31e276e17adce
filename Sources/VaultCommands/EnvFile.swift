/// The lines of `vault run --env-file FILE`: `NAME=ENTRY`, read the way dotenv files are written.
///
/// - Lines end in LF or CRLF; a UTF-8 byte order mark at the start is skipped.
/// - Blank lines and lines whose first non-blank character is `#` are skipped.
/// - `export NAME=ENTRY` is `NAME=ENTRY`; blanks around `=` are allowed.
/// - ENTRY may be quoted: `'…'` literally, `"…"` with `\"` and `\\`; after the closing quote only blanks and a
///   `# comment` may follow. Unquoted, ENTRY ends at a blank followed by `#`, and trailing blanks are dropped.
///
/// A malformed line is named by its number only, never shown: in a file written by mistake (a `.env` of values, not
/// of entry names) the line is the secret.
struct EnvFile {
    struct Line: Equatable {
        let number: Int
        let name: String
        let entry: String
    }

    struct Malformed: Error, Equatable {
        let line: Int
        let reason: String
    }

    let lines: [Line]

    init(_ bytes: [UInt8]) throws(Malformed) {
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        var lines: [Line] = []
        var number = 0
        for raw in body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            var line = raw
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if let parsed = try Self.parse(line, number: number) { lines.append(parsed) }
        }
        self.lines = lines
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, isBlank(first) { slice = slice.dropFirst() }
        while let last = slice.last, isBlank(last) { slice = slice.dropLast() }
        return slice
    }

    private static func parse(_ raw: ArraySlice<UInt8>, number: Int) throws(Malformed) -> Line? {
        func malformed(_ reason: String) -> Malformed { Malformed(line: number, reason: reason) }
        var line = trimmed(raw)
        if line.isEmpty || line.first == UInt8(ascii: "#") { return nil }
        if line.contains(UInt8(ascii: "\r")) || line.contains(0) {
            throw malformed("contains a carriage return or NUL")
        }
        let export = Array("export".utf8)
        if line.starts(with: export), line.count > export.count, isBlank(line[line.startIndex + export.count]) {
            line = trimmed(line.dropFirst(export.count))
        }
        guard let equals = line.firstIndex(of: UInt8(ascii: "=")) else { throw malformed("expected NAME=ENTRY") }
        let name = trimmed(line[..<equals])
        guard let first = name.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
              name.allSatisfy({ $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else { throw malformed("the variable name is not letters, digits and _ (not starting with a digit)") }
        let rest = trimmed(line[line.index(after: equals)...])
        var entry: [UInt8] = []
        if let quote = rest.first, quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
            var index = rest.index(after: rest.startIndex)
            var closed = false
            while index < rest.endIndex {
                let byte = rest[index]
                if byte == quote { closed = true; break }
                if quote == UInt8(ascii: "\""), byte == UInt8(ascii: "\\"), rest.index(after: index) < rest.endIndex,
                   [UInt8(ascii: "\""), UInt8(ascii: "\\")].contains(rest[rest.index(after: index)]) {
                    index = rest.index(after: index)
                }
                entry.append(rest[index])
                index = rest.index(after: index)
            }
            guard closed else { throw malformed("the quote is not closed") }
            let after = trimmed(rest[rest.index(after: index)...])
            guard after.isEmpty || after.first == UInt8(ascii: "#") else {
                throw malformed("only a # comment may follow the closing quote")
            }
        } else {
            var end = rest.endIndex
            var index = rest.startIndex
            while index < rest.endIndex {
                if rest[index] == UInt8(ascii: "#"), index > rest.startIndex, isBlank(rest[rest.index(before: index)]) {
                    end = index
                    break
                }
                index = rest.index(after: index)
            }
            entry = Array(trimmed(rest[..<end]))
        }
        guard !entry.isEmpty else { throw malformed("no entry after '='") }
        guard let entryText = String(validating: entry, as: UTF8.self) else { throw malformed("is not valid UTF-8") }
        return Line(number: number, name: String(decoding: name, as: UTF8.self), entry: entryText)
    }
}

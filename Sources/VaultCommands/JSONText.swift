/// JSON text of the values the CLI prints (`--json`): dictionaries with sorted keys, arrays, strings, integers,
/// finite doubles, booleans and `nil` (null), written as Foundation's `JSONSerialization` wrote them with `.sortedKeys` and
/// `.withoutEscapingSlashes` (`"` `\` and control characters escaped, `\b \f \n \r \t` by name, the others as
/// `\u00xx`; everything else as UTF-8), except that keys are sorted by code point, where Foundation compared them
/// case-insensitively with digits as numbers (the CLI's own keys are lowercase words: the same order). Here so that
/// `vault` links no `JSONSerialization`, whose locale-aware key sorting brings ICU (34 MB) into the binary:
/// Benchmarks/README.md, "Size".
enum JSONText {
    /// The text of `value`; a value of another type is a programming error (it traps, as `JSONSerialization` did).
    static func encode(_ value: Any) -> String {
        var text = ""
        append(value, to: &text)
        return text
    }

    private static func append(_ value: Any, to text: inout String) {
        switch value {
        case let string as String: appendString(string, to: &text)
        case let flag as Bool: text += flag ? "true" : "false"
        case let number as any BinaryInteger: text += "\(number)"
        case let number as Double:
            precondition(number.isFinite, "JSONText: \(number) is not a JSON number")
            // Whole numbers without a fraction (`64`, as Foundation wrote them), others in Swift's shortest form.
            text += number == number.rounded() && abs(number) < 9_007_199_254_740_992 ? String(Int64(number)) : String(number)
        case let object as [String: Any]:
            text += "{"
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { text += "," }
                appendString(key, to: &text)
                text += ":"
                append(object[key]!, to: &text)
            }
            text += "}"
        case let array as [Any]:
            text += "["
            for (index, element) in array.enumerated() {
                if index > 0 { text += "," }
                append(element, to: &text)
            }
            text += "]"
        default:
            let mirror = Mirror(reflecting: value)
            precondition(mirror.displayStyle == .optional, "JSONText: \(type(of: value)) is not a JSON value")
            if let wrapped = mirror.children.first?.value { append(wrapped, to: &text) } else { text += "null" }
        }
    }

    private static func appendString(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{00}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}

/// Text from elsewhere (a server's realm, status text or error body, an entry's name, a path) made safe to show
/// on a terminal or in stderr: the one function every such text goes through before it is shown.
///
/// A terminal obeys control characters: ESC starts sequences that clear the screen, move the cursor, recolour
/// text or set the window title, and bidirectional overrides reorder what follows. Those characters are written
/// as visible escapes instead, and a backslash as `\\`, so the escaped form tells every input apart:
///
/// - C0 controls, DEL and C1 controls (U+0000–U+001F, U+007F–U+009F): `\n`, `\r`, `\t`, else `\x1B`-style
///   (two hex digits, upper case);
/// - bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and the line and paragraph
///   separators U+2028 and U+2029: `\u{202E}`-style.
///
/// Everything else (letters of any script, emoji, combining marks) is kept as it is.
///
/// The places text reaches a terminal or stderr escape once more what they write, as a safety net, keeping
/// backslashes (so a part escaped already is not escaped twice): ``Terminal/write(_:)`` (keeping newlines too)
/// and the CLI's error reports (message and hint).
public enum TerminalText {
    /// `text` with every character above written as its escape.
    ///
    /// - Parameters:
    ///   - keepingNewlines: `\n` stays a newline (for our own multi-line prompts).
    ///   - keepingBackslashes: a backslash stays one (for text composed of our words and parts escaped already;
    ///     escaping it again then changes nothing).
    public static func escaped(
        _ text: some StringProtocol, keepingNewlines: Bool = false, keepingBackslashes: Bool = false
    ) -> String {
        let escapes = { (scalar: Unicode.Scalar) in
            needsEscape(scalar, keepingNewlines: keepingNewlines, keepingBackslashes: keepingBackslashes)
        }
        guard text.unicodeScalars.contains(where: escapes) else { return String(text) }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard escapes(scalar) else {
                out.append(scalar)
                continue
            }
            switch scalar {
            case "\\": out.append(contentsOf: #"\\"#.unicodeScalars)
            case "\n": out.append(contentsOf: #"\n"#.unicodeScalars)
            case "\r": out.append(contentsOf: #"\r"#.unicodeScalars)
            case "\t": out.append(contentsOf: #"\t"#.unicodeScalars)
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                let escape = scalar.value < 0x100
                    ? "\\x" + (hex.count < 2 ? "0" + hex : hex)
                    : "\\u{" + hex + "}"
                out.append(contentsOf: escape.unicodeScalars)
            }
        }
        return String(out)
    }

    /// Whether `scalar` is written as an escape.
    static func needsEscape(_ scalar: Unicode.Scalar, keepingNewlines: Bool, keepingBackslashes: Bool) -> Bool {
        switch scalar.value {
        case 0x0A: return !keepingNewlines
        case 0x5C: return !keepingBackslashes  // the escape character itself
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x2028, 0x2029: return true
        default: return false
        }
    }
}

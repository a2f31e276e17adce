/// The characters ``Swift/StringProtocol/trimming(_:)`` removes: Foundation's `CharacterSet.whitespaces`
/// (tab, the space separators and U+200B, as Foundation has it), `.newlines` (U+000A–U+000D, U+0085, U+2028, U+2029), or both.
package enum TrimmedCharacters {
    case whitespaces, newlines, whitespacesAndNewlines

    package func contains(_ scalar: Unicode.Scalar) -> Bool {
        let whitespace = scalar == "\t" || scalar == "\u{200B}" || scalar.properties.generalCategory == .spaceSeparator
        let newline = (0x0A...0x0D).contains(scalar.value) || [0x85, 0x2028, 0x2029].contains(scalar.value)
        switch self {
        case .whitespaces: return whitespace
        case .newlines: return newline
        case .whitespacesAndNewlines: return whitespace || newline
        }
    }
}

extension StringProtocol {
    /// Foundation's `trimmingCharacters(in:)` for the three sets the CLI and git sync trim, without Foundation
    /// (FoundationEssentials does not have it, and `vault` links no more than FoundationEssentials:
    /// Benchmarks/README.md, "Size"). Another name than Foundation's, so that a module with both reads unambiguously.
    package func trimming(_ set: TrimmedCharacters) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !set.contains($0) }),
              let last = scalars.lastIndex(where: { !set.contains($0) })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}

import Foundation
import Testing
@testable import VaultCommands

/// The CLI's `trimmingCharacters(in:)` (FoundationEssentials has none) against Foundation's, for its three sets.
struct StringTrimmingTests {
    static let samples = [
        "", " ", "\n", "plain", "  both  ", "\t\ttabs\t", "\r\nwindows\r\n", "\u{85}next line\u{2028}", "\u{A0}no-break\u{3000}",
        " \n mixed \n ", "inner  space kept", "\u{0B}\u{0C}vertical", "é\u{301} ", "\u{200B}zero width\u{200B}",
    ]

    @Test func theThreeSetsTrimAsFoundationDoes() {
        for sample in Self.samples {
            #expect(sample.trimmingCharacters(in: TrimmedCharacters.whitespaces) == sample.trimmingCharacters(in: CharacterSet.whitespaces), "\(sample.debugDescription)")
            #expect(sample.trimmingCharacters(in: TrimmedCharacters.newlines) == sample.trimmingCharacters(in: CharacterSet.newlines), "\(sample.debugDescription)")
            #expect(sample.trimmingCharacters(in: TrimmedCharacters.whitespacesAndNewlines) == sample.trimmingCharacters(in: CharacterSet.whitespacesAndNewlines), "\(sample.debugDescription)")
        }
    }
}

import Foundation
import Testing
import VaultCore
@testable import VaultCommands

/// Issue 35 §5: `vault init` estimates the passphrase's strength as zxcvbn does. The classification at the bound
/// (10^10 guesses) is zxcvbn's own for each of these (zxcvbn 4.4.28's `guesses_log10`, in the comment), and the
/// pattern that makes each weak one weak is the one zxcvbn finds.
@Suite struct PassphraseStrengthTests {
    func strength(_ text: String) -> PassphraseStrength { PassphraseStrength.estimate(SecureBytes(string: text)) }

    @Test func weakOnesAndWhy() {
        let weak: [(String, String)] = [
            ("password", "it is one of the 1,000 most common passwords"),  // 0.48
            ("P@ssw0rd", "it is one of the 1,000 most common passwords"),  // 1.23, l33t and a capital
            ("drowssap", "it is one of the 1,000 most common passwords"),  // 0.7, reversed
            ("1qaz2wsx3edc", "it is one of the 1,000 most common passwords"),  // 3.0
            ("zxcvbnm,./", "it has a keyboard pattern (like qwerty or 1qaz)"),  // 3.59
            ("7412369", "it has a keyboard pattern (like qwerty or 1qaz)"),  // 3.79: the keypad
            ("abcdefghijkl", "it has a sequence (like abc or 1234)"),  // 1.69
            ("9876543210", "it has a sequence (like abc or 1234)"),  // 1.91
            ("aaaaaaaaaaaa", "it has repeated characters or groups (like aaa or abcabc)"),  // 2.16
            ("abcabcabcabc", "it has repeated characters or groups (like aaa or abcabc)"),  // 1.72
            ("dragon2024", "it contains a common password"),  // 5.87
            ("Summer2019!", "it contains a common password"),  // 7.44: as zxcvbn, "2019!" tried as characters
            ("hunter2", "it contains a common password"),  // 3.91
            ("kx8#Lm2q", "it is short (8 characters)"),  // 8.0
            ("old", "it is short (3 characters)"),  // 2.27
        ]
        for (text, reason) in weak {
            let estimate = strength(text)
            #expect(estimate.isWeak, "\(text): \(estimate.log10Guesses)")
            #expect(estimate.reasons.contains(reason), "\(text): \(estimate.reasons)")
        }
        #expect(strength("dragon2024").reasons == ["it contains a common password", "it has a year or a date", "it is short (10 characters)"])
        #expect(strength("password").log10Guesses < 1 && strength("123456").log10Guesses < 0.5)
        #expect(strength("").isWeak && strength("").log10Guesses == 0)
    }

    @Test func strongOnes() {
        // correct horse battery staple 20.33; typed on a tty 12.97; Tr0ub4dor&3 11.0; Xk9#mP2$vL7@nQ4 15.0;
        // tree bike lamp stone 16.9.
        for text in ["correct horse battery staple", "typed on a tty", "Tr0ub4dor&3", "Xk9#mP2$vL7@nQ4", "tree bike lamp stone"] {
            let estimate = strength(text)
            #expect(!estimate.isWeak && estimate.reasons.isEmpty, "\(text): \(estimate.log10Guesses) \(estimate.reasons)")
        }
        // Non-ASCII and invalid UTF-8 count as characters; only the first 128 are looked at.
        #expect(!PassphraseStrength.estimate(SecureBytes([0xFF, 0xFE, 0xC3, 0xA9] + Array("zq7 Lm k2".utf8))).isWeak)
        // Past 128 characters nothing counts: a repeat that long is judged by its first 128 (weak; --force keeps it).
        #expect(strength(String(repeating: "ab", count: 5000) + "Xk9#mP2$vL7@nQ4").isWeak)
    }
}

import Foundation
@testable import SecretService
import Testing
import VaultCore

/// A pinentry's answers as ``PassphraseQuestion`` reads them (the Assuan protocol): the `D` line percent-decoded,
/// a malformed escape, a cancel, an empty passphrase, a program that is no pinentry; and the escaping of what it sends.
@Suite struct PassphraseQuestionTests {
    static func answer(_ text: String) -> String {
        let outcome = Array(text.utf8).withUnsafeBytes { PassphraseQuestion.pinentryAnswer($0, program: "p") }
        switch outcome {
        case .running: return "running"
        case .cancelled(let reason): return "cancelled: " + reason
        case .passphrase(let bytes): return "passphrase: " + (bytes.stringValue ?? "?")
        }
    }

    @Test func theDLineIsThePassphrasePercentDecoded() {
        #expect(Self.answer("OK hi\nOK\nOK\nD a%25b%0Ac %2f\nOK\nOK closing\n") == "passphrase: a%b\nc /")
        #expect(Self.answer("OK hi\nOK\nOK\nOK\nOK closing\n") == "passphrase: ")
    }

    @Test func aMalformedEscapeACancelOrNoPinentryIsNoPassphrase() {
        #expect(Self.answer("OK\nD ab%2\nOK\n") == "cancelled: 'p' sent a malformed D line")
        #expect(Self.answer("OK\nD ab%zz\nOK\n") == "cancelled: 'p' sent a malformed D line")
        #expect(Self.answer("OK\nOK\nERR 83886179 Operation cancelled <Pinentry>\nOK closing\n")
                == "cancelled: 'p' answered ERR 83886179 Operation cancelled <Pinentry>")
        #expect(Self.answer("usage: p [options]\n") == "cancelled: 'p' did not speak the pinentry protocol")
        #expect(Self.answer("") == "cancelled: 'p' did not speak the pinentry protocol")
    }

    @Test func whatIsSentIsEscaped() {
        #expect(PassphraseQuestion.escaped("50%\r\nx") == "50%25%0D%0Ax")
    }
}

import Testing
import VaultCommands
import VaultCore
import VaultTerminal

/// How the CLI presents the libraries' errors: one ``CLIReportable`` conformance per error type.
@Suite struct ErrorPresentationTests {
    @Test func wrongPassphraseAndRollbackHaveHints() {
        #expect(VaultError.wrongPassphrase(path: "/v").hint != nil)
        #expect(VaultError.rollbackDetected(path: "/v", seenGeneration: 4, fileGeneration: 2).hint != nil)
    }

    @Test func exitCodesAndCodes() {
        let cases: [(any CLIReportable, Int32, String)] = [
            (VaultError.wrongPassphrase(path: "/v"), 3, "wrong_passphrase"),
            (VaultError.wrongIdentity(path: "/v"), 3, "wrong_identity"),
            (VaultError.corrupt(path: "/v", reason: .badPadding), 6, "corrupt"),
            (VaultError.invalidEntryName(reason: "the name is empty"), 64, "invalid_name"),
            (VaultError.unsafePermissions(path: "/v", reason: "r", hint: "h"), 4, "unsafe_permissions"),
            (VaultError.busy(path: "/v", timeoutSeconds: 1), 5, "busy"),
            (CLIError.noSuchEntry(name: "n", path: "/v"), 2, "no_such_entry"),
            (SecretInputError.tooLong(source: "stdin", limit: 4), 1, "input_too_long"),
        ]
        for (error, exitCode, code) in cases {
            #expect(error.exitCode == exitCode)
            #expect(error.code == code)
        }
        #expect(VaultError.unsafePermissions(path: "/v", reason: "r", hint: "h").hint == "h")
    }
}

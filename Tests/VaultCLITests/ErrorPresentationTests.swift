import Foundation
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

    /// Issue 34 §5: `--json` names the spec's rule beside the code `corrupt`, and a clock error says which rule.
    @Test func aCorruptFileNamesItsRuleInJSON() throws {
        #expect(VaultError.corrupt(path: "/v", reason: .badPadding).details["rule"] as? String == "bad_padding")
        #expect(VaultError.wrongPassphrase(path: "/v").details.isEmpty)
        let box = try Sandbox()
        let vector = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/v3/clock-dropped-above-time.vault")
        let bytes = try Data(contentsOf: vector)
        try FileManager.default.createDirectory(atPath: box.directory + "/vaults", withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        FileManager.default.createFile(atPath: box.vaultPath, contents: bytes, attributes: [.posixPermissions: 0o600])
        let result = try box.vault(["list", "--json"])
        #expect(result.status == 6)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stderr.utf8)) as? [String: Any])
        let error = try #require(object["error"] as? [String: Any])
        #expect(error["code"] as? String == "corrupt" && error["rule"] as? String == "bad_clock", "\(result.stderr)")
        #expect((error["message"] as? String)?.hasSuffix("malformed clocks: replica 0's dropped mark is above its time") == true, "\(result.stderr)")
    }
}

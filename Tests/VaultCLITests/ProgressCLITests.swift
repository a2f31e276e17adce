import Foundation
import Testing

/// Issue 35 §3: long operations show a bar on a terminal's stderr (counts, time left) and nothing when piped, on a
/// real pseudo-terminal (``PseudoTerminal``) and through pipes.
@Suite(.processTimeLimit) struct ProgressCLITests {
    @Test func exportShowsABarOnATerminalAndNothingWhenPiped() throws {
        let box = try Sandbox()
        try box.initVault()
        for index in 1...3 { #expect(try box.vault(["put", "e\(index)"], stdin: Data("v\(index)".utf8)).status == 0) }
        let output = box.directory + "/out.json"
        let onTerminal = try PseudoTerminal.run(
            CLI.vault, ["export", "--format", "json", "--output", output, "--yes", "--passphrase-file", box.passphraseFile],
            steps: [], environment: box.environment)
        #expect(onTerminal.status == 0, "\(onTerminal.stdoutText)")
        // The bar is drawn in place (carriage return), complete at the end, then erased before the report.
        #expect(onTerminal.stdoutText.contains("\rexporting [####################] 3/3 entries\u{1B}[K\r\u{1B}[K"), "\(onTerminal.stdoutText.debugDescription)")
        #expect(onTerminal.stdoutText.hasSuffix("exported 3 entries of '\(box.vaultPath)' to '\(output)' (json)\n[echo on]\n"))

        let piped = try box.vault(["export", "--format", "json", "--output", output, "--yes", "--force"])
        #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
        #expect(!piped.stdoutText.contains("\r") && !piped.stdoutText.contains("exporting ["))
    }
}

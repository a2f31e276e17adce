import Foundation
import Testing
import VaultTestSupport

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

/// Issue 35 §3: `recipients remove` seals every entry again under a new key: a bar on a terminal, nothing when piped
/// (with the real `age-keygen`'s keys).
@Suite(.processTimeLimit) struct RemovalProgressCLITests {
    @Test(.enabled(if: RecipientCLITests.hasAge || ProcessInfo.processInfo.environment["CI"] == "true", RecipientCLITests.needsAge))
    func removingARecipientShowsABarOnATerminalAndNothingWhenPiped() throws {
        try #require(RecipientCLITests.hasAge, "age is needed (CI=true)")
        let team = try RecipientCLITests.Team()
        let box = team.box
        #expect(try team.owner(["init"]).status == 0)
        // 600 entries in one write (an import of vault's own export).
        let entries = (0..<600).map { index in
            #"{"created":"2026-11-29T13:14:29.999Z","fields":[{"name":"password","secret":true,"value":"v\#(index)"}],"history":[],"#
                + #""id":"\#(String(format: "%032x", index + 1))","modified":"2026-11-29T13:14:29.999Z","name":"site/\#(index)"}"#
        }
        let file = box.directory + "/many.json"
        try box.write(#"{"entries":["# + entries.joined(separator: ",") + #"],"exported":"2026-11-29T13:14:30.149Z","format":"vault-export","version":1}"#, to: file)
        let imported = try team.owner(["import", "json", file])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try team.owner(["recipients", "add", team.recipient, team.otherRecipient]).status == 0)

        let onTerminal = try PseudoTerminal.run(
            CLI.vault, ["recipients", "remove", team.otherRecipient, "--passphrase-file", box.passphraseFile],
            steps: [], environment: box.environment.merging(team.state) { $1 })
        #expect(onTerminal.status == 0, "\(onTerminal.stdoutText)")
        // Drawn in place (carriage return), complete at the end, then erased before the report.
        #expect(onTerminal.stdoutText.contains("\rre-encrypting [####################] 600/600 entries\u{1B}[K\r\u{1B}[K"),
                "\(onTerminal.stdoutText.debugDescription)")
        #expect(onTerminal.stdoutText.contains("removed recipient \(team.otherRecipient); the vault's key was rotated"))

        #expect(try team.owner(["recipients", "add", team.otherRecipient]).status == 0)
        let piped = try team.owner(["recipients", "remove", team.otherRecipient])
        #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
        #expect(!piped.stdoutText.contains("\r") && !piped.stdoutText.contains("re-encrypting ["))
    }
}

/// Issue 35 §3: a first sync of a large vault on another machine (no vault here: the store's copy is fetched) shows
/// the download on a terminal (KiB, done of the object's size) and nothing when piped, against moto's S3.
@Suite(.serialized, .processTimeLimit) struct SyncProgressCLITests {
    @Test func aFirstSyncShowsTheDownloadOnATerminalAndNothingWhenPiped() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try SyncS3Tests.Machine(moto), b = try SyncS3Tests.Machine(moto), c = try SyncS3Tests.Machine(moto)
        #expect(try a.vault(["init"]).status == 0)
        let entries = (0..<2000).map { index in
            #"{"created":"2026-11-29T13:14:29.999Z","fields":[{"name":"password","secret":true,"value":"v\#(index)"},"#
                + #"{"name":"notes","secret":false,"value":"\#(String(repeating: "n", count: 100))"}],"history":[],"#
                + #""id":"\#(String(format: "%032x", index + 1))","modified":"2026-11-29T13:14:29.999Z","name":"site/\#(index)"}"#
        }
        let file = a.box.directory + "/many.json"
        try a.box.write(#"{"entries":["# + entries.joined(separator: ",") + #"],"exported":"2026-11-29T13:14:30.149Z","format":"vault-export","version":1}"#, to: file)
        #expect(try a.vault(["import", "json", file]).status == 0)
        #expect(try a.sync().status == 0)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: a.box.vaultPath)[.size] as? Int)
        let kib = (size + 1023) / 1024

        let onTerminal = try PseudoTerminal.run(
            CLI.vault, ["sync", "s3://vault/team/shared.vault", "--allow-insecure-http", "--passphrase-file", b.box.passphraseFile],
            steps: [], environment: b.box.environment.merging(b.environment) { $1 })
        #expect(onTerminal.status == 0, "\(onTerminal.stdoutText)")
        #expect(onTerminal.stdoutText.contains("\rfetching [") && onTerminal.stdoutText.contains("\rfetching [####################] \(kib)/\(kib) KiB\u{1B}[K\r\u{1B}[K"),
                "\(onTerminal.stdoutText.debugDescription)")
        #expect(try b.names().count == 2000)

        let piped = try c.vault(["sync", "s3://vault/team/shared.vault", "--allow-insecure-http"])
        #expect(piped.status == 0 && !piped.stderr.contains("fetching") && !piped.stderr.contains("\r"), "\(piped.stderr)")
        #expect(try c.names().count == 2000)
    }
}

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

    /// An export of `count` entries `site/0`... in vault's JSON, written to `path`.
    static func writeExport(count: Int, to path: String, in box: Sandbox) throws {
        let entries = (0..<count).map { index in
            #"{"created":"2026-11-29T13:14:29.999Z","fields":[{"name":"password","secret":true,"value":"v\#(index)"}],"history":[],"#
                + #""id":"\#(String(format: "%032x", index + 1))","modified":"2026-11-29T13:14:29.999Z","name":"site/\#(index)"}"#
        }
        try box.write(#"{"entries":["# + entries.joined(separator: ",") + #"],"exported":"2026-11-29T13:14:30.149Z","format":"vault-export","version":1}"#, to: path)
    }

    /// Walkthrough finding 9: `vault import` (every format: the bar counts the source's entries against the vault's)
    /// shows a bar on a terminal, nothing piped; past 50 names added or updated the report gives their count, `--list`
    /// names them all, and the JSON report always does.
    @Test func importShowsABarOnATerminalAndNothingWhenPipedAndCountsManyNames() throws {
        let box = try Sandbox()
        try box.initVault()
        let file = box.directory + "/many.json"
        try Self.writeExport(count: 60, to: file, in: box)
        let onTerminal = try PseudoTerminal.run(CLI.vault, ["import", "json", file, "--passphrase-file", box.passphraseFile], steps: [], environment: box.environment)
        #expect(onTerminal.status == 0, "\(onTerminal.stdoutText)")
        #expect(onTerminal.stdoutText.contains("\rimporting [####################] 60/60 entries\u{1B}[K\r\u{1B}[K"), "\(onTerminal.stdoutText.debugDescription)")
        #expect(onTerminal.stdoutText.hasSuffix(
            "imported '\(file)' into '\(box.vaultPath)': 60 added, 0 updated, 0 unchanged, 0 kept, 0 skipped\n"
                + "  60 entries added, not named one by one (--list names them)\n[echo on]\n"), "\(onTerminal.stdoutText.debugDescription)")
        #expect(try box.vault(["list"]).stdoutText.split(separator: "\n").count == 60)

        // Piped: no bar; the dry run of a changed source counts the updates; --list names every one.
        try Self.writeExport(count: 60, to: file, in: box)
        let changed = try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(of: #""value":"v"#, with: #""value":"w"#)
            .replacingOccurrences(of: "2026-11-29T13:14:29.999Z", with: "2026-11-30T13:14:29.999Z")
        try box.write(changed, to: file)
        let piped = try box.vault(["import", "json", file, "--dry-run"])
        #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
        #expect(piped.stdoutText == "would import '\(file)' into '\(box.vaultPath)': 0 added, 60 updated, 0 unchanged, 0 kept, 0 skipped (dry run: nothing written)\n"
            + "  60 entries to be updated, not named one by one (--list names them)\n", "\(piped.stdoutText)")
        let listed = try box.vault(["import", "json", file, "--dry-run", "--list"])
        let lines = listed.stdoutText.split(separator: "\n").dropFirst()
        #expect(lines.count == 60 && lines.allSatisfy { $0.hasPrefix("  updated: site/") }, "\(listed.stdoutText)")
        let json = try box.vault(["import", "json", file, "--json"])
        let report = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any], "\(json.stderr)")
        #expect((report["updated"] as? [String])?.count == 60 && json.stderr.isEmpty)
        // 50 or fewer: named one by one, as before.
        let few = box.directory + "/few.json"
        try Self.writeExport(count: 50, to: few, in: box)
        let fresh = try Sandbox()
        try fresh.initVault()
        let named = try fresh.vault(["import", "json", few])
        #expect(named.stdoutText.split(separator: "\n").filter { $0.hasPrefix("  added: site/") }.count == 50, "\(named.stdoutText)")
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

/// Issue 35 §3: OpenBao answers chunked (no Content-Length, and its KV metadata tells no size): a first sync from it
/// shows the bytes in so far, the rate and the time taken, no bar and no time left, once the download has lasted half
/// a second: the real server behind a relay that passes its answer on at 128 KiB/s (a slow network). The same fetch
/// at full speed draws nothing, and nothing is written when piped.
@Suite(.serialized, .processTimeLimit) struct OpenBaoProgressCLITests {
    @Test func aSlowFirstSyncFromOpenBaoShowsTheBytesInAndAFastOneNothing() throws {
        let bao = try OpenBaoDevServer()
        defer { bao.stop() }
        func machine() throws -> (Sandbox, [String: String]) {
            let box = try Sandbox()
            return (box, ["HOME": box.directory, "XDG_STATE_HOME": box.directory + "/state", "BAO_TOKEN": bao.token])
        }
        let (a, aEnvironment) = try machine()
        #expect(try a.vault(["init"], extraEnvironment: aEnvironment).status == 0)
        let entries = (0..<1000).map { index in
            #"{"created":"2026-11-29T13:14:29.999Z","fields":[{"name":"password","secret":true,"value":"v\#(index)"},"#
                + #"{"name":"notes","secret":false,"value":"\#(String(repeating: "n", count: 100))"}],"history":[],"#
                + #""id":"\#(String(format: "%032x", index + 1))","modified":"2026-11-29T13:14:29.999Z","name":"site/\#(index)"}"#
        }
        let file = a.directory + "/many.json"
        try a.write(#"{"entries":["# + entries.joined(separator: ",") + #"],"exported":"2026-11-29T13:14:30.149Z","format":"vault-export","version":1}"#, to: file)
        #expect(try a.vault(["import", "json", file], extraEnvironment: aEnvironment).status == 0)
        let created = try a.vault(["sync", "bao://\(bao.address)/secret/team/shared", "--allow-insecure-http"], extraEnvironment: aEnvironment)
        #expect(created.status == 0, "\(created.stderr)")
        // The answer holds the file in base64: at 128 KiB/s it takes well over half a second.
        let size = try #require(try FileManager.default.attributesOfItem(atPath: a.vaultPath)[.size] as? Int)
        try #require(size * 4 / 3 > 128 << 10, "the vault is \(size) bytes")

        let relay = try PythonServer(.throttle(upstreamPort: bao.port, bytesPerSecond: 128 << 10))
        defer { relay.stop() }
        let slowRemote = "bao://127.0.0.1:\(relay.port)/secret/team/shared"
        let (b, bEnvironment) = try machine()
        let slow = try PseudoTerminal.run(
            CLI.vault, ["sync", slowRemote, "--allow-insecure-http", "--passphrase-file", b.passphraseFile],
            steps: [], environment: b.environment.merging(bEnvironment) { $1 })
        #expect(slow.status == 0, "\(slow.stdoutText)")
        let shown = slow.stdoutText
        // Drawn in place: KiB in, KiB/s, m:ss (at least half a second in), never a bar or a time left; erased
        // before the report.
        let line = #/\rfetching (\d+) KiB, (\d+) KiB/s, 0:0(\d)\x{1B}\[K/#
        let drawn = shown.matches(of: line)
        #expect(!drawn.isEmpty, "\(shown.debugDescription)")
        let counts = drawn.compactMap { Int($0.output.1) }
        #expect(counts == counts.sorted() && (counts.last ?? 0) <= size * 4 / 3 / 1024 + 1, "\(counts)")
        #expect(!shown.contains("fetching [") && !shown.contains(" left"), "\(shown.debugDescription)")
        #expect(shown.hasSuffix("\u{1B}[K\r\u{1B}[Kfetched \(slowRemote) into '\(b.vaultPath)'\n[echo on]\n"), "\(shown.debugDescription)")
        #expect(try b.vault(["list"], extraEnvironment: bEnvironment).stdoutText.split(separator: "\n").count == 1000)

        // At full speed (the same answer, straight from OpenBao): nothing drawn.
        let (c, cEnvironment) = try machine()
        let fast = try PseudoTerminal.run(
            CLI.vault, ["sync", "bao://\(bao.address)/secret/team/shared", "--allow-insecure-http", "--passphrase-file", c.passphraseFile],
            steps: [], environment: c.environment.merging(cEnvironment) { $1 })
        #expect(fast.status == 0, "\(fast.stdoutText)")
        #expect(fast.stdoutText == "fetched bao://\(bao.address)/secret/team/shared into '\(c.vaultPath)'\n[echo on]\n", "\(fast.stdoutText.debugDescription)")

        // Piped, as slow: nothing on stderr.
        let (d, dEnvironment) = try machine()
        let piped = try d.vault(["sync", slowRemote, "--allow-insecure-http"], extraEnvironment: dEnvironment)
        #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
        #expect(piped.stdoutText == "fetched \(slowRemote) into '\(d.vaultPath)'\n")
    }
}

/// Issue 35 §3: `recipients remove` done by the agent tells no progress (its answer comes in under 0.3 s for 50,000
/// entries): a line with the time taken when the answer takes longer than half a second, on a terminal only. The
/// agent (unlocked with the passphrase: nothing asked) is kept waiting for the vault's lock, as behind another writer:
/// on the terminal until the line shows.
@Suite(.processTimeLimit) struct AgentRemovalProgressCLITests {
    @Test(.enabled(if: RecipientCLITests.hasAge || ProcessInfo.processInfo.environment["CI"] == "true", RecipientCLITests.needsAge))
    func aSlowRemovalByTheAgentShowsAWaitingLineAndNothingWhenPiped() throws {
        try #require(RecipientCLITests.hasAge, "age is needed (CI=true)")
        let team = try RecipientCLITests.Team()
        let box = try AgentBox()
        try box.initVault()
        #expect(try box.around(["put", "github"], stdin: Data("t0k3n".utf8)).status == 0)
        #expect(try box.around(["recipients", "add", team.recipient, team.otherRecipient]).status == 0)
        try box.unlock()
        let lockFile = box.vaultPath + ".lock"

        let onTerminal = try PseudoTerminal.run(
            CLI.vault, ["recipients", "remove", team.otherRecipient],
            playing: [.init(marker: "re-encrypting... 0:0", releasing: true)], environment: box.environment, holding: lockFile)
        #expect(onTerminal.status == 0, "\(onTerminal.stdoutText)")
        // Drawn in place after half a second (then each second while the lock is held), erased before the report.
        #expect(onTerminal.stdoutText.hasPrefix("\rre-encrypting... 0:00\u{1B}[K"), "\(onTerminal.stdoutText.debugDescription)")
        #expect(onTerminal.stdoutText.hasSuffix(
            "\u{1B}[K\r\u{1B}[Kremoved recipient \(team.otherRecipient); the vault's key was rotated\n"
                + "the removed key could read the 1 entry of this vault (and may have kept a copy): change those secrets where they are used ('--list' names them)\n[echo on]\n"),
            "\(onTerminal.stdoutText.debugDescription)")
        // The agent did it: the vault is still unlocked there, under its new key.
        let read = try box.vault(["get", "github"])
        #expect(read.status == 0 && read.stdoutText == "t0k3n", "\(read.stderr)")

        // Piped, the answer as slow (the lock held for 0.8 s): nothing on stderr.
        #expect(try box.vault(["recipients", "add", team.otherRecipient]).status == 0)
        let held = open(lockFile, O_RDWR | O_CLOEXEC)
        try #require(held >= 0 && flock(held, LOCK_EX) == 0)
        let running = try box.startThroughAgent(["recipients", "remove", team.otherRecipient])
        usleep(800_000)  // how long the agent waits for the lock: the answer takes longer than half a second
        close(held)
        let piped = running.finish()
        #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
        #expect(piped.seconds >= 0.8)
        #expect(String(decoding: piped.stdout, as: UTF8.self).hasPrefix("removed recipient \(team.otherRecipient); the vault's key was rotated\n"))
    }
}

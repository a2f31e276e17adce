import Foundation
import Testing

/// `vault` refuses an older copy of the vault (exit 6, `rollback_detected`) unless `--accept-rollback`.
@Suite(.timeLimit(.minutes(2))) struct RollbackCLITests {
    @Test func olderCopyExitsSixUntilAccepted() throws {
        let box = try Sandbox()
        let state = box.directory + "/state"
        let env = ["XDG_STATE_HOME": state]
        #expect(try box.vault(["init"], extraEnvironment: env).status == 0)
        #expect(try box.vault(["put", "k"], stdin: Data("old".utf8), extraEnvironment: env).status == 0)
        let old = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        #expect(try box.vault(["put", "k"], stdin: Data("new".utf8), extraEnvironment: env).status == 0)
        try old.write(to: URL(fileURLWithPath: box.vaultPath))

        let refused = try box.vault(["get", "k"], extraEnvironment: env)
        #expect(refused.status == 6)
        #expect(refused.stdout.isEmpty)
        #expect(refused.stderr == """
            vault: refusing to open vault '\(box.vaultPath)': it is older than the last version seen (generation 2, but 3 was seen): an older copy may have been put back
            hint: if you restored this copy on purpose (a backup), pass --accept-rollback once

            """)
        let json = try box.vault(["list", "--json"], extraEnvironment: env)
        let object = try JSONSerialization.jsonObject(with: Data(json.stderr.utf8)) as? [String: [String: Any]]
        #expect(object?["error"]?["code"] as? String == "rollback_detected")
        #expect(object?["error"]?["exit_code"] as? Int == 6)
        // A writer is refused too, and does not touch the file.
        #expect(try box.vault(["put", "x"], stdin: Data("y".utf8), extraEnvironment: env).status == 6)
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == old)

        let accepted = try box.vault(["get", "k", "--accept-rollback"], extraEnvironment: env)
        #expect(accepted.status == 0)
        #expect(accepted.stdoutText == "old")
        #expect(try box.vault(["get", "k"], extraEnvironment: env).status == 0)

        // The state: one record, 0600, in a 0700 directory.
        var info = stat()
        #expect(stat(state + "/vault", &info) == 0 && info.st_mode & 0o777 == 0o700)
        let records = try FileManager.default.contentsOfDirectory(atPath: state + "/vault")
        #expect(records.count == 1 && records[0].hasSuffix(".generation"))
        #expect(stat(state + "/vault/" + records[0], &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test func defaultStateDirectoryIsUnderHome() throws {
        let box = try Sandbox()
        let home = box.directory + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)
        let env = ["HOME": home]
        #expect(try box.vault(["init"], extraEnvironment: env).status == 0)
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8), extraEnvironment: env).status == 0)
        let records = (try? FileManager.default.contentsOfDirectory(atPath: home + "/.local/state/vault")) ?? []
        #expect(records.count == 1)
    }
}

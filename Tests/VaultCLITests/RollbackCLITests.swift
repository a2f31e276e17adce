import Foundation
import Testing

/// `vault` refuses an older copy of the vault (exit 6, `rollback_detected`) unless `--accept-rollback`.
@Suite(.processTimeLimit) struct RollbackCLITests {
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
            vault: refusing to open vault '\(box.vaultPath)': it is an older copy of the vault than one already seen here (this copy was written 2 times, one seen here 3 times): an older copy may have been put back
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
        #expect(records.filter { $0.hasSuffix(".generation") }.count == 1, "\(records)")
        for record in records { #expect(stat(state + "/vault/" + record, &info) == 0 && info.st_mode & 0o777 == 0o600) }
    }

    /// `vault passwd` rotates the data key: a copy from before it is refused (exit 6, `retired_key`), and so is
    /// another vault copied over the path (`other_vault`), each until accepted once.
    @Test func copyFromBeforeAPassphraseChangeAndAnotherVaultExitSix() throws {
        let box = try Sandbox()
        let env = ["XDG_STATE_HOME": box.directory + "/state"]
        #expect(try box.vault(["init"], extraEnvironment: env).status == 0)
        #expect(try box.vault(["put", "k"], stdin: Data("old".utf8), extraEnvironment: env).status == 0)
        let old = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let newFile = box.directory + "/new-passphrase"
        FileManager.default.createFile(atPath: newFile, contents: Data("a new one\n".utf8), attributes: [.posixPermissions: 0o600])
        let passwd = try box.vault(["passwd", "--new-passphrase-file", newFile], extraEnvironment: env)
        try #require(passwd.status == 0, "passwd: \(passwd.stderr)")
        #expect(passwd.stdoutText == "passphrase changed for vault '\(box.vaultPath)'\n")
        let changed = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        #expect(changed[76..<124] != old[76..<124])  // the wrapped key (a new data key under a new KEK)

        try old.write(to: URL(fileURLWithPath: box.vaultPath))
        let refused = try box.vault(["get", "k"], extraEnvironment: env)
        #expect(refused.status == 6 && refused.stdout.isEmpty)
        #expect(refused.stderr == """
            vault: refusing to open vault '\(box.vaultPath)': it is sealed with a key the vault retired when its passphrase changed: a copy from before the change may have been put back
            hint: if you restored this copy on purpose (a backup), pass --accept-rollback once

            """)
        let json = try box.vault(["get", "k", "--json"], extraEnvironment: env)
        let object = try JSONSerialization.jsonObject(with: Data(json.stderr.utf8)) as? [String: [String: Any]]
        #expect(object?["error"]?["code"] as? String == "retired_key" && object?["error"]?["exit_code"] as? Int == 6)
        #expect(try box.vault(["put", "x"], stdin: Data("y".utf8), extraEnvironment: env).status == 6)
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == old)

        // Another vault with the same passphrase, copied over the path.
        try changed.write(to: URL(fileURLWithPath: box.vaultPath))
        let otherPath = box.directory + "/other.vault"
        #expect(try box.vault(["init", "--vault", otherPath], extraEnvironment: env).status == 0)
        try Data(contentsOf: URL(fileURLWithPath: otherPath)).write(to: URL(fileURLWithPath: box.vaultPath))
        let other = try box.vault(["list"], extraEnvironment: env)
        #expect(other.status == 6 && other.stdout.isEmpty)
        #expect(other.stderr == """
            vault: refusing to open vault '\(box.vaultPath)': it is another vault than the one last seen at this path (another data key)
            hint: a key change made on another machine is taken by 'vault sync' or 'vault merge FILE' (they check its key links): put this machine's own file back and run one of them; only if you put another vault here on purpose, pass --accept-rollback once

            """)
        #expect(try box.vault(["list", "--accept-rollback"], extraEnvironment: env).status == 0)
        #expect(try box.vault(["list"], extraEnvironment: env).status == 0)
    }

    @Test func defaultStateDirectoryIsUnderHome() throws {
        let box = try Sandbox()
        let home = box.directory + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)
        let env = ["HOME": home]
        #expect(try box.vault(["init"], extraEnvironment: env).status == 0)
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8), extraEnvironment: env).status == 0)
        let records = (try? FileManager.default.contentsOfDirectory(atPath: home + "/.local/state/vault")) ?? []
        #expect(records.filter { $0.hasSuffix(".generation") }.count == 1, "\(records)")
    }

    /// Issue 18 §6: on version 2 the record follows the vault's id and data keys: after `vault passwd`, a copy
    /// from before it is refused at any path (6, retired_key), a path never seen included.
    @Test func aCopyFromBeforeAPassphraseChangeIsRefusedAtAnyPath() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8)).status == 0)
        let older = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        let newPassphrase = box.directory + "/new-passphrase"
        try box.write("another passphrase\n", to: newPassphrase)
        #expect(try box.vault(["passwd", "--new-passphrase-file", newPassphrase]).status == 0)
        let moved = box.directory + "/vaults/moved.vault"
        try older.write(to: URL(fileURLWithPath: moved))
        chmod(moved, 0o600)
        let refused = try box.vault(["list", "--vault", moved, "--json"])
        #expect(refused.status == 6 && refused.stdout.isEmpty)
        #expect(refused.stderr.contains(#""code":"retired_key""#), "\(refused.stderr)")
        let accepted = try box.vault(["list", "--vault", moved, "--accept-rollback"])
        #expect(accepted.status == 0 && accepted.stdoutText == "k\n", "\(accepted.stderr)")
    }
}

import Foundation
import Testing
import VaultCore

/// Issue 35 §1: a merge says which entries' local changes lost, and to whom; replicas have names people know
/// (user@host at first, `vault replica name NEW`), stored in the vault, shown by history, show and merge reports.
@Suite(.processTimeLimit) struct ReplicaNameTests {
    func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
    }

    /// The name a replica of this test's user takes: `user@host`.
    static var userAtHost: String {
        let user = String(cString: getpwuid(geteuid())!.pointee.pw_name)
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, 255)
        return user + "@" + String(cString: host)
    }

    /// Two machines (two state directories) with a vault each, the second a copy of the first, named alice@laptop and
    /// bob@desk; both change `shared`, bob later.
    func twoMachines(_ box: Sandbox) throws -> (copy: String, here: [String: String], there: [String: String]) {
        let here = ["XDG_STATE_HOME": box.directory + "/state-a"], there = ["XDG_STATE_HOME": box.directory + "/state-b"]
        #expect(try box.vault(["init"], extraEnvironment: here).status == 0)
        #expect(try box.vault(["put", "shared"], stdin: Data("1".utf8), extraEnvironment: here).status == 0)
        let copy = box.directory + "/vaults/copy.vault"
        try FileManager.default.copyItem(atPath: box.vaultPath, toPath: copy)
        let named = try box.vault(["replica", "name", "alice@laptop"], extraEnvironment: here)
        #expect(named.status == 0 && named.stdoutText == "this machine's replica of '\(box.vaultPath)' is now named 'alice@laptop'\n", "\(named.stderr)")
        #expect(try box.vault(["replica", "name", "bob@desk", "--vault", copy], extraEnvironment: there).status == 0)
        #expect(try box.vault(["put", "shared", "--force"], stdin: Data("2".utf8), extraEnvironment: here).status == 0)
        usleep(5_000)
        #expect(try box.vault(["put", "shared", "--force", "--vault", copy], stdin: Data("3".utf8), extraEnvironment: there).status == 0)
        return (copy, here, there)
    }

    @Test func aNewReplicaIsUserAtHostAndTheNameCanBeChanged() throws {
        let box = try Sandbox()
        let here = ["XDG_STATE_HOME": box.directory + "/state-a"]
        #expect(try box.vault(["init"], extraEnvironment: here).status == 0)
        #expect(try box.vault(["replica", "name"], extraEnvironment: here).stdoutText == Self.userAtHost + "\n")
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8), extraEnvironment: here).status == 0)
        let show = try box.vault(["show", "k"], extraEnvironment: here).stdoutText
        #expect(show.contains(" by \(Self.userAtHost)\n") && !show.contains("(replica "), "\(show)")
        #expect(try box.vault(["replica", "name", "alice@laptop"], extraEnvironment: here).status == 0)
        #expect(try box.vault(["replica"], extraEnvironment: here).stdoutText == "alice@laptop\n")
        // The name is the replica's, not the version's: every version it made shows it now.
        let history = try box.vault(["history", "k"], extraEnvironment: here).stdoutText
        #expect(history.hasPrefix("version 0 (current)  ") && history.contains("  alice@laptop\n"), "\(history)")

        // A bad name: exit 64, nothing kept.
        let bad = try box.vault(["replica", "name", "a\u{7}b"], extraEnvironment: here)
        #expect(bad.status == 64 && bad.stderr.contains("a replica's name is 1 to 64 bytes without control characters"), "\(bad.stderr)")
        let long = try box.vault(["replica", "name", String(repeating: "x", count: 65)], extraEnvironment: here)
        #expect(long.status == 64)
        #expect(try box.vault(["replica"], extraEnvironment: here).stdoutText == "alice@laptop\n")
    }

    @Test func aMergeNamesTheEntriesWhoseLocalChangeLostAndWhoWon() throws {
        let box = try Sandbox()
        let (copy, here, there) = try twoMachines(box)
        let dry = try box.vault(["merge", copy, "--dry-run"], extraEnvironment: here)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdoutText == """
            would merge '\(copy)' into '\(box.vaultPath)': 0 added, 0 updated, 0 deleted, 0 resurrected, 1 conflict
              your change to shared lost to a later one from bob@desk; 'vault history shared' shows it as version 1

            """)
        let merged = try box.vault(["merge", copy, "--json"], extraEnvironment: here)
        #expect(merged.status == 0, "\(merged.stderr)")
        let lost = try #require(try json(merged.stdout)["lost"] as? [[String: Any]])
        #expect(lost.count == 1 && lost[0]["name"] as? String == "shared" && lost[0]["winner"] as? String == "bob@desk"
            && lost[0]["version"] as? Int == 1 && (lost[0]["winner_replica"] as? String)?.count == 16)
        // history: who made each version; version 1 is the lost change, marked.
        let history = try box.vault(["history", "shared"], extraEnvironment: here).stdoutText
        let heads = history.split(separator: "\n").filter { $0.hasPrefix("version") }
        #expect(heads.count == 3 && heads[0].hasSuffix("  bob@desk") && heads[1].hasSuffix("  alice@laptop  conflict"), "\(history)")
        #expect(heads[2].hasSuffix("  alice@laptop"), "the first version, made before the rename, by the same replica: \(history)")
        let show = try json(box.vault(["show", "shared", "--json"], extraEnvironment: here).stdout)
        #expect(show["replica_name"] as? String == "bob@desk")

        // The names survive the merge both ways: the copy, merged from here, names alice too.
        let dryBack = try json(box.vault(["merge", box.vaultPath, "--vault", copy, "--dry-run", "--json"], extraEnvironment: there).stdout)
        let won = try #require(dryBack["won"] as? [[String: Any]], "\(dryBack)")
        #expect(won.count == 1 && won[0]["name"] as? String == "shared" && won[0]["loser"] as? String == "alice@laptop"
            && won[0]["version"] as? Int == 1 && (won[0]["loser_replica"] as? String)?.count == 16)
        #expect(dryBack["conflicts"] as? [String] == ["shared"] && dryBack["updated"] as? [String] == [])
        let back = try box.vault(["merge", box.vaultPath, "--vault", copy], extraEnvironment: there)
        #expect(back.status == 0 && !back.stdoutText.contains("lost"), "bob's change won: nothing of bob's lost\n\(back.stdoutText)")
        #expect(back.stdoutText.contains("\n  conflict: shared: your change won over alice@laptop's (kept as version 1)\n"), "\(back.stdoutText)")
        let theirs = try box.vault(["history", "shared", "--vault", copy], extraEnvironment: there).stdoutText
        #expect(theirs.contains("  alice@laptop  conflict\n"), "\(theirs)")
    }

    /// A file without names (made before them): history and show give the replica's id, as before.
    @Test func aFileWithoutNamesShowsReplicaIDs() throws {
        let box = try Sandbox()
        let path = box.directory + "/vaults/plain.vault"
        try FileManager.default.createDirectory(atPath: box.directory + "/vaults", withIntermediateDirectories: true)
        // Made with the library below the CLI (no name given), as a vault written before names were.
        let store = DocumentStore(storage: LocalFileStorage(path: path), replica: ReplicaID(rawValue: 0x0123_4567_89ab_cdef), policy: .insecureForTesting)
        try store.create(passphrase: SecureBytes(string: "correct horse battery staple"), parameters: .init(opsLimit: 1, memLimitBytes: 8192))
        try store.update([.setField(entry: "k", field: "password", value: SecureBytes(string: "v"), secret: nil)])
        store.close()
        let history = try box.vault(["history", "k", "--vault", path], extraEnvironment: ["XDG_STATE_HOME": box.directory + "/s"])
        #expect(history.status == 0 && history.stdoutText.hasPrefix("version 0 (current)  ")
            && history.stdoutText.contains("  replica 0123456789abcdef\n"), "\(history.stdoutText) \(history.stderr)")
        let show = try box.vault(["show", "k", "--vault", path], extraEnvironment: ["XDG_STATE_HOME": box.directory + "/s"]).stdoutText
        #expect(show.contains(" by replica 0123456789abcdef\n"), "\(show)")
    }
}

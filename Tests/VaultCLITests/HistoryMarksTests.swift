import Foundation
import Testing

/// Issue 35 §1: `vault history` marks which fields each version changed from the one before (names only, never
/// values), and who made it.
@Suite(.processTimeLimit) struct HistoryMarksTests {
    @Test func eachVersionNamesTheFieldsItChanged() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "k"], stdin: Data("v1".utf8)).status == 0)
        #expect(try box.vault(["put", "k", "--field", "username"], stdin: Data("alice".utf8)).status == 0)
        #expect(try box.vault(["put", "k", "--force"], stdin: Data("v2".utf8)).status == 0)
        // Removes username, changes the password, adds url (an EDITOR that writes the file itself).
        let edit = try box.vault(["edit", "k"], extraEnvironment: ["EDITOR": "printf 'password: v3\\nurl: https://x.example\\n' >"])
        #expect(edit.status == 0, "\(edit.stderr)")
        let history = try box.vault(["history", "k"])
        #expect(history.status == 0)
        let lines = history.stdoutText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let heads = lines.filter { $0.hasPrefix("version ") }
        #expect(heads.count == 4 && heads.allSatisfy { $0.hasSuffix("  \(ReplicaNameTests.userAtHost)") }, "\(heads)")
        let marks = lines.filter { $0.hasPrefix("  changed: ") || $0.hasPrefix("  removed: ") }
        #expect(marks == ["  changed: password, url; removed: username", "  changed: password", "  changed: username"], "\(history.stdoutText)")
        #expect(!history.stdoutText.contains("v1") && !history.stdoutText.contains("v3"), "values masked")
        // The oldest version has nothing before it: no mark. JSON: the same, null for the oldest.
        let json = try #require(try JSONSerialization.jsonObject(with: box.vault(["history", "k", "--json"]).stdout) as? [String: Any])
        let versions = try #require(json["versions"] as? [[String: Any]])
        #expect(versions.map { $0["changed"] as? [String] } == [["password", "url"], ["password"], ["username"], nil])
        #expect(versions.map { $0["removed"] as? [String] } == [["username"], [], [], nil])
        #expect(versions[3]["changed"] is NSNull)
        // One version alone (--version) still compares with the one before it.
        let one = try box.vault(["history", "k", "--version", "1"])
        #expect(one.stdoutText.contains("\n  changed: password\n"), "\(one.stdoutText)")
    }
}

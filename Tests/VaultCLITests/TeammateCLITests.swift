import Foundation
import Testing

/// Issue 35 §4: a teammate's key removed: the report says what it could read (the count; `--list` the names, never
/// values) and that those secrets should be changed, with the real age-keygen's keys.
@Suite(.processTimeLimit) struct TeammateCLITests {
    @Test(.enabled(if: RecipientCLITests.hasAge || ProcessInfo.processInfo.environment["CI"] == "true", RecipientCLITests.needsAge))
    func removingAKeyNamesWhatItCouldReadAndSaysToChangeIt() throws {
        try #require(RecipientCLITests.hasAge, "age is needed (CI=true)")
        let team = try RecipientCLITests.Team()
        #expect(try team.owner(["init"]).status == 0)
        for (name, value) in [("web/github", "t0k3n-1"), ("aws", "t0k3n-2")] {
            #expect(try team.owner(["put", name], stdin: Data(value.utf8)).status == 0)
        }
        #expect(try team.owner(["recipients", "add", team.recipient, team.otherRecipient]).status == 0)
        let listed = try team.owner(["recipients", "remove", team.otherRecipient, "--list"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdoutText == """
            removed recipient \(team.otherRecipient); the vault's key was rotated
            the removed key could read all 2 entries of this vault (and may have kept a copy): change those secrets where they are used:
              aws
              web/github

            """)
        #expect(!listed.stdoutText.contains("t0k3n") && !listed.stderr.contains("t0k3n"))

        #expect(try team.owner(["recipients", "add", team.otherRecipient]).status == 0)
        let asJSON = try team.owner(["recipients", "remove", team.otherRecipient, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: asJSON.stdout) as? [String: Any], "\(asJSON.stderr)")
        #expect(object["exposed_count"] as? Int == 2 && object["exposed"] == nil && object["key_rotated"] as? Bool == true)
    }
}

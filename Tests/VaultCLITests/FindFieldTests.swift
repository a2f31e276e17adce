import Foundation
import Testing

/// Issue 35 §2: `vault find` searches fields that are not secret (url, username, notes), never secret ones; a
/// missing name suggests the entries it is the last path component of (`github` → `web/github`, `totp/github`).
@Suite(.processTimeLimit) struct FindFieldTests {
    let box: Sandbox

    init() throws {
        box = try Sandbox()
        try box.initVault()
        for (entry, field, value, secret) in [
            ("web/github", "password", "s3cret-github-pw", nil), ("web/github", "username", "alice", nil),
            ("web/github", "url", "https://github.com/login", nil), ("totp/github", "otp", "JBSWY3DPEHPK3PXP", nil),
            ("mail", "notes", "GitHub recovery codes are in the safe", nil), ("bank", "api key", "github-token-in-a-secret", true),
            ("bank", "notes", "private notes about github", true),
        ] as [(String, String, String, Bool?)] {
            let put = try box.vault(["put", entry, "--field", field] + (secret == true ? ["--secret"] : []), stdin: Data(value.utf8))
            #expect(put.status == 0, "\(put.stderr)")
        }
    }

    @Test func nonSecretFieldsAreSearchedSecretOnesNever() throws {
        let found = try box.vault(["find", "github"])
        #expect(found.status == 0 && found.stdoutText == "mail\ntotp/github\nweb/github\n", "bank's secret fields are not searched: \(found.stdoutText)")
        let json = try #require(try JSONSerialization.jsonObject(with: box.vault(["find", "github", "--json"]).stdout) as? [String: Any])
        #expect(json["names"] as? [String] == ["mail", "totp/github", "web/github"])
        #expect(json["fields"] as? [String: [String]] == ["mail": ["notes"], "web/github": ["url"]])
        #expect(try box.vault(["find", "ALICE"]).stdoutText == "web/github\n")
        #expect(try box.vault(["find", "*/login"]).stdoutText == "web/github\n", "a glob over a field's whole value")
        let secret = try box.vault(["find", "s3cret"])
        #expect(secret.status == 2 && secret.stdoutText.isEmpty && secret.stderr == "vault: no entry matches 's3cret'\n", "\(secret.stderr)")
        #expect(try box.vault(["find", "token"]).status == 2)
        #expect(try box.vault(["find", "github", "--names-only"]).stdoutText == "totp/github\nweb/github\n")
    }

    @Test func aMissingNameSuggestsTheEntriesItEndsWith() throws {
        let get = try box.vault(["get", "github"])
        #expect(get.status == 2)
        #expect(get.stderr == "vault: no entry 'github' in vault '\(box.vaultPath)'\nhint: did you mean 'totp/github' or 'web/github'? ('vault list' shows the names)\n",
                "\(get.stderr)")
        let typo = try box.vault(["show", "web/githbu"])
        #expect(typo.status == 2 && typo.stderr.contains("did you mean 'web/github'?"), "\(typo.stderr)")
        let none = try box.vault(["get", "nothing-like-it"])
        #expect(none.status == 2 && none.stderr.hasSuffix("hint: 'vault list' shows the names\n"), "\(none.stderr)")
    }

    /// Through the agent `find` reads every entry's non-secret fields in one request (`search` with no condition)
    /// and answers as the local vault does, fields and all; a version-1 vault has names only, both ways.
    @Test func throughTheAgentFindAnswersAsTheLocalVault() throws {
        let agent = try AgentBox()
        try agent.initVault()
        for (entry, field, value) in [("web/github", "password", "s3cret-github-pw"), ("web/github", "url", "https://github.com/login"),
                                      ("mail", "notes", "GitHub recovery codes are in the safe")] {
            #expect(try agent.around(["put", entry, "--field", field], stdin: Data(value.utf8)).status == 0)
        }
        try agent.unlock()
        let found = try agent.vault(["find", "github", "--json"])
        #expect(found.status == 0, "\(found.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: found.stdout) as? [String: Any])
        #expect(json["fields"] as? [String: [String]] == ["mail": ["notes"], "web/github": ["url"]])
        try agent.expectSameThroughTheAgent([["find", "github"], ["find", "github", "--json"], ["find", "s3cret"], ["find", "*/login"],
                                             ["find", "git", "--names-only"]])

        let old = try AgentBox()
        #expect(try old.around(["init", "--format", "1"]).status == 0)
        #expect(try old.around(["put", "web/github"], stdin: Data("pw".utf8)).status == 0)
        try old.unlock()
        try old.expectSameThroughTheAgent([["find", "github"], ["find", "pw"]])
        #expect(try old.vault(["find", "github"]).stdoutText == "web/github\n")
    }
}

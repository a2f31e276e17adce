import Foundation
import Testing

/// Issue 18 §4: the verbs of format version 2's entries (`put --field`, `get --field/--version`, `show`,
/// `history`, `restore`), locally and through the agent, text and `--json`, and their bad input.
@Suite(.processTimeLimit) struct FieldVerbsTests {
    func json(_ result: CLIResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.stdoutText) \(result.stderr)")
    }

    func json(_ result: AgentRun) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.stdoutText) \(result.stderr)")
    }

    func fileBytes(_ box: Sandbox) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) }

    @Test func initMakesVersion3AndFormats1And2StayAvailable() throws {
        let box = try Sandbox()
        let made = try box.vault(["init", "--json"])
        #expect(made.status == 0, "\(made.stderr)")
        let object = try json(made)
        #expect(object["format_version"] as? Int == 3)
        let id = try #require(object["vault_id"] as? String)
        #expect(id.count == 32 && id.allSatisfy { "0123456789abcdef".contains($0) })
        let info = try json(box.vault(["info", "--json"], passphrase: false))
        #expect(info["format_version"] as? Int == 3 && info["vault_id"] as? String == id)
        #expect(try fileBytes(box)[8] == 3)

        let older = box.directory + "/vaults/old.vault"
        let one = try box.vault(["init", "--vault", older, "--format", "1"])
        #expect(one.status == 0 && one.stdoutText.contains("(format version 1, "), "\(one.stderr)")
        #expect(try json(box.vault(["info", "--vault", older, "--json"], passphrase: false))["format_version"] as? Int == 1)

        let two = box.directory + "/vaults/two.vault"
        #expect(try box.vault(["init", "--vault", two, "--format", "2"]).status == 0)
        #expect(try json(box.vault(["info", "--vault", two, "--json"], passphrase: false))["format_version"] as? Int == 2)
        let bad = try box.vault(["init", "--vault", box.directory + "/vaults/x.vault", "--format", "4"])
        #expect(bad.status == 64)
        #expect(bad.stderr.hasPrefix("vault: --format takes 1, 2 or 3 (the format version), not 4\n"), "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: box.directory + "/vaults/x.vault"))
    }

    @Test func fieldsAreStoredApartAndReadBackExactly() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "github"], stdin: Data("s3cret".utf8)).status == 0)
        #expect(try box.vault(["put", "github", "--field", "username"], stdin: Data("alice".utf8)).status == 0)
        #expect(try box.vault(["put", "github", "--field", "notes"], stdin: Data("line 1\nline 2\u{1B}[31m".utf8)).status == 0)
        #expect(try box.vault(["put", "github", "--field", "api key", "--secret"], stdin: Data([0xFF, 0x00])).status == 0)
        let stored = try box.vault(["put", "github", "--field", "url", "--json"], stdin: Data("https://github.com".utf8))
        #expect(try json(stored)["field"] as? String == "url" && json(stored)["replaced"] as? Bool == false)

        // Each field's exact bytes; the value is still the password field, the other fields untouched by a put.
        #expect(try box.vault(["get", "github"]).stdout == Data("s3cret".utf8))
        #expect(try box.vault(["get", "github", "--field", "password"]).stdout == Data("s3cret".utf8))
        #expect(try box.vault(["get", "github", "--field", "username"]).stdout == Data("alice".utf8))
        #expect(try box.vault(["get", "github", "--field", "api key"]).stdout == Data([0xFF, 0x00]))
        #expect(try box.vault(["put", "github", "--force"], stdin: Data("n3w".utf8)).status == 0)
        #expect(try box.vault(["get", "github", "--field", "username"]).stdout == Data("alice".utf8))
        let got = try json(box.vault(["get", "github", "--field", "api key", "--json"]))
        #expect(got["value"] as? String == "/wA=" && got["encoding"] as? String == "base64" && got["field"] as? String == "api key")

        // show: masked unless --reveal; the id and times from --json; control characters escaped in text.
        let shown = try json(box.vault(["show", "github", "--json"]))
        let id = try #require(shown["id"] as? String)
        #expect(id.count == 32)
        #expect(shown["earlier_versions"] as? Int == 5)
        let fields = try #require(shown["fields"] as? [[String: Any]])
        #expect(fields.map { $0["name"] as? String } == ["password", "username", "notes", "api key", "url"])
        #expect(fields.map { $0["secret"] as? Bool } == [true, false, false, true, false])
        #expect(fields[0]["value"] == nil && fields[0]["masked"] as? Bool == true)
        #expect(fields[3]["value"] == nil && fields[3]["masked"] as? Bool == true)
        #expect(fields[1]["value"] as? String == "alice")
        let revealed = try #require(try json(box.vault(["show", "github", "--json", "--reveal"]))["fields"] as? [[String: Any]])
        #expect(revealed[0]["value"] as? String == "n3w" && revealed[3]["encoding"] as? String == "base64")

        let text = try box.vault(["show", "github"])
        #expect(text.status == 0)
        let created = try #require(shown["created"] as? String), modified = try #require(shown["modified"] as? String)
        let replica = try #require(shown["replica"] as? String)
        #expect(shown["replica_name"] as? String == ReplicaNameTests.userAtHost)
        #expect(text.stdoutText == """
            name: github
            id: \(id)
            created: \(created)
            modified: \(modified) by \(ReplicaNameTests.userAtHost)
            earlier versions: 5

            password: ********
            username: alice
            notes: line 1
              line 2\\x1B[31m
            api key: ********
            url: https://github.com

            """)
        #expect(!text.stdoutText.contains("n3w") && !text.stderr.contains("n3w"))
        let reveal = try box.vault(["show", "github", "--reveal"]).stdoutText
        #expect(reveal.contains("password: n3w\n") && reveal.contains("api key: (2 bytes, not UTF-8)\n"))
    }

    @Test func historyNumbersVersionsAndRestoreMakesOneCurrent() throws {
        let box = try Sandbox()
        try box.initVault()
        for value in ["one", "two", "three"] {
            #expect(try box.vault(["put", "k", "--force"], stdin: Data(value.utf8)).status == 0)
        }
        let history = try json(box.vault(["history", "k", "--json", "--reveal"]))
        let versions = try #require(history["versions"] as? [[String: Any]])
        #expect(versions.map { $0["version"] as? Int } == [0, 1, 2])
        #expect(versions.map { $0["current"] as? Bool } == [true, false, false])
        #expect(versions.map { $0["conflict"] as? Bool } == [false, false, false])
        #expect(versions.map { (($0["fields"] as? [[String: Any]])?.first?["value"] as? String) } == ["three", "two", "one"])
        let times = versions.compactMap { $0["time"] as? String }
        #expect(times.count == 3 && times == times.sorted(by: >))
        let masked = try #require(try json(box.vault(["history", "k", "--json"]))["versions"] as? [[String: Any]])
        #expect(masked.allSatisfy { (($0["fields"] as? [[String: Any]])?.first?["masked"] as? Bool) == true })
        let text = try box.vault(["history", "k"]).stdoutText
        #expect(text.hasPrefix("version 0 (current)  ") && text.contains("\n  password: ********\nversion 1  "))
        #expect(!text.contains("two"))

        #expect(try box.vault(["get", "k", "--version", "2"]).stdoutText == "one")
        #expect(try box.vault(["get", "k", "--version", "0"]).stdoutText == "three")
        let restored = try box.vault(["restore", "k", "--version", "2", "--json"])
        #expect(restored.status == 0 && restored.stdoutText == "{\"name\":\"k\",\"restored\":true,\"version\":2}\n", "\(restored.stderr)")
        #expect(try box.vault(["get", "k"]).stdoutText == "one")
        #expect(try box.vault(["get", "k", "--version", "1"]).stdoutText == "three", "the replaced version went into the history")

        // A version that does not exist: 2, a clear message, nothing written.
        let before = try fileBytes(box)
        let missing = try box.vault(["restore", "k", "--version", "9"])
        #expect(missing.status == 2)
        #expect(missing.stderr == "vault: entry 'k' has no version 9\nhint: 'vault history NAME' shows the versions\n")
        #expect(try box.vault(["get", "k", "--version", "9"]).status == 2)
        #expect(try box.vault(["restore", "k", "--version", "0"]).status == 64)
        #expect(try box.vault(["get", "k", "--version", "-1"]).status == 64)
        let noEntry = try box.vault(["restore", "kk", "--version", "1"])
        #expect(noEntry.status == 2 && noEntry.stderr.contains("no entry 'kk'") && noEntry.stderr.contains("did you mean 'k'?"), "\(noEntry.stderr)")
        #expect(try fileBytes(box) == before)
    }

    /// Issue 35 §5: `--version N` of `show` and `history` is the entry's version, never the program's `--version`.
    @Test func showAndHistoryTakeVersionAsTheEntrysVersion() throws {
        let box = try Sandbox()
        try box.initVault()
        for value in ["one", "two"] {
            #expect(try box.vault(["put", "k", "--force"], stdin: Data(value.utf8)).status == 0)
        }
        let shown = try box.vault(["show", "k", "--version", "1", "--reveal"])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdoutText.hasPrefix("name: k\nversion: 1\nid: ") && shown.stdoutText.hasSuffix("\npassword: one\n"), "\(shown.stdoutText)")
        let shownJSON = try json(box.vault(["show", "k", "--version", "0", "--reveal", "--json"]))
        #expect(shownJSON["version"] as? Int == 0 && (shownJSON["fields"] as? [[String: Any]])?.first?["value"] as? String == "two")
        let history = try box.vault(["history", "k", "--version", "1", "--reveal"])
        #expect(history.status == 0 && history.stdoutText.hasPrefix("version 1  ") && history.stdoutText.hasSuffix("\n  password: one\n"),
            "\(history.stdoutText) \(history.stderr)")
        #expect(!history.stdoutText.contains("version 0"))
        let only = try json(box.vault(["history", "k", "--version", "0", "--json"]))
        #expect((only["versions"] as? [[String: Any]])?.map { $0["version"] as? Int } == [0])

        for verb in ["show", "history"] {
            let missing = try box.vault([verb, "k", "--version", "5"])
            #expect(missing.status == 2 && missing.stderr == "vault: entry 'k' has no version 5\nhint: 'vault history NAME' shows the versions\n",
                "\(verb): \(missing.stderr)")
            let negative = try box.vault([verb, "k", "--version", "-1"])
            #expect(negative.status == 64 && negative.stdout.isEmpty, "\(verb): \(negative.stderr)")
        }
        // The program's own version stays where it is.
        #expect(try box.vault(["--version"], passphrase: false).stdoutText == "0.1.0\n")
    }

    @Test func badFieldInputIsRefusedAndWritesNothing() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "k", "--field", "username"], stdin: Data("alice".utf8)).status == 0)
        let before = try fileBytes(box)

        let control = try box.vault(["put", "k", "--field", "bad\u{1}name"], stdin: Data("x".utf8))
        #expect(control.status == 64)
        #expect(control.stderr.hasPrefix("vault: --field: invalid field name: a field name has no control characters\n"), "\(control.stderr)")
        #expect(try box.vault(["put", "k", "--field", ""], stdin: Data("x".utf8)).status == 64)
        #expect(try box.vault(["put", "k", "--field", String(repeating: "f", count: 256)], stdin: Data("x".utf8)).status == 64)
        let clobber = try box.vault(["put", "k", "--field", "username", "--no-clobber"], stdin: Data("bob".utf8))
        #expect(clobber.status == 7 && clobber.stderr == "vault: entry 'k' already has a field 'username'\n", "\(clobber.stderr)")
        let empty = try box.vault(["put", "k", "--field", "username"], stdin: Data())
        #expect(empty.status == 1, "an empty input never replaces an existing field")
        #expect(try fileBytes(box) == before)

        // Reading a field or an entry that is not there: 2, with a hint.
        let noField = try box.vault(["get", "k", "--field", "url"])
        #expect(noField.status == 2 && noField.stdout.isEmpty)
        #expect(noField.stderr == "vault: entry 'k' has no field 'url'\nhint: 'vault show NAME' shows the entry's fields\n")
        let noPassword = try box.vault(["get", "k"])
        #expect(noPassword.status == 2 && noPassword.stderr.hasPrefix("vault: entry 'k' has no field 'password'\n"), "\(noPassword.stderr)")
        let json = try box.vault(["get", "k", "--field", "url", "--json"])
        #expect(json.status == 2 && json.stderr.contains(#""code":"no_such_field""#), "\(json.stderr)")
        #expect(try box.vault(["show", "q"]).status == 2)
        #expect(try box.vault(["history", "q"]).status == 2)
        // --no-clobber on a field that is free stores it.
        #expect(try box.vault(["put", "k", "--field", "url", "--no-clobber"], stdin: Data("u".utf8)).status == 0)
        #expect(try box.vault(["get", "k", "--field", "url"]).stdoutText == "u")
    }

    @Test func aVersion1VaultSaysWhatItLacks() throws {
        let box = try Sandbox()
        #expect(try box.vault(["init", "--format", "1"]).status == 0)
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8)).status == 0)
        let before = try fileBytes(box)
        let expected = """
            vault: vault '\(box.vaultPath)' is format version 1: fields, history and entry ids need format version 2
            hint: 'vault upgrade' converts the vault to format version 3 (an older vault cannot open it then)

            """
        for arguments in [["get", "k", "--field", "username"], ["get", "k", "--version", "1"], ["show", "k"], ["history", "k"],
                          ["restore", "k", "--version", "1"]] {
            let result = try box.vault(arguments)
            #expect(result.status == 64 && result.stderr == expected, "\(arguments): \(result.stderr)")
        }
        let put = try box.vault(["put", "k", "--field", "username"], stdin: Data("alice".utf8))
        #expect(put.status == 64 && put.stderr == expected)
        #expect(try fileBytes(box) == before)
        // The value is the password field on either version.
        #expect(try box.vault(["get", "k", "--field", "password"]).stdoutText == "v")
        #expect(try box.vault(["put", "k", "--field", "password", "--force"], stdin: Data("w".utf8)).status == 0)
        #expect(try box.vault(["get", "k"]).stdoutText == "w")
    }

    @Test func deleteLeavesATombstoneMoveKeepsTheIdCopyMintsOne() throws {
        let box = try Sandbox()
        try box.initVault()
        #expect(try box.vault(["put", "a"], stdin: Data("v".utf8)).status == 0)
        #expect(try box.vault(["put", "a", "--field", "username"], stdin: Data("u".utf8)).status == 0)
        let id = try json(box.vault(["show", "a", "--json"]))["id"] as? String
        #expect(try box.vault(["mv", "a", "b"]).status == 0)
        let moved = try json(box.vault(["show", "b", "--json"]))
        #expect(moved["id"] as? String == id)
        #expect(try box.vault(["get", "b", "--field", "username"]).stdoutText == "u", "a move keeps every field")
        #expect(try box.vault(["cp", "b", "c"]).status == 0)
        let copied = try json(box.vault(["show", "c", "--json"]))
        #expect(copied["id"] as? String != id && (copied["id"] as? String)?.count == 32)
        #expect(try box.vault(["get", "c", "--field", "username"]).stdoutText == "u")
        #expect(try box.vault(["delete", "b", "--yes"]).status == 0)
        #expect(try box.vault(["list"]).stdoutText == "c\n")
        #expect(try box.vault(["get", "b"]).status == 2)
        #expect(try box.vault(["show", "b"]).status == 2)
    }

    /// Every new verb through the agent gives the same bytes and exit codes as without it.
    @Test func throughTheAgentTheSameBytesAndExitCodes() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        try box.initVault()
        try box.unlock()
        #expect(try box.vault(["put", "gh"], stdin: Data("one".utf8)).status == 0)
        #expect(try box.vault(["put", "gh", "--field", "username"], stdin: Data("alice".utf8)).status == 0)
        #expect(try box.vault(["put", "gh", "--field", "token", "--secret"], stdin: Data("t0k".utf8)).status == 0)
        #expect(try box.vault(["put", "gh", "--force"], stdin: Data("two".utf8)).status == 0)
        let clobber = try box.vault(["put", "gh", "--field", "username", "--no-clobber"], stdin: Data("x".utf8))
        #expect(clobber.status == 7 && clobber.stderr == "vault: entry 'gh' already has a field 'username'\n", "\(clobber.stderr)")
        let commands: [[String]] = [
            ["get", "gh", "--field", "username"], ["get", "gh", "--field", "token", "--json"], ["get", "gh", "--version", "1"],
            ["show", "gh"], ["show", "gh", "--json", "--reveal"], ["history", "gh"], ["history", "gh", "--json"],
            ["get", "gh", "--field", "nope"], ["get", "gh", "--version", "7", "--json"], ["show", "hg"],
        ]
        try box.expectSameThroughTheAgent(commands)
        #expect(try box.vault(["get", "gh", "--version", "1"]).stdoutText == "one")
        #expect(try box.vault(["restore", "gh", "--version", "1"]).status == 0)
        #expect(try box.around(["get", "gh"]).stdoutText == "one")
        #expect(try box.vault(["get", "gh", "--field", "token"]).stdoutText == "t0k")
    }

    @Test func throughTheAgentAVersion1VaultSaysWhatItLacks() throws {
        let box = try AgentBox()
        defer { box.stopAgents() }
        #expect(try box.around(["init", "--format", "1"]).status == 0)
        #expect(try box.around(["put", "k"], stdin: Data("v".utf8)).status == 0)
        try box.unlock()
        for command in [["show", "k"], ["get", "k", "--field", "url"], ["put", "k", "--field", "url"]] {
            let agent = try box.vault(command, stdin: Data("u".utf8))
            let local = try box.around(command, stdin: Data("u".utf8))
            #expect(agent.status == 64 && agent.status == local.status, "\(command): \(agent.stderr)")
            #expect(agent.stderr == local.stderr, "\(command)")
        }
        #expect(try box.vault(["get", "k"]).stdoutText == "v")
    }
}

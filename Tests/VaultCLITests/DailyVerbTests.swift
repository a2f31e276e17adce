import Foundation
import Testing
import VaultCore

/// The verbs of daily use (issue 13): `mv`, `cp`, `delete` of several names, `put --no-clobber` and
/// `--trim-newline`, `get`'s newline on a terminal, `generate`, `find`. Through the real binary, with exact
/// stdout, stderr and exit codes, and the file left untouched by every refusal.
@Suite(.processTimeLimit) struct DailyVerbTests {
    /// A sandbox with a vault holding `entries` (name, value), put in that order.
    static func box(_ entries: [(String, String)]) throws -> Sandbox {
        let box = try Sandbox()
        try #require(try box.vault(["init"]).status == 0)
        for (name, value) in entries {
            let put = try box.vault(["put", name], stdin: Data(value.utf8))
            try #require(put.status == 0, "put \(name): \(put.stderr)")
        }
        return box
    }

    static func fileBytes(_ box: Sandbox) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) }

    /// `list --json` as name → (created, modified) strings.
    static func times(_ box: Sandbox) throws -> [String: (created: String, modified: String)] {
        let list = try box.vault(["list", "--json"])
        let object = try JSONSerialization.jsonObject(with: list.stdout) as? [String: [[String: Any]]]
        var out = [String: (created: String, modified: String)]()
        for entry in object?["entries"] ?? [] {
            out[entry["name"] as! String] = (entry["created"] as! String, entry["modified"] as! String)
        }
        return out
    }

    // MARK: mv and cp

    @Test func mvRenamesInOneWriteKeepingTheCreationTime() throws {
        let box = try Self.box([("old", "value-1"), ("other", "value-2")])
        let before = try Self.times(box)
        usleep(20_000)  // the times have millisecond resolution
        let move = try box.vault(["mv", "old", "new"])
        #expect(move.status == 0 && move.stdout.isEmpty && move.stderr == "", "mv: \(move.stderr)")
        #expect(try box.vault(["list"]).stdoutText == "new\nother\n")
        #expect(try box.vault(["get", "new"]).stdoutText == "value-1")
        let after = try Self.times(box)
        #expect(after["new"]?.created == before["old"]?.created, "mv did not keep the creation time")
        #expect(after["new"]?.modified != before["old"]?.modified)

        let json = try box.vault(["mv", "new", "newer", "--json"])
        #expect(json.status == 0 && json.stdoutText == #"{"from":"new","moved":true,"name":"newer"}"# + "\n")
    }

    @Test func mvAndCpRefuseAnExistingTargetUnlessForcedAndAMissingSource() throws {
        let box = try Self.box([("a", "value-a"), ("b", "value-b")])
        let file = try Self.fileBytes(box)
        for verb in ["mv", "cp"] {
            let onto = try box.vault([verb, "a", "b"])
            #expect(onto.status == 7 && onto.stdout.isEmpty, "\(verb): exit \(onto.status)")
            #expect(onto.stderr == "vault: an entry 'b' already exists in vault '\(box.vaultPath)'\n")
            let json = try box.vault([verb, "a", "b", "--json"])
            let error = try JSONSerialization.jsonObject(with: Data(json.stderr.utf8)) as? [String: [String: Any]]
            #expect(json.status == 7 && error?["error"]?["code"] as? String == "entry_exists"
                && error?["error"]?["exit_code"] as? Int == 7)
            let missing = try box.vault([verb, "zz", "c"])
            #expect(missing.status == 2)
            #expect(missing.stderr == "vault: no entry 'zz' in vault '\(box.vaultPath)'\nhint: 'vault list' shows the names\n")
            let same = try box.vault([verb, "a", "a"])
            #expect(same.status == 64 && same.stderr.contains("'a' and 'a' are the same entry"), "\(same.stderr)")
            #expect(try Self.fileBytes(box) == file, "\(verb): a refusal wrote the file")
        }
        let copy = try box.vault(["cp", "a", "b", "--force"])
        #expect(copy.status == 0 && copy.stderr == "")
        #expect(try box.vault(["get", "b"]).stdoutText == "value-a")
        #expect(try box.vault(["get", "a"]).stdoutText == "value-a")
        let move = try box.vault(["mv", "-f", "a", "b"])
        #expect(move.status == 0)
        #expect(try box.vault(["list"]).stdoutText == "b\n")
    }

    @Test func cpMakesANewEntryWithItsOwnTimes() throws {
        let box = try Self.box([("src", "copied value")])
        usleep(20_000)
        let copy = try box.vault(["cp", "src", "dst", "--json"])
        #expect(copy.status == 0 && copy.stdoutText == #"{"copied":true,"from":"src","name":"dst"}"# + "\n")
        #expect(try box.vault(["get", "dst"]).stdoutText == "copied value")
        let times = try Self.times(box)
        #expect(times["dst"]?.created != times["src"]?.created)
        #expect(try box.vault(["list"]).stdoutText == "dst\nsrc\n")
    }

    // MARK: delete, put

    @Test func deleteOfSeveralNamesIsAllOrNothing() throws {
        let box = try Self.box([("a", "1"), ("b", "2"), ("c", "3")])
        let file = try Self.fileBytes(box)
        let missing = try box.vault(["delete", "a", "zz", "b"])
        #expect(missing.status == 2)
        #expect(missing.stderr == "vault: no entry 'zz' in vault '\(box.vaultPath)'\nhint: 'vault list' shows the names\n")
        #expect(try Self.fileBytes(box) == file, "a failed delete removed something")
        let forced = try box.vault(["delete", "--force", "a", "zz", "b", "--json"])
        #expect(forced.status == 0 && forced.stdoutText == #"{"deleted":true,"names":["a","zz","b"]}"# + "\n")
        #expect(try box.vault(["list"]).stdoutText == "c\n")
        let one = try box.vault(["delete", "c", "--json"])
        #expect(one.stdoutText == #"{"deleted":true,"name":"c"}"# + "\n")
        let none = try box.vault(["delete"])
        #expect(none.status == 64 && none.stderr.contains("missing expected argument"), "\(none.stderr)")
    }

    @Test func putNoClobberFailsWithSevenAndStoresNothing() throws {
        let box = try Self.box([("k", "first")])
        let file = try Self.fileBytes(box)
        let refused = try box.vault(["put", "k", "--no-clobber"], stdin: Data("second".utf8))
        #expect(refused.status == 7)
        #expect(refused.stderr == "vault: an entry 'k' already exists in vault '\(box.vaultPath)'\n")
        #expect(try Self.fileBytes(box) == file)
        let fresh = try box.vault(["put", "new", "--no-clobber"], stdin: Data("v".utf8))
        #expect(fresh.status == 0)
        #expect(try box.vault(["get", "new"]).stdoutText == "v")
    }

    @Test("put --trim-newline drops exactly one final newline; without it the bytes stay exact",
        arguments: [("x\n", "x"), ("x\r\n", "x"), ("x\n\n", "x\n"), ("x", "x"), ("\n", ""), ("x\r", "x\r")])
    func putTrimNewline(input: String, stored: String) throws {
        let box = try Self.box([])
        #expect(try box.vault(["put", "k", "--trim-newline"], stdin: Data(input.utf8)).status == 0)
        #expect(try box.vault(["get", "k"]).stdout == Data(stored.utf8))
        #expect(try box.vault(["put", "exact"], stdin: Data(input.utf8)).status == 0)
        #expect(try box.vault(["get", "exact"]).stdout == Data(input.utf8))
    }

    // MARK: a terminal

    @Test func onATerminalGetEndsWithANewlineAndAnEmptyTypedValueIsRefused() throws {
        let box = try Self.box([("k", "the value")])
        let get = try PseudoTerminal.run(
            CLI.vault, ["get", "k", "--passphrase-file", box.passphraseFile], steps: [], environment: box.environment)
        #expect(get.status == 0)
        #expect(get.stdoutText == "the value\n[echo on]\n")
        let file = try Self.fileBytes(box)
        for keys in ["\n", "\u{04}"] {  // Enter alone, Ctrl-D
            let put = try PseudoTerminal.run(
                CLI.vault, ["put", "empty", "--passphrase-file", box.passphraseFile], steps: [("Value for", keys)],
                environment: box.environment)
            #expect(put.status == 1, "\(keys.debugDescription): exit \(put.status)")
            #expect(put.stdoutText.contains("vault: no value typed: nothing stored"), "\(put.stdoutText)")
            #expect(put.stdoutText.hasSuffix("[echo on]\n"))
        }
        #expect(try Self.fileBytes(box) == file)
    }

    /// The value and its newline in one write: two `vault get`s on one terminal printed value, value, newline,
    /// newline (seen in AgentClientTests' two concurrent clients).
    @Test func onATerminalGetWritesTheValueAndItsNewlineInOneWrite() throws {
        let strace = try #require(HygieneTests.strace, "strace is not installed: run scripts/install-deps --test")
        let box = try Self.box([("k", "the value")])
        let trace = box.directory + "/get.trace"
        let get = try PseudoTerminal.run(
            strace, ["-e", "trace=write", "-o", trace, CLI.vault, "get", "k", "--passphrase-file", box.passphraseFile],
            steps: [], environment: box.environment)
        #expect(get.status == 0)
        #expect(get.stdoutText == "the value\n[echo on]\n")
        let writes = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("write(1,") }
        #expect(writes.count == 1 && writes[0].hasPrefix(#"write(1, "the value\n", 10)"#), "writes to stdout: \(writes)")
    }

    /// `generate --print` on a terminal: the secret and its newline in one write too (issue 22: it made two).
    @Test func onATerminalGeneratePrintWritesTheSecretAndItsNewlineInOneWrite() throws {
        let strace = try #require(HygieneTests.strace, "strace is not installed: run scripts/install-deps --test")
        let box = try Self.box([])
        let trace = box.directory + "/generate.trace"
        let made = try PseudoTerminal.run(
            strace, ["-e", "trace=write", "-o", trace, CLI.vault, "generate", "pin", "--length", "6", "--charset", "digits", "--print",
                     "--passphrase-file", box.passphraseFile],
            steps: [], environment: box.environment)
        #expect(made.status == 0, "\(made.stdoutText)")
        let writes = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("write(1,") }
        #expect(writes.count == 1 && writes[0].contains(#"\n", 7)"#), "writes to stdout: \(writes)")
    }

    // MARK: generate

    @Test func generateStoresARandomSecretAndSaysItsEntropy() throws {
        let box = try Self.box([])
        let made = try box.vault(["generate", "token"])
        #expect(made.status == 0 && made.stdout.isEmpty)
        #expect(made.stderr == "vault: generated 24 characters from a set of 62: 142.9 bits of entropy\n")
        let token = try box.vault(["get", "token"]).stdoutText
        #expect(token.count == 24 && token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }, "\(token.count) characters")

        let printed = try box.vault(["generate", "pin", "--length", "4096", "--charset", "digits", "--print"])
        #expect(printed.status == 0)
        #expect(printed.stderr == "vault: generated 4096 characters from a set of 10: 13606.6 bits of entropy\n")
        let pin = try box.vault(["get", "pin"]).stdoutText
        #expect(printed.stdoutText == pin, "--print printed something other than what was stored")
        #expect(Set(pin) == Set("0123456789"), "4,096 draws missed a digit: not uniform over the set")

        let custom = try box.vault(["generate", "custom", "--length", "64", "--chars", "ab"])
        #expect(custom.stderr == "vault: generated 64 characters from a set of 2: 64.0 bits of entropy\n")
        #expect(Set(try box.vault(["get", "custom"]).stdoutText).isSubset(of: Set("ab")))

        let words = try box.vault(["generate", "phrase", "--words", "6", "--separator", "-", "--json", "--print"])
        let object = try JSONSerialization.jsonObject(with: words.stdout) as? [String: Any]
        #expect(object?["entropy_bits"] as? Double == 77.5 && object?["stored"] as? Bool == true)
        let phrase = try #require(object?["value"] as? String)
        #expect(try box.vault(["get", "phrase"]).stdoutText == phrase)
        // Six words of the list (some words hold a hyphen themselves, so count the list's words greedily).
        #expect(phrase.count >= 6 * 3 + 5 && phrase.allSatisfy { $0 == "-" || ("a"..."z").contains($0) }, "\(phrase)")
    }

    @Test func generateRefusesAnExistingNameAndBadOptions() throws {
        let box = try Self.box([("k", "keep me")])
        let file = try Self.fileBytes(box)
        let exists = try box.vault(["generate", "k"])
        #expect(exists.status == 7 && exists.stderr == "vault: an entry 'k' already exists in vault '\(box.vaultPath)'\n")
        #expect(try Self.fileBytes(box) == file)
        for bad in [["--length", "0"], ["--length", "4097"], ["--chars", "a"], ["--chars", "ab c"], ["--charset", "ab"], ["--charset", "digits", "--chars", "ab"], ["--words", "0"], ["--words", "65"]] {
            let result = try box.vault(["generate", "new"] + bad)
            #expect(result.status == 64, "\(bad): exit \(result.status) \(result.stderr)")
        }
        #expect(try Self.fileBytes(box) == file)
        let forced = try box.vault(["generate", "k", "--force", "--length", "10"])
        #expect(forced.status == 0)
        #expect(try box.vault(["get", "k"]).stdout.count == 10)
    }

    // MARK: find

    @Test func findMatchesSubstringsAndGlobsIgnoringCase() throws {
        let box = try Self.box([("github.com/Alice", "1"), ("gitlab.com/bob", "2"), ("Bank", "3"), ("notes", "4")])
        #expect(try box.vault(["find", "GIT"]).stdoutText == "github.com/Alice\ngitlab.com/bob\n")
        #expect(try box.vault(["find", "alice"]).stdoutText == "github.com/Alice\n")
        #expect(try box.vault(["find", "*.com/*"]).stdoutText == "github.com/Alice\ngitlab.com/bob\n")
        #expect(try box.vault(["find", "b?nk"]).stdoutText == "Bank\n")
        #expect(try box.vault(["find", "[nb]*"]).stdoutText == "Bank\nnotes\n")
        let json = try box.vault(["find", "bob", "--json"])
        #expect(json.stdoutText == #"{"fields":{},"names":["gitlab.com/bob"],"pattern":"bob"}"# + "\n")
        let none = try box.vault(["find", "zz"])
        #expect(none.status == 2 && none.stdout.isEmpty && none.stderr == "vault: no entry matches 'zz'\n")
    }

    // MARK: usage errors

    @Test("with --json, a usage error is the JSON error object (code usage, 64) for every verb")
    func usageErrorsHonourJSON() throws {
        let box = try Self.box([])
        for args in [["get"], ["put"], ["delete"], ["mv", "a"], ["cp"], ["find"], ["generate"], ["get", "k", "--vualt", "x"],
            ["login"], ["list", "--no-such-option"]]
        {
            let result = try box.vault(args + ["--json"], passphrase: false)
            #expect(result.status == 64 && result.stdout.isEmpty, "\(args): exit \(result.status)")
            let object = try? JSONSerialization.jsonObject(with: Data(result.stderr.utf8)) as? [String: [String: Any]]
            #expect(object?["error"]?["code"] as? String == "usage" && object?["error"]?["exit_code"] as? Int == 64,
                "\(args): \(result.stderr)")
            #expect(object?["error"]?["hint"] as? String == "'vault \(args[0]) --help' shows the usage", "\(args): \(result.stderr)")
        }
        let text = try box.vault(["get"], passphrase: false)
        #expect(text.status == 64 && text.stderr.hasPrefix("vault: missing expected argument '<name>'\n"))
    }

    @Test("a mistyped verb names the nearest one; a word far from every verb lists them")
    func mistypedVerbs() throws {
        let box = try Self.box([])
        for (typed, meant) in [("gte", "get"), ("lsit", "list"), ("delte", "delete"), ("generat", "generate"), ("lgoin", "login")] {
            let result = try box.vault([typed, "k"], passphrase: false)
            #expect(result.status == 64 && result.stdout.isEmpty)
            #expect(result.stderr == "vault: unknown verb '\(typed)'\nhint: did you mean 'vault \(meant)'?\n", "\(result.stderr)")
        }
        let far = try box.vault(["frobnicate"], passphrase: false)
        #expect(far.stderr == "vault: unknown verb 'frobnicate'\nhint: 'vault --help' lists the verbs\n")
        let json = try box.vault(["gte", "--json"], passphrase: false)
        #expect(json.stderr == #"{"error":{"code":"usage","exit_code":64,"hint":"did you mean 'vault get'?","message":"unknown verb 'gte'"}}"# + "\n")
        // `--version` alone takes its own short path (no command tree built): the same answer as ArgumentParser's.
        let version = try box.vault(["--version"], passphrase: false)
        #expect(version.status == 0 && version.stdoutText == "0.1.0\n" && version.stderr.isEmpty)
        #expect(try box.vault(["--version", "--version"], passphrase: false).stdoutText == "0.1.0\n")
    }
}

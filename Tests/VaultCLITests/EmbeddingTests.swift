import Foundation
import Testing
import VaultCore

/// The README's "Embedding the store" as an embedder meets it: its first Swift block, extracted as it is, is the
/// `main.swift` of a package outside this one (products only: `.product(name: "VaultCore", package: "vault")`,
/// this repository by local path: ``OutsidePackage``), built with `swift build` and run on the vault `vault init`
/// made, after `vault put` wrote an entry with a field. It reads the field, writes entries `vault get` then reads,
/// and the file stays at format version 3.
///
/// The vault has `--kdf interactive`'s Argon2id (the cheapest the library's standard policy accepts: the program
/// uses the default options, as the README's does). Without `swift` on PATH it is skipped saying so; under CI (`CI=true`) it runs and its absence fails.
@Suite(.timeLimit(.minutes(20))) struct EmbeddingTests {
    @Test(.enabled(if: OutsidePackage.runs, "the embedding test builds a package with `swift`, which is not on PATH"))
    func theReadmeProgramBuiltOutsideThePackageReadsAFieldAndWritesWhatTheCLIReads() throws {
        let sandbox = try Sandbox()
        let home = sandbox.directory
        // The CLI and the program find default.vault in $XDG_DATA_HOME/vault/, as on a user's machine.
        let environment = ["HOME": home, "XDG_DATA_HOME": home + "/data", "XDG_STATE_HOME": home + "/state", "VAULT_AGENT": "off"]
        func vault(_ arguments: [String], stdin: String = "") throws -> CLIResult {
            try CLI.run(arguments + ["--passphrase-file", sandbox.passphraseFile], stdin: Data(stdin.utf8), environment: environment)
        }
        let made = try vault(["init", "--kdf", "interactive"])
        try #require(made.status == 0, "vault init: \(made.stderr)")
        #expect(try vault(["put", "github"], stdin: "hunter2\n").status == 0)
        #expect(try vault(["put", "github", "--field", "username"], stdin: "alice\n").status == 0)
        let path = home + "/data/vault/default.vault"
        #expect(try SecureKeyValueStore(path: path).inspect().formatVersion == 3)

        let program = try OutsidePackage.executable("Embedding")
        let ran = try CLI.exec(program, [], stdin: Data("correct horse battery staple\n".utf8), environment: environment)
        try #require(ran.status == 0, "the README's program: exit \(ran.status)\n\(ran.stderr)")
        let words = ran.stdoutText.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(words.first == "alice", "the field `vault put --field username` wrote: \(ran.stdoutText)")
        #expect(words.last == "3", "the format version the program saw: \(ran.stdoutText)")

        // What the program wrote, read by the CLI; the file still version 3.
        let token = try vault(["get", "app/token"])
        #expect(token.status == 0, "\(token.stderr)")
        #expect(token.stdoutText.trimmingCharacters(in: .newlines) == "tok-alice")
        #expect(try vault(["get", "app/password"]).stdoutText.trimmingCharacters(in: .newlines) == "hunter2")
        #expect(try vault(["get", "github", "--field", "username"]).stdoutText.trimmingCharacters(in: .newlines) == "alice")
        #expect(try SecureKeyValueStore(path: path).inspect().formatVersion == 3)
    }

    /// Examples/DemoApp compiles outside the package against the library products alone (inside it, the CLI's
    /// `package` API would be in reach without the compiler saying so), and runs.
    @Test(.enabled(if: OutsidePackage.runs, "the embedding test builds a package with `swift`, which is not on PATH"))
    func theDemoAppBuildsOnTheLibraryProductsAlone() throws {
        let demo = try OutsidePackage.executable(OutsidePackage.demoApp.target)
        let help = try CLI.exec(demo, ["--help"], environment: ["HOME": NSTemporaryDirectory()])
        #expect(help.status == 0, "\(help.stderr)")
        #expect(help.stdoutText.hasPrefix("OVERVIEW: The tutorials' DemoApp"), "\(help.stdoutText)")
    }
}

import Foundation
import Testing
import VaultTestSupport

/// Issue 34 §2: the README's "Syncing from a program", built outside this package against the `VaultSync` product
/// alone (``OutsidePackage``), syncs a vault `vault init` made with moto's S3 server (signature-checking mode): it
/// creates the object, another machine's `vault sync` adopts it, adds an entry and sends it back, and the program's
/// second sync brings that entry here, where `vault get` reads it.
///
/// The vault has `--kdf interactive`'s Argon2id (the program uses the library's standard policy). Without `swift` on
/// PATH it is skipped saying so, without moto it fails as the S3 tests do; under CI (`CI=true`) both must be there.
@Suite(.timeLimit(.minutes(20))) struct SyncEmbeddingTests {
    /// One machine: a home whose default.vault the CLI and the program both find, and moto's credentials.
    struct Machine {
        let box: Sandbox
        let environment: [String: String]
        var vaultPath: String { box.directory + "/data/vault/default.vault" }

        init(_ moto: MotoS3) throws {
            box = try Sandbox()
            environment = [
                "HOME": box.directory, "XDG_DATA_HOME": box.directory + "/data", "XDG_STATE_HOME": box.directory + "/state",
                "VAULT_AGENT": "off", "AWS_ACCESS_KEY_ID": moto.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.secretAccessKey,
                "AWS_ENDPOINT_URL": moto.endpoint, "AWS_REGION": "us-east-1",
            ]
        }

        func vault(_ arguments: [String], stdin: String = "") throws -> CLIResult {
            try CLI.run(arguments + ["--passphrase-file", box.passphraseFile], stdin: Data(stdin.utf8), environment: environment)
        }

        /// The README's program, its passphrase on stdin: its one line of output.
        func program() throws -> String {
            let ran = try CLI.exec(
                try OutsidePackage.executable("SyncFromAProgram"), [], stdin: Data((Adversarial.passphrase + "\n").utf8), environment: environment)
            try #require(ran.status == 0, "the README's sync program: exit \(ran.status)\n\(ran.stderr)")
            return ran.stdoutText
        }
    }

    @Test(.enabled(if: OutsidePackage.runs, "the test builds a package with `swift`, which is not on PATH"))
    func theReadmeProgramSyncsAVaultOverS3WithTheLibraryAlone() throws {
        let moto = try MotoS3(buckets: ["team-vault"])
        defer { moto.stop() }
        let a = try Machine(moto), b = try Machine(moto)
        try #require(try a.vault(["init", "--kdf", "interactive"]).status == 0)
        #expect(try a.vault(["put", "github"], stdin: "hunter2\n").status == 0)

        // The first sync creates the object: the vault's bytes, as they are.
        #expect(try a.program() == "added [] pushed true created true\n")
        #expect(try moto.object("team-vault", "default.vault") == Data(contentsOf: URL(fileURLWithPath: a.vaultPath)))

        // Another machine adopts it with the CLI, adds an entry and sends it back.
        let adopted = try b.vault(["sync", "s3://team-vault/default.vault", "--allow-insecure-http"])
        #expect(adopted.status == 0, "\(adopted.stderr)")
        #expect(try b.vault(["put", "from-b"], stdin: "sent by b\n").status == 0)
        let sent = try b.vault(["sync", "--allow-insecure-http", "--json"])
        let report = try JSONSerialization.jsonObject(with: sent.stdout) as? [String: Any]
        #expect(sent.status == 0 && report?["pushed"] as? Bool == true, "\(sent.stdoutText) \(sent.stderr)")

        // The program's second sync merges it here and has nothing to send; the CLI reads the entry.
        #expect(try a.program() == "added [\"from-b\"] pushed false created false\n")
        #expect(try a.vault(["get", "from-b"]).stdoutText == "sent by b\n")
        #expect(try a.vault(["get", "github"]).stdoutText == "hunter2\n")
        // Nothing new on either side: nothing merged, nothing sent.
        #expect(try a.program() == "added [] pushed false created false\n")
    }
}

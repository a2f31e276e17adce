import Foundation
import Testing

/// `scripts/warn-path-clash`, which `scripts/install` runs last (issue 22): HashiCorp Vault's CLI is also called
/// `vault`; when another `vault` comes first on PATH, the install says which and how to live with both.
@Suite struct InstallScriptTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/warn-path-clash").path

    /// A directory per name under a fresh sandbox, each holding an executable `vault` script with `body`.
    static func fakeVault(in box: Sandbox, _ name: String, _ body: String) throws -> String {
        let directory = box.directory + "/" + name
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try box.write("#!/bin/sh\n" + body + "\n", to: directory + "/vault", mode: 0o755)
        return directory
    }

    /// Runs the script for `installed` with only `path` (and the tools it uses) on PATH.
    static func warn(installed: String, path: [String]) throws -> CLIResult {
        try CLI.exec("/bin/bash", [script, installed], environment: ["PATH": (path + ["/usr/bin", "/bin"]).joined(separator: ":")])
    }

    static func warning(_ found: String, _ what: String, before installed: String) -> String {
        """
        install: warning: '\(found)'\(what) comes before \(installed) on PATH: a shell runs it for 'vault'
        install:   put \(installed.dropLast("/vault".count)) first on PATH, or alias the other one (alias hvault='\(found)'); see README, 'Living with HashiCorp Vault'

        """
    }

    /// Another `vault` first on PATH: HashiCorp's (its `vault version` says `Vault v…`), another install of this
    /// one (a bare version number for `--version`), or one it cannot tell, which it names without guessing.
    @Test(arguments: [
        (#"[ "$1" = version ] && echo 'Vault v1.15.2 (0123456789abcdef), built 2023-11-06T11:33:28Z'"#, " (HashiCorp Vault)"),
        (#"[ "$1" = --version ] && echo 0.0.9; exit 64"#, " (another install of this vault)"),
        ("echo something else", ""),
    ])
    func namesTheVaultThatComesFirst(body: String, what: String) throws {
        let box = try Sandbox()
        let prefix = try Self.fakeVault(in: box, "prefix/bin", "echo 0.1.0")
        let other = try Self.fakeVault(in: box, "other", body)
        let result = try Self.warn(installed: prefix + "/vault", path: [other, prefix])
        #expect(result.status == 0)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == Self.warning(other + "/vault", what, before: prefix + "/vault"))
    }

    /// Ours first (also through a symbolic link to it), or no `vault` on PATH at all: nothing to say.
    @Test func silentWhenOursComesFirstOrNoneIsFound() throws {
        let box = try Sandbox()
        let prefix = try Self.fakeVault(in: box, "prefix/bin", "echo 0.1.0")
        let hashicorp = try Self.fakeVault(in: box, "hashicorp", #"[ "$1" = version ] && echo 'Vault v1.15.2'"#)
        let first = try Self.warn(installed: prefix + "/vault", path: [prefix, hashicorp])
        #expect(first.status == 0 && first.stderr == "" && first.stdout.isEmpty)
        try FileManager.default.createDirectory(atPath: box.directory + "/links", withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: box.directory + "/links/vault", withDestinationPath: prefix + "/vault")
        let linked = try Self.warn(installed: prefix + "/vault", path: [box.directory + "/links", hashicorp])
        #expect(linked.status == 0 && linked.stderr == "")
        let none = try Self.warn(installed: prefix + "/vault", path: [box.directory + "/empty"])
        #expect(none.status == 0 && none.stderr == "")
    }

    /// Our environment variables keep clear of HashiCorp Vault's (its `api` package's `Env…` constants and the
    /// CLI's own), so that both tools can share a shell: every `VAULT_…` name in Sources is ours alone, except
    /// `VAULT_TOKEN`, which `vault sync bao://…` reads on purpose with HashiCorp's meaning (an OpenBao/Vault token).
    @Test func ourEnvironmentVariablesDoNotCollideWithHashiCorpVaults() throws {
        let hashicorp: Set<String> = [
            "VAULT_ADDR", "VAULT_AGENT_ADDR", "VAULT_CACERT", "VAULT_CACERT_BYTES", "VAULT_CAPATH", "VAULT_CLIENT_CERT",
            "VAULT_CLIENT_KEY", "VAULT_CLIENT_TIMEOUT", "VAULT_HEADERS", "VAULT_SRV_LOOKUP", "VAULT_SKIP_VERIFY",
            "VAULT_NAMESPACE", "VAULT_TLS_SERVER_NAME", "VAULT_WRAP_TTL", "VAULT_MAX_RETRIES", "VAULT_TOKEN", "VAULT_MFA",
            "VAULT_RATE_LIMIT", "VAULT_HTTP_PROXY", "VAULT_PROXY_ADDR", "VAULT_DISABLE_REDIRECTS", "VAULT_FORMAT",
            "VAULT_CONFIG_PATH", "VAULT_LOG_LEVEL", "VAULT_LOG_FORMAT", "VAULT_CLI_NO_COLOR", "VAULT_LICENSE",
            "VAULT_LICENSE_PATH", "VAULT_API_ADDR", "VAULT_CLUSTER_ADDR", "VAULT_REDIRECT_ADDR", "VAULT_DISABLE_MLOCK",
        ]
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources").path
        var ours: Set<String> = []
        let pattern = try NSRegularExpression(pattern: "\\bVAULT_[A-Z0-9_]*[A-Z0-9]\\b")
        for case let file as String in FileManager.default.enumerator(atPath: sources)! where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources + "/" + file, encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                ours.insert(String(text[Range(match.range, in: text)!]))
            }
        }
        #expect(ours.isSuperset(of: ["VAULT_PATH", "VAULT_PASSPHRASE", "VAULT_AGENT", "VAULT_AGENT_SOCK", "VAULT_IDENTITY"]), "\(ours.sorted())")
        #expect(ours.intersection(hashicorp) == ["VAULT_TOKEN"], "\(ours.sorted())")
    }
}

import Foundation
import Testing
import VaultCommands
import VaultTestSupport

/// `vault` links no networking (neither FoundationNetworking nor SwiftNIO) and executes `vault-net`, next to it,
/// for the verbs that need it; it runs the credential helpers itself. `RoutedVerb.all` says which runs where.
@Suite struct NetworkBinaryTests {
    /// The shared libraries the dynamic loader maps for `binary` (`ldd`).
    func sharedLibraries(_ binary: String) throws -> String {
        let result = try CLI.exec("/usr/bin/ldd", [binary])
        #expect(result.status == 0)
        return result.stdoutText
    }

    /// `true` when `binary` holds the C symbol `name` of BoringSSL (linked statically, so `ldd` cannot tell).
    func containsSymbol(_ binary: String, _ name: String) throws -> Bool {
        try Data(contentsOf: URL(fileURLWithPath: binary)).range(of: Data(name.utf8)) != nil
    }

    @Test func vaultLinksNoNetworkingVaultNetLinksNIOSSLAndNoLibcurl() throws {
        let vaultNet = CLI.binDirectory.appendingPathComponent("vault-net").path
        for binary in [CLI.vault, vaultNet] {
            #expect(!(try sharedLibraries(binary)).contains("libcurl"), "\(binary)")
            #expect(!(try sharedLibraries(binary)).contains("libFoundationNetworking"), "\(binary)")
        }
        #expect(!(try containsSymbol(CLI.vault, "CNIOBoringSSL_SSL_CTX_new")))
        #expect(try containsSymbol(vaultNet, "CNIOBoringSSL_SSL_CTX_new"))
        // No SwiftNIO either (its module name is in every mangled symbol of it), now that the credential helpers
        // run in vault (issue 22): they link VaultCredentials, not VaultAuth.
        #expect(!(try containsSymbol(CLI.vault, "7NIOCore")))
        #expect(try containsSymbol(vaultNet, "7NIOCore"))
    }

    /// Issue 20: age's post-quantum keys (VaultAgePQ, on swift-crypto's X-Wing and BoringSSL) are in vault-net only;
    /// `vault` runs vault-net for the command lines that need them (PostQuantumRoute), so its start does not pay
    /// for swift-crypto's relocations.
    @Test func thePostQuantumKeysAreLinkedIntoVaultNetOnly() throws {
        let vaultNet = CLI.binDirectory.appendingPathComponent("vault-net").path
        // VaultAgePQ's module name (in every mangled symbol of it), X-Wing's type, swift-crypto's BoringSSL.
        for name in ["10VaultAgePQ", "XWingMLKEM768X25519", "CCryptoBoringSSL_"] {
            #expect(!(try containsSymbol(CLI.vault, name)), "vault holds \(name)")
            #expect(try containsSymbol(vaultNet, name), "vault-net lacks \(name)")
        }
    }

    /// `vault import`/`export`'s parsers (FoundationXML: libxml2; ZIPFoundation: zlib) are in vault-net only.
    @Test func theImportParsersAreLinkedIntoVaultNetOnly() throws {
        let vaultNet = CLI.binDirectory.appendingPathComponent("vault-net").path
        let vault = try sharedLibraries(CLI.vault), net = try sharedLibraries(vaultNet)
        for library in ["libxml2", "libz.so"] {
            #expect(!vault.contains(library), "vault links \(library)")
        }
        #expect(net.contains("libxml2"))
        #expect(!(try containsSymbol(CLI.vault, "ZIPFoundation")))
        #expect(try containsSymbol(vaultNet, "ZIPFoundation"))
        let help = try CLI.run(["help", "import"])
        #expect(help.status == 0 && help.stdoutText.contains("USAGE: vault import"), "\(help.stdoutText)")
    }

    /// Issue 13: the CLI leaves no stray directory in `$HOME` (URLSession made `~/.cache/org.swift.foundation.URLCache`
    /// and `~/.local/share/<binary directory>`): after init, put, get, list and a real `fetch`, `$HOME` holds only
    /// the rollback records (`~/.local/state/vault`).
    @Test func noStrayDirectoryInHome() throws {
        let box = try Sandbox()
        let home = box.directory + "/home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)
        let environment = ["HOME": home]
        try #require(try box.vault(["init"], extraEnvironment: environment).status == 0)
        #expect(try box.vault(["put", "k"], stdin: Data("v".utf8), extraEnvironment: environment).status == 0)
        #expect(try box.vault(["get", "k"], extraEnvironment: environment).stdoutText == "v")
        #expect(try box.vault(["list"], extraEnvironment: environment).status == 0)
        let server = try PythonServer(.counting)
        defer { server.stop() }
        let fetch = try box.vault(["fetch", server.origin + "/nothing-here", "--allow-insecure-http"], extraEnvironment: environment)
        #expect(fetch.status == 1, "fetch: exit \(fetch.status), \(fetch.stderr)")  // a 404: the request was made
        let made = FileManager.default.enumerator(atPath: home)?.allObjects.compactMap { $0 as? String }.sorted() ?? []
        #expect(made.allSatisfy { $0 == ".local" || $0 == ".local/state" || $0.hasPrefix(".local/state/vault") }, "\(made)")
        #expect(made.contains(".local/state/vault"))
    }

    @Test func networkVerbsRunInVaultNetWithTheSameArgumentsAndExitCode() throws {
        let box = try Sandbox()
        // A usage error of `vault-net login`: its own message and exit code come back through `vault`.
        let login = try box.vault(["login", "ftp://example.com/"])
        #expect(login.status == 64)
        #expect(login.stderr == "vault: unsupported URL 'ftp://example.com/': only absolute http and https URLs are supported\n")
        let help = try CLI.run(["help", "device"])
        #expect(help.status == 0)
        #expect(help.stdoutText.contains("SUBCOMMANDS"), "\(help.stdoutText)")
        #expect(help.stdoutText.contains("register"))
    }

    /// A copy of `vault` alone in a directory of `box` (no `vault-net` next to it); its directory as
    /// `/proc/self/exe` names it.
    func vaultAlone(in box: Sandbox) throws -> String {
        try FileManager.default.createDirectory(atPath: box.directory + "/bin", withIntermediateDirectories: true)
        let directory = String(cString: realpath(box.directory + "/bin", nil))
        try FileManager.default.copyItem(atPath: CLI.vault, toPath: directory + "/vault")
        return directory
    }

    @Test func withoutVaultNetTheNetworkVerbsSayWhatIsMissing() throws {
        let box = try Sandbox()
        let directory = try vaultAlone(in: box)
        let result = try CLI.exec(directory + "/vault", ["fetch", "https://example.com/"], environment: box.environment)
        #expect(result.status == 1)
        #expect(result.stderr == """
            vault: cannot run '\(directory)/vault-net': No such file or directory
            hint: vault-net must be installed next to vault

            """)
        // The vault's own verbs need nothing else.
        let list = try CLI.exec(directory + "/vault", ["list", "--help"], environment: box.environment)
        #expect(list.status == 0)
    }

    /// Issue 22: every verb of the table runs where the table says. With no `vault-net` next to `vault`, the
    /// verbs `vault` runs show their own help; the others say that `vault-net` is missing.
    @Test func everyRoutedVerbRunsWhereTheTableSays() throws {
        let box = try Sandbox()
        let directory = try vaultAlone(in: box)
        #expect(RoutedVerb.all.filter { !$0.isForwarded }.map(\.name) == ["credential", "docker-credential"])
        for verb in RoutedVerb.all {
            let result = try CLI.exec(
                directory + "/vault", [verb.name, "--help"], environment: box.environment.merging(["COLUMNS": "4000"]) { $1 })
            if verb.isForwarded {
                #expect(result.status == 1, "\(verb.name)")
                #expect(result.stderr == "vault: cannot run '\(directory)/vault-net': No such file or directory\nhint: vault-net must be installed next to vault\n")
            } else {
                #expect(result.status == 0, "\(verb.name): \(result.stderr)")
                #expect(result.stdoutText.hasPrefix("OVERVIEW: \(verb.abstract)\n"), "\(result.stdoutText)")
                #expect(result.stdoutText.contains("USAGE: vault \(verb.name) "), "\(result.stdoutText)")
            }
        }
    }

    /// `vault --help` and `vault-net --help` list the same verbs with the same summaries, the table's rows in its
    /// order after the vault's own verbs (`vault`'s stubs are made from the table, `vault-net`'s commands take
    /// their abstracts from it).
    @Test func bothBinariesListTheTableInItsOrder() throws {
        func verbLines(_ executable: String) throws -> [String] {
            let help = try CLI.exec(executable, ["--help"], environment: ["COLUMNS": "4000"])
            #expect(help.status == 0)
            guard let start = help.stdoutText.range(of: "SUBCOMMANDS:\n") else { return [] }
            return help.stdoutText[start.upperBound...].split(separator: "\n").map(String.init)
                .filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") && !$0.hasPrefix("  See '") }
        }
        let vault = try verbLines(CLI.vault)
        #expect(vault == (try verbLines(CLI.binDirectory.appendingPathComponent("vault-net").path)))
        let routed = vault.suffix(RoutedVerb.all.count).map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(routed.map { String($0[0]) } == RoutedVerb.all.map(\.name))
        #expect(routed.map { $0.dropFirst().joined(separator: " ") } == RoutedVerb.all.map(\.abstract))
    }

    /// Issue 22: the git and docker credential helpers run in `vault` (they send no HTTP): with no `vault-net`
    /// next to it, `vault credential` stores and answers, and `docker-credential-vault` → `vault` stores, lists
    /// and answers.
    @Test func theCredentialHelpersRunWithoutVaultNet() throws {
        let box = try Sandbox()
        let directory = try vaultAlone(in: box)
        let vault = directory + "/vault"
        var environment = box.environment
        environment["VAULT_PASSPHRASE"] = try String(contentsOfFile: box.passphraseFile, encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        #expect(try CLI.exec(vault, ["init"], environment: environment).status == 0)
        let store = try CLI.exec(
            vault, ["credential", "store"], stdin: Data("protocol=https\nhost=git.example.com\nusername=bob\npassword=s3cret\n\n".utf8),
            environment: environment)
        #expect(store.status == 0 && store.stderr == "", "\(store.stderr)")
        let get = try CLI.exec(
            vault, ["credential", "get"], stdin: Data("protocol=https\nhost=git.example.com\n\n".utf8), environment: environment)
        #expect(get.status == 0 && get.stderr == "", "\(get.stderr)")
        #expect(get.stdoutText == "username=bob\npassword=s3cret\n")

        try FileManager.default.createSymbolicLink(atPath: directory + "/docker-credential-vault", withDestinationPath: "vault")
        let docker = directory + "/docker-credential-vault"
        let dockerStore = try CLI.exec(
            docker, ["store"], stdin: Data(#"{"ServerURL":"registry.example","Username":"u","Secret":"p<&>"}"#.utf8),
            environment: environment)
        #expect(dockerStore.status == 0 && dockerStore.stdout.isEmpty, "\(dockerStore.stdoutText)\(dockerStore.stderr)")
        #expect(try CLI.exec(docker, ["list"], environment: environment).stdoutText == #"{"registry.example":"u"}"# + "\n")
        let dockerGet = try CLI.exec(docker, ["get"], stdin: Data("registry.example\n".utf8), environment: environment)
        #expect(dockerGet.status == 0)
        #expect(dockerGet.stdoutText == #"{"ServerURL":"registry.example","Username":"u","Secret":"p\u003c\u0026\u003e"}"# + "\n")
        let miss = try CLI.exec(docker, ["get"], stdin: Data("other.example\n".utf8), environment: environment)
        #expect(miss.status == 1 && miss.stdoutText == "credentials not found in native keychain\n")
    }
}

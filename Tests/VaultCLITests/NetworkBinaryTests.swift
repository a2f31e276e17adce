import Foundation
import Testing
import VaultTestSupport

/// `vault` links no networking (neither FoundationNetworking nor SwiftNIO) and executes `vault-net`, next to it,
/// for the verbs that talk HTTP.
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

    @Test func withoutVaultNetTheNetworkVerbsSayWhatIsMissing() throws {
        let box = try Sandbox()
        try FileManager.default.createDirectory(atPath: box.directory + "/bin", withIntermediateDirectories: true)
        let directory = String(cString: realpath(box.directory + "/bin", nil))  // as /proc/self/exe names it
        try FileManager.default.copyItem(atPath: CLI.vault, toPath: directory + "/vault")
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
}

import ArgumentParser
import VaultCommands
import VaultTerminal

/// `vault`: an encrypted credential vault for Linux.
///
/// It runs the vault's verbs and the credential helpers; for the verbs that need a library it does not link
/// (SwiftNIO and BoringSSL, swift-crypto, libxml2, zlib) it executes `vault-net` (next to it, or in
/// PREFIX/lib/vault: ``VaultNetBinary``) in its place, with the same arguments, environment and file descriptors.
/// ``Route`` decides, once, where a command line runs.
@main
struct VaultMain {
    static func main() {
        // No core dumps, no ptrace by the same user, signals deliverable: secrets stay in this process.
        ProcessHardening.apply()
        Route.decide(CommandLine.arguments, root: Vault.self).run(root: Vault.self)
    }
}

struct Vault: ParsableCommand {
    static let configuration = Root.vaultConfiguration
}

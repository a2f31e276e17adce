import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import VaultCommands
import VaultTerminal

/// `vault`: an encrypted credential vault for Linux.
///
/// It runs the vault's verbs and the credential helpers; for the verbs that need a library it does not link
/// (SwiftNIO and BoringSSL, swift-crypto, libxml2, zlib) it executes `vault-net`, installed next to it, in its
/// place, with the same arguments, environment and file descriptors. ``RoutedVerb/all`` says which verb runs where.
@main
struct VaultMain {
    static func main() {
        // No core dumps, no ptrace by the same user, signals deliverable: secrets stay in this process.
        ProcessHardening.apply()
        let arguments = RoutedVerb.dispatchingOnProgramName(CommandLine.arguments)  // docker-credential-vault
        // `--version` alone: ArgumentParser's own answer, without building the command tree by reflection (half the
        // CPU of such a start: Benchmarks/README.md, "Size and start-up").
        if arguments.dropFirst().elementsEqual(["--version"]) {
            try? writeToStdout(Root.version + "\n")
            exit(0)
        }
        // Options before the verb (`vault --vault X list`) move after it; vault-net does the same with its verbs.
        let verbFirst = [arguments[0]] + CommandLineRunner.verbFirst(Array(arguments.dropFirst()), root: Vault.self)
        if RoutedVerb.forwarded(by: verbFirst) != nil { VaultNetBinary.execute(arguments) }
        // get, put and list on a vault the agent holds, without ArgumentParser's reflection (Benchmarks/README.md).
        QuickPath.runIfAgentHoldsVault(Array(verbFirst.dropFirst()))
        // Post-quantum keys (age1pq1…, AGE-SECRET-KEY-PQ-1…) are vault-net's: swift-crypto's X-Wing is not linked here.
        if PostQuantumRoute.needsVaultNet(verbFirst) { VaultNetBinary.execute(arguments) }
        CommandLineRunner.main(Vault.self, arguments: Array(arguments.dropFirst()))
    }
}

struct Vault: ParsableCommand {
    static let configuration = Root.vaultConfiguration
}

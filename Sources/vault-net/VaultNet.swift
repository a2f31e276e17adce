import ArgumentParser
import NetworkCommands
import VaultCommands
import VaultAgePQ
import VaultSSHAgent
import VaultTerminal

/// `vault-net`: the `vault` CLI with the verbs that need SwiftNIO and BoringSSL, swift-crypto, libxml2 or zlib
/// (the NetworkCommands target), and age's post-quantum keys (VaultAgePQ: `vault` runs vault-net for a command line
/// that needs them, ``PostQuantumRoute``). `vault` executes it for those verbs (``RoutedVerb/all``); it also runs every
/// other verb, so it is the whole CLI (the man pages and completion scripts are made from it).
@main
struct VaultNetMain {
    static func main() async {
        ProcessHardening.apply()
        // age's post-quantum keys (swift-crypto's X-Wing), which `vault` does not link: every verb takes them here.
        AgePostQuantum.install()
        // One-time codes (HMAC-SHA-1 from swift-crypto) for `vault clip NAME --otp`, which `vault` runs here.
        OTPCommand.installCodes()
        // An agent run from here serves the ssh-agent socket beside the vault's (docs/SSH-AGENT.md).
        SSHAgentSocket.install()
        // As docker-credential-vault (a symbolic link; scripts/install links vault, earlier installs vault-net).
        let arguments = RoutedVerb.dispatchingOnProgramName(CommandLine.arguments).dropFirst()
        await CommandLineRunner.main(VaultNet.self, arguments: Array(arguments))
    }
}

struct VaultNet: AsyncParsableCommand {
    static let configuration = Root.vaultNetConfiguration(networkCommands: networkCommands)
}

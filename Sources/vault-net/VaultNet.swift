import ArgumentParser
import NetworkCommands
import VaultCommands
import VaultTerminal

/// `vault-net`: the `vault` CLI with the verbs that talk HTTP (`login`, `fetch`, `logout`, `credential`,
/// `device`, in the NetworkCommands target). `vault` executes it for those verbs; it also runs every other
/// verb, so it is the whole CLI.
@main
struct VaultNetMain {
    static func main() async {
        ProcessHardening.apply()
        // As docker-credential-vault (a symbolic link): `vault-net docker-credential ACTION`.
        let arguments = NetworkVerb.dispatchingOnName(CommandLine.arguments).dropFirst()
        await CommandLineRunner.main(VaultNet.self, arguments: Array(arguments))
    }
}

struct VaultNet: AsyncParsableCommand {
    static let configuration = Root.configuration(networkVerbs: networkCommands)
}

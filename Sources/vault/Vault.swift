import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCommands
import VaultCore
import VaultTerminal

/// `vault`: an encrypted credential vault for Linux.
///
/// The verbs that talk HTTP (and those sharing their code) run in `vault-net`, which this binary executes in
/// its place, same arguments, environment and file descriptors: this binary links no FoundationNetworking, so
/// `get`, `put` and `list` do not load libcurl (see ``NetworkVerb``).
@main
struct VaultMain {
    static func main() {
        // No core dumps, no ptrace by the same user, signals deliverable: secrets stay in this process.
        ProcessHardening.apply()
        let arguments = NetworkVerb.dispatchingOnName(CommandLine.arguments)  // docker-credential-vault
        // Options before the verb (`vault --vault X list`) move after it; vault-net does the same with its verbs.
        let verbFirst = [arguments[0]] + CommandLineRunner.verbFirst(Array(arguments.dropFirst()), root: Vault.self)
        if NetworkVerb.requested(by: verbFirst) != nil { NetworkBinary.execute(arguments) }
        // get, put and list on a vault the agent holds, without ArgumentParser's reflection (Benchmarks/README.md).
        QuickPath.runIfAgentHoldsVault(Array(verbFirst.dropFirst()))
        CommandLineRunner.main(Vault.self, arguments: Array(arguments.dropFirst()))
    }
}

struct Vault: ParsableCommand {
    static let configuration = Root.configuration(
        networkVerbs: [
            LoginVerb.self, FetchVerb.self, LogoutVerb.self, CredentialVerb.self, DeviceVerb.self,
            DockerCredentialVerb.self, OTPVerb.self, SyncVerb.self, ImportVerb.self, ExportVerb.self,
        ])
}

/// Runs `vault-net` in place of this process.
enum NetworkBinary {
    /// `vault-net` in the directory of this executable.
    static var path: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("vault-net").path
    }

    static func execute(_ arguments: [String]) -> Never {
        let path = Self.path
        let argv = ([path] + arguments.dropFirst()).map { strdup($0) } + [nil]
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        writeToStderr("vault: cannot run '\(path)': \(reason)\nhint: vault-net must be installed next to vault\n")
        exit(Exit.failure)
    }
}

/// The network verbs as `vault --help` lists them; their arguments and help are `vault-net`'s, which runs them.
protocol NetworkVerbCommand: ParsableCommand {
    static var verb: NetworkVerb { get }
}

extension NetworkVerbCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: verb.rawValue, abstract: verb.abstract)
    }

    func run() throws { NetworkBinary.execute(CommandLine.arguments) }
}

struct LoginVerb: NetworkVerbCommand { static let verb = NetworkVerb.login }
struct FetchVerb: NetworkVerbCommand { static let verb = NetworkVerb.fetch }
struct LogoutVerb: NetworkVerbCommand { static let verb = NetworkVerb.logout }
struct CredentialVerb: NetworkVerbCommand { static let verb = NetworkVerb.credential }
struct DeviceVerb: NetworkVerbCommand { static let verb = NetworkVerb.device }
struct DockerCredentialVerb: NetworkVerbCommand { static let verb = NetworkVerb.dockerCredential }
struct OTPVerb: NetworkVerbCommand { static let verb = NetworkVerb.otp }
struct SyncVerb: NetworkVerbCommand { static let verb = NetworkVerb.sync }
struct ImportVerb: NetworkVerbCommand { static let verb = NetworkVerb.import }
struct ExportVerb: NetworkVerbCommand { static let verb = NetworkVerb.export }

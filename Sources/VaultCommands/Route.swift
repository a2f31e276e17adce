import ArgumentParser
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The agent's own process runs from vault-net when it is installed: the ssh-agent socket it serves beside the
/// vault's links swift-crypto (VaultSSHAgent), which `vault` does not. `vault agent run` (and `vault agent` alone, whose
/// default is run), also as a service manager starts it, executes vault-net; `status` and `stop` stay here.
package enum AgentProcess {
    static var vaultNetInstalled: Bool { access(VaultNetBinary.path, X_OK) == 0 }

    /// Whether `verbFirst` (a full argv, verb first) runs an agent and vault-net is there to run it.
    package static func runsInVaultNet(_ verbFirst: [String], installed: () -> Bool = { vaultNetInstalled }) -> Bool {
        guard verbFirst.count > 1, verbFirst[1] == "agent" else { return false }
        if verbFirst.count > 2, ["status", "stop", "help"].contains(verbFirst[2]) { return false }
        return installed()
    }
}

/// Where `vault`'s command line runs, decided from argv before ArgumentParser builds its command tree (which costs
/// half of a short command's start: Benchmarks/README.md, "Size and start-up"). `vault`'s `main` asks
/// ``decide(_:root:)`` once and ``run(root:)``s the answer; every rule that reads argv before the parser is here, in
/// the order they apply.
package enum Route: Equatable {
    /// `vault --version` alone: ArgumentParser's own answer, printed without the tree.
    case printVersion
    /// A verb `vault-net` runs (``RoutedVerb/all``: the network verbs, import and export), or a command line that
    /// needs age's post-quantum keys (``PostQuantumRoute``): `vault-net` is executed with this argv.
    case vaultNet(arguments: [String])
    /// A plain `get`, `put` or `list` (``QuickPath``): served without the parser when the agent holds the vault,
    /// else routed as the rules after the quick path say (``beyondQuickPath(_:verbFirst:)``: only then are the
    /// files a post-quantum check reads looked at).
    case quickPath(QuickPath.Invocation, arguments: [String], verbFirst: [String])
    /// ArgumentParser, in this process, with these arguments (without the program's name, the verb first).
    case here(arguments: [String])

    /// The route of `argv` (a full argv, the program's name first).
    ///
    /// In order: the program's name (`docker-credential-vault` is the docker verb); `--version` alone; options
    /// before the verb moved after it (`vault --vault X list`); the quick path's plain forms; a verb vault-net runs;
    /// post-quantum keys (which reads the files an option names, so it comes last). The quick path's verbs (`get`,
    /// `put`, `list`) are `vault`'s own, neither routed nor `agent`, so asking it first changes no route and spares
    /// the daily verbs the routed-verb table (Benchmarks/README.md, "The last figure").
    package static func decide(_ argv: [String], root: ParsableCommand.Type) -> Route {
        let arguments = RoutedVerb.dispatchingOnProgramName(argv)
        if arguments.dropFirst().elementsEqual(["--version"]) { return .printVersion }
        let verbFirst = [arguments[0]] + CommandLineRunner.verbFirst(Array(arguments.dropFirst()), root: root)
        if let invocation = QuickPath.parse(Array(verbFirst.dropFirst())) {
            return .quickPath(invocation, arguments: arguments, verbFirst: verbFirst)
        }
        if RoutedVerb.forwarded(by: verbFirst) != nil { return .vaultNet(arguments: arguments) }
        if AgentProcess.runsInVaultNet(verbFirst) { return .vaultNet(arguments: arguments) }
        return beyondQuickPath(arguments, verbFirst: verbFirst)
    }

    /// The rules after the quick path: vault-net for post-quantum keys, else ArgumentParser here.
    static func beyondQuickPath(_ arguments: [String], verbFirst: [String]) -> Route {
        PostQuantumRoute.needsVaultNet(verbFirst) ? .vaultNet(arguments: arguments) : .here(arguments: Array(verbFirst.dropFirst()))
    }

    /// Runs the route and exits.
    package func run(root: ParsableCommand.Type) -> Never {
        switch self {
        case .printVersion:
            try? writeToStdout(Root.version + "\n")
            exit(0)
        case .vaultNet(let arguments):
            VaultNetBinary.execute(arguments)
        case .quickPath(let invocation, let arguments, let verbFirst):
            QuickPath.runIfAgentHoldsVault(invocation)
            Self.beyondQuickPath(arguments, verbFirst: verbFirst).run(root: root)
        case .here(let arguments):
            QuickPath.declined()
            CommandLineRunner.main(root, arguments: arguments)
        }
    }
}

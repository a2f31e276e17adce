import ArgumentParser
import Testing
import VaultCommands

/// ``Route``: the one decision `vault`'s `main` makes from argv before ArgumentParser.
@Suite struct RouteTests {
    struct Root_: ParsableCommand {
        static let configuration = Root.vaultConfiguration
    }

    func route(_ argv: [String]) -> Route { Route.decide(argv, root: Root_.self) }

    @Test func versionAloneIsPrintedAndAVerbsVersionOptionIsTheVerbs() {
        #expect(route(["vault", "--version"]) == .printVersion)
        #expect(route(["/usr/bin/vault", "--version"]) == .printVersion)
        #expect(route(["vault", "show", "k", "--version", "1"]) == .here(arguments: ["show", "k", "--version", "1"]))
        #expect(route(["vault", "history", "k", "--version", "1"]) == .here(arguments: ["history", "k", "--version", "1"]))
        #expect(route(["vault", "--version", "--help"]) == .here(arguments: ["--version", "--help"]))
    }

    @Test func networkVerbsAndTheirHelpGoToVaultNetWithTheWholeArgv() {
        #expect(route(["vault", "sync", "s3://b/k"]) == .vaultNet(arguments: ["vault", "sync", "s3://b/k"]))
        #expect(route(["vault", "--vault", "x.vault", "login", "https://h/"])
            == .vaultNet(arguments: ["vault", "--vault", "x.vault", "login", "https://h/"]))
        #expect(route(["vault", "help", "export"]) == .vaultNet(arguments: ["vault", "help", "export"]))
    }

    /// The agent's own process runs from vault-net when it is installed (the ssh-agent socket links swift-crypto);
    /// its status and stop, and any agent without vault-net, stay in `vault`.
    @Test func runningAnAgentGoesToVaultNetWhenItIsInstalled() {
        let installed = { true }, absent = { false }
        #expect(AgentProcess.runsInVaultNet(["vault", "agent"], installed: installed))
        #expect(AgentProcess.runsInVaultNet(["vault", "agent", "run", "--exit-when-empty", "60s"], installed: installed))
        #expect(AgentProcess.runsInVaultNet(["vault", "agent", "--exit-when-empty", "60s"], installed: installed))
        #expect(!AgentProcess.runsInVaultNet(["vault", "agent", "run"], installed: absent))
        for verb in ["status", "stop", "help"] {
            #expect(!AgentProcess.runsInVaultNet(["vault", "agent", verb], installed: installed))
        }
        #expect(!AgentProcess.runsInVaultNet(["vault", "unlock"], installed: installed))
        #expect(!AgentProcess.runsInVaultNet(["vault"], installed: installed))
        #expect(route(["vault", "ssh", "list"]) == .vaultNet(arguments: ["vault", "ssh", "list"]))
    }

    @Test func plainFormsTakeTheQuickPathWithOptionsMovedAfterTheVerb() {
        let expected = QuickPath.Invocation(verb: .list, vaultPath: "x.vault", json: false)
        #expect(route(["vault", "--vault", "x.vault", "list"])
            == .quickPath(expected, arguments: ["vault", "--vault", "x.vault", "list"], verbFirst: ["vault", "list", "--vault", "x.vault"]))
        #expect(route(["vault", "get", "k", "--field", "u"]) == .here(arguments: ["get", "k", "--field", "u"]))
    }

    @Test func theDockerHelpersProgramNameIsItsVerb() {
        #expect(route(["/usr/bin/docker-credential-vault", "get"]) == .here(arguments: ["docker-credential", "get"]))
        #expect(RoutedVerb.dispatchingOnProgramName(["docker-credential-vault", "list"]) == ["docker-credential-vault", "docker-credential", "list"])
        #expect(RoutedVerb.dispatchingOnProgramName(["/opt/docker-credential-vault", "erase"]) == ["/opt/docker-credential-vault", "docker-credential", "erase"])
        for program in ["vault", "/usr/bin/vault", "./vault", "/opt/docker-credential-vault/vault", "docker-credential-vault-x"] {
            #expect(RoutedVerb.dispatchingOnProgramName([program, "get", "k"]) == [program, "get", "k"], "\(program)")
        }
    }

    /// The quick path is asked before the routed verbs: its verbs are none of theirs, so no route changes.
    @Test func noRoutedVerbIsAQuickPathVerb() {
        for verb in ["get", "put", "list"] {
            #expect(RoutedVerb.forwarded(by: ["vault", verb]) == nil)
            #expect(RoutedVerb.forwarded(by: ["vault", "help", verb]) == nil)
            #expect(!AgentProcess.runsInVaultNet(["vault", verb], installed: { true }))
        }
    }
}

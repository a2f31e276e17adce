import ArgumentParser
import CVaultSystem
import FoundationEssentials
import Glibc
import VaultCore

/// A verb that is not one of ``Root/vaultVerbs``: its name, what runs it, its one-line help, and the program name
/// it also answers to.
///
/// ``all`` is the one table of them. Everything about these verbs is made from it: `vault`'s dispatch (what it
/// executes `vault-net` for, ``forwarded(by:)``; `docker-credential-vault`, ``dispatchingOnProgramName(_:)``), the
/// forwarding stubs that `vault --help` lists (``commands(vaultNet:)``), both binaries' `--help`, and each
/// command's own abstract (``named(_:)``). A new helper is one row here and its command.
package struct RoutedVerb: Sendable {
    /// What runs a verb.
    package enum Runner: Sendable {
        /// `vault` (and `vault-net`, which runs every verb): the command.
        case vault(any ParsableCommand.Type)
        /// `vault-net` only, for a library `vault` does not link; `vault` executes `vault-net` in its place.
        case vaultNet
    }

    package let name: String
    package let runner: Runner
    /// The one-line summary of `vault --help` and of the verb's own help.
    package let abstract: String
    /// A name under which `vault` (or `vault-net`) runs this verb when started as it (a symbolic link):
    /// `docker-credential-vault ACTION` is `vault docker-credential ACTION`.
    package let programName: String?

    init(_ name: String, _ runner: Runner, _ abstract: String, programName: String? = nil) {
        self.name = name
        self.runner = runner
        self.abstract = abstract
        self.programName = programName
    }

    /// Every verb that is not one of the vault's own, in the order `--help` lists them.
    package static let all: [RoutedVerb] = [
        RoutedVerb(
            "login", .vaultNet,  // HTTP: SwiftNIO and BoringSSL
            "Log in to URL with HTTP Basic authentication and store the credential once the server accepts it."),
        RoutedVerb(
            "fetch", .vaultNet,
            "GET URL, answering HTTP Basic challenges with the stored credential; the body goes to stdout exactly."),
        RoutedVerb(
            "logout", .vaultNet,
            "Forget the stored credentials of URL's origin (every realm, and the git credential helper's)."),
        // The credential helpers send no HTTP: they read and write the vault's credentials (VaultCredentials).
        RoutedVerb(
            "credential", .vault(CredentialHelper.self),
            "A git credential helper: git config credential.helper '!vault credential --passphrase-file PATH'."),
        RoutedVerb(
            "device", .vaultNet,
            "Register this device with a mobile-services server, check or remove the registration."),
        RoutedVerb(
            "docker-credential", .vault(DockerCredentialHelper.self),
            "A docker credential helper (store, get, erase, list): link vault as docker-credential-vault.",
            programName: "docker-credential-vault"),
        RoutedVerb(
            "otp", .vaultNet,  // HMAC-SHA-1 is swift-crypto's (BoringSSL)
            "Print the time-based one-time password (TOTP) of NAME's otp field."),
        RoutedVerb(
            "sync", .vaultNet,  // HTTP
            "Merge this vault with its copy in a git repository, an S3-compatible object store (s3://BUCKET/KEY) or OpenBao (bao://…), both ways."),
        RoutedVerb(
            "remote", .vaultNet,  // checks the location as sync does (VaultSync)
            "Show or set the remote 'vault sync' uses when it names none."),
        // Their parsers link FoundationXML (libxml2) and ZIPFoundation (zlib).
        RoutedVerb(
            "import", .vaultNet,
            "Import the entries of pass, KeePassXC, Bitwarden, 1Password, a browser's CSV or vault's own export, in one atomic write."),
        RoutedVerb(
            "export", .vaultNet,
            "Write every entry, secrets in plain text, as vault's JSON, CSV or KeePass XML (a file of mode 0600, or stdout)."),
        // ECDSA, RSA, AES-CTR and bcrypt's SHA-512 are swift-crypto's (VaultSSH).
        RoutedVerb(
            "ssh", .vaultNet,
            "ssh keys in the vault (import, generate, public, list) and the agent's ssh-agent socket (socket, env)."),
        // sd-bus (libsystemd), GMP and swift-crypto: the Secret Service's bus and its Diffie-Hellman session.
        RoutedVerb(
            "secret-service", .vaultNet,
            "Serve the freedesktop Secret Service (org.freedesktop.secrets: secret-tool, libsecret, Python keyring) from the agent's vaults."),
    ]

    /// The row of `name`, for a command's own configuration; a name not in the table is a programming error.
    package static func named(_ name: String) -> RoutedVerb {
        guard let verb = all.first(where: { $0.name == name }) else { preconditionFailure("no routed verb '\(name)'") }
        return verb
    }

    /// Whether `vault` executes `vault-net` for this verb.
    package var isForwarded: Bool {
        if case .vaultNet = runner { return true }
        return false
    }

    /// The arguments to run for `arguments` (a full argv): started under a verb's ``programName``,
    /// `<argv0> VERB` and the rest; under any other name, `arguments` as they are.
    /// `vault` under its own name consults no table: no verb's program name is `vault`, and the table's first use
    /// instantiates its metadata, 2 % of a `vault get` (Benchmarks/README.md, "The last figure").
    package static func dispatchingOnProgramName(_ arguments: [String]) -> [String] {
        guard let first = arguments.first else { return arguments }
        let program = first.lastIndex(of: "/").map { String(first[first.index(after: $0)...]) } ?? first
        guard program != "vault", let verb = all.first(where: { $0.programName != nil && $0.programName == program })
        else { return arguments }
        return [first, verb.name] + arguments.dropFirst()
    }

    /// The verb `vault` executes `vault-net` for that `arguments` (a full argv, verb first) ask for, also as
    /// `vault help VERB`; nil for the others.
    package static func forwarded(by arguments: [String]) -> RoutedVerb? {
        guard arguments.count > 1 else { return nil }
        let name = arguments[1] == "help" && arguments.count > 2 ? arguments[2] : arguments[1]
        return all.first { $0.name == name && $0.isForwarded }
    }

    /// The root command's entries for the table, in its order: each `vault` runs is its command; each `vault-net`
    /// runs is the command of `vaultNet` (`vault-net`'s, which must hold one per such row and no other) or, for
    /// `vault` (`nil`), a forwarding stub.
    static func commands(vaultNet: [any ParsableCommand.Type]?) -> [any ParsableCommand.Type] {
        if let vaultNet {
            let names = vaultNet.map { $0.configuration.commandName }
            precondition(
                names == all.filter(\.isForwarded).map(\.name) as [String?],
                "vault-net's commands \(names) are not the table's forwarded verbs, in its order")
        }
        var forwarded = (vaultNet ?? forwardingStubs).makeIterator()
        return all.map { verb in
            switch verb.runner {
            case let .vault(command): return command
            case .vaultNet: return forwarded.next()!
            }
        }
    }

    /// One stub per forwarded verb, in the table's order: `ForwardingStub<P>` for the first, `Next<P>`, … .
    /// ArgumentParser tells verbs apart by their type, so each row needs a type of its own; these are made at run
    /// time from the table (a generic type instantiated once per row), so no stub is written by hand.
    static var forwardingStubs: [any ParsableCommand.Type] {
        var position: any StubPosition.Type = FirstPosition.self
        var stubs: [any ParsableCommand.Type] = []
        for _ in all.filter(\.isForwarded) {
            stubs.append(stub(at: position))
            position = next(after: position)
        }
        return stubs
    }

    private static func stub<P: StubPosition>(at _: P.Type) -> any ParsableCommand.Type { ForwardingStub<P>.self }
    private static func next<P: StubPosition>(after _: P.Type) -> any StubPosition.Type { NextPosition<P>.self }
}

/// A position among the forwarded verbs, as a type: `FirstPosition` is 0, `NextPosition<P>` one more than `P`.
protocol StubPosition { static var index: Int { get } }
enum FirstPosition: StubPosition { static var index: Int { 0 } }
enum NextPosition<Previous: StubPosition>: StubPosition { static var index: Int { Previous.index + 1 } }

/// What `vault --help` lists for a verb that `vault-net` runs: its name and abstract. `vault` executes `vault-net`
/// before parsing for these verbs (``RoutedVerb/forwarded(by:)``), so `run()` is reached only by a command line
/// that names the verb in a place the early check does not look; it forwards too. Arguments, options and their
/// help are `vault-net`'s.
struct ForwardingStub<Position: StubPosition>: ParsableCommand {
    static var configuration: CommandConfiguration {
        let verb = RoutedVerb.all.filter(\.isForwarded)[Position.index]
        return CommandConfiguration(commandName: verb.name, abstract: verb.abstract)
    }

    func run() throws { VaultNetBinary.execute(CommandLine.arguments) }
}

/// Runs `vault-net`, which must sit next to `vault`, in place of this process.
package enum VaultNetBinary {
    /// `vault-net` in the directory the build named (`VAULT_LIBEXECDIR`: scripts/install builds with `lib/vault`,
    /// relative to the prefix vault is installed in, so a package keeps it in `/usr/lib/vault` as git keeps its helpers
    /// in `git-core`) when it is there, else in the directory of this executable.
    static var path: String {
        path(libexecDirectory: String(cString: vault_libexec_directory()), executable: AgentCommand.ownExecutable)
    }

    /// ``path`` for a build setting and an executable's path: a relative `libexecDirectory` is taken from the prefix
    /// (`PREFIX/bin/vault` → `PREFIX/lib/vault/vault-net`), an absolute one as it is.
    package static func path(libexecDirectory: String, executable: String) -> String {
        let directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        if !libexecDirectory.isEmpty {
            let packaged = libexecDirectory.hasPrefix("/")
                ? libexecDirectory + "/vault-net"
                : directory.deletingLastPathComponent().appendingPathComponent(libexecDirectory).appendingPathComponent("vault-net").path
            if access(packaged, X_OK) == 0 { return packaged }
        }
        return directory.appendingPathComponent("vault-net").path
    }

    /// Executes `vault-net` with `arguments` (a full argv: the first is replaced by its path), the same
    /// environment and file descriptors; reports and exits when it cannot.
    package static func execute(_ arguments: [String]) -> Never {
        let path = Self.path
        let argv = ([path] + arguments.dropFirst()).map { strdup($0) } + [nil]
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        writeToStderr("vault: cannot run '\(path)': \(reason)\nhint: vault-net must be installed next to vault\(String(cString: vault_libexec_directory()).isEmpty ? "" : " or in PREFIX/" + String(cString: vault_libexec_directory()))\n")
        exit(Exit.failure)
    }
}

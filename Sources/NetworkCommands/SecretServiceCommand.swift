import ArgumentParser
import Foundation
import SecretService
import Synchronization
import VaultAgent
import VaultCommands
import VaultCore

/// `vault secret-service [--vault PATH]… [--replace]`: the freedesktop Secret Service (`org.freedesktop.secrets`) on the
/// session bus, served from the vaults the agent holds (docs/SECRET-SERVICE.md). It runs in `vault-net`: sd-bus, GMP and
/// swift-crypto are linked there only (``RoutedVerb``).
package struct SecretServiceCommand: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "secret-service",
        abstract: RoutedVerb.named("secret-service").abstract,
        discussion: """
            Runs in the foreground until stopped (SIGTERM, SIGINT) or until another provider takes the name with --replace. Each --vault is a collection (the first is the 'default' alias; none given: the vault of $VAULT_PATH or the default one); an item is the entry secret-service/ID of its vault (the secret its password field; label, content type and attributes non-secret fields), so 'vault get secret-service/ID' prints it. It holds no key: a vault the agent does not hold is locked, and an Unlock prompt completes when 'vault unlock' opens it from any terminal, or when the passphrase typed into --pinentry, --askpass or $SSH_ASKPASS (three tries) opens it. The D-Bus activation file and systemd user unit in packaging/ start it on the first client's call.
            """)

    @Flag(help: "Take org.freedesktop.secrets over from the provider that owns it (gnome-keyring, another vault) when it allows it.")
    var replace = false

    @Option(help: ArgumentHelp("Ask an unlock prompt's passphrase with this askpass program (default: $SSH_ASKPASS, as ssh uses it: with a display or SSH_ASKPASS_REQUIRE=force).", valueName: "program"))
    var askpass: String?

    @Option(help: ArgumentHelp("Ask an unlock prompt's passphrase with this pinentry program (the Assuan protocol: a graphical one, or a terminal one when run in a terminal or with $GPG_TTY).", valueName: "program"))
    var pinentry: String?

    @Option(name: .customLong("vault"), help: ArgumentHelp("A vault to serve as a collection (repeatable; the first is 'default').", valueName: "path"))
    var vaults: [String] = []

    /// `--pinentry`, else `--askpass`, else `$SSH_ASKPASS` when ssh would use it (a display, or
    /// `SSH_ASKPASS_REQUIRE=force`; never with `SSH_ASKPASS_REQUIRE=never`); `nil`: prompts wait for `vault unlock`.
    var passphraseProgram: PassphraseProgram? {
        if let pinentry, !pinentry.isEmpty { return .pinentry(pinentry) }
        if let askpass, !askpass.isEmpty { return .askpass(askpass) }
        let require = Posix.environment("SSH_ASKPASS_REQUIRE")
        guard let program = Posix.environment("SSH_ASKPASS"), !program.isEmpty, require != "never",
              require == "force" || Posix.environment("DISPLAY") != nil || Posix.environment("WAYLAND_DISPLAY") != nil
        else { return nil }
        return .askpass(program)
    }

    package func run() throws {
        let paths = (vaults.isEmpty ? [nil] : vaults.map(Optional.some)).map { path -> String in
            var options = VaultOptions()
            options.vaultPath = path
            return options.resolvedPath
        }
        let stop = StopFlag()
        let sources = [SIGTERM, SIGINT, SIGHUP].map { signal in
            _ = Glibc.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler { stop.value.store(true, ordering: .relaxed) }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
        do {
            let provider = try SecretServiceProvider(
                vaultPaths: paths, socketPath: AgentSocket.defaultPath, replace: replace, passphraseProgram: passphraseProgram,
                unlockVault: { try AgentAccess.unlock(path: $0, passphrase: $1) },
                log: { writeToStderr("vault secret-service: \($0)\n") })
            try provider.run { stop.value.load(ordering: .relaxed) }
        } catch {
            throw ExitCode(report(error, json: false))
        }
    }
}

private final class StopFlag: Sendable {
    let value = Atomic<Bool>(false)
}

extension SecretServiceError: CLIReportable {
    package var exitCode: Int32 { Exit.failure }
    package var code: String {
        switch self {
        case .cannotStart: return "secret_service_cannot_start"
        case .connectionLost: return "secret_service_connection_lost"
        default: return "secret_service_failed"
        }
    }
    package var message: String { description }
    package var hint: String? {
        if case .cannotStart = self { return "a session bus is needed: DBUS_SESSION_BUS_ADDRESS, or $XDG_RUNTIME_DIR/bus" }
        return nil
    }
    package var details: [String: Any] { [:] }
}

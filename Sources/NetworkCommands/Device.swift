import ArgumentParser
import Foundation
import MobileServices
import VaultAuth
import VaultCommands
import VaultCore
import VaultTerminal

// `vault device register|status|unregister`: device registration with the mobile-services API
// (MobileServices; see docs/MOBILE-SERVICES.md).

package struct Device: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: RoutedVerb.named("device").abstract,
        discussion: """
            The server URL and application id given to 'register' are remembered in the vault (mobileservices.server, mobileservices.appid); username, password and the application connection id are stored under username, password and appcid, in one atomic write, only once the server answered 201.

            EXIT CODES (besides those of 'vault --help')
              0   registered (status), done (register, unregister)
              1   server unreachable, unexpected HTTP status or unreadable answer; already registered
              2   not registered: no appcid stored, or the server no longer knows the registration
                  (status: 404, after which appcid, username and password were deleted)
              3   credentials rejected, or none stored and no terminal to ask on
            """,
        subcommands: [DeviceRegister.self, DeviceStatus.self, DeviceUnregister.self]
    )
}

/// Opens the vault and makes a client for the remembered configuration (or `configuration`); the caller closes
/// the store.
private func makeDeviceClient(
    _ options: VaultOptions, _ http: HTTPOptions, configuration: MobileServicesConfiguration? = nil,
    prompt: CLICredentialPrompt?
) throws -> (any KeyValueVault, MobileServicesClient) {
    let store = try openVault(options)
    do {
        guard let configuration = try configuration ?? MobileServicesConfiguration.remembered(in: store) else {
            throw MobileServicesError.notConfigured
        }
        var authenticatorOptions = http.authenticatorOptions
        // A script's credential: log in with exactly what was given.
        if prompt?.hasScriptedCredential == true { authenticatorOptions.useStoredCredentials = false }
        let client = MobileServicesClient(
            configuration: configuration, store: store, prompt: prompt, options: authenticatorOptions,
            timeout: http.timeout, tls: try http.tlsOptions())
        return (store, client)
    } catch {
        store.close()
        throw error
    }
}

/// `operation` against the server of `client`, its authentication failure presented with that server (`login`: for
/// a login, where a rejection means the credentials typed or given).
private func authenticating<R>(_ client: MobileServicesClient, login: Bool, _ operation: () async throws -> R) async throws -> R {
    do {
        return try await operation()
    } catch let error as AuthenticationError {
        throw NetworkCLIError.authentication(error, url: client.configuration.server, login: login)
    }
}

/// The terminal prompt when there is a terminal; else none, so that a rejected stored password is reported as
/// such (and kept) instead of as a prompt that cannot open.
private func terminalPrompt() -> CLICredentialPrompt? {
    Terminal.controlling() != nil ? CLICredentialPrompt.terminal() : nil
}

struct DeviceRegister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Log in and register this device; store username, password and appcid in the vault.",
        discussion: """
            Credentials: --username with --password-fd N or --password-file PATH (first line), else the credential stored for the server, else a prompt on the terminal (without a terminal: exit 3). The server and application id are remembered: later 'status' and 'unregister' need no flags.
            """)

    @OptionGroup var http: HTTPOptions

    @OptionGroup var target: ServerOptions

    @OptionGroup var credential: CredentialOptions

    @OptionGroup var options: VaultOptions

    func validate() throws {
        try credential.validate(against: options)
    }

    func run() async throws {
        try await reportingErrors(json: options.json) {
            let configuration = try target.configuration()
            // The password is read before the vault's passphrase prompt, so a pipe is drained first.
            let prompt = try credential.prompt(terminal: true)
            let (store, client) = try makeDeviceClient(options, http, configuration: configuration, prompt: prompt)
            defer { store.close() }
            // The user's own entries under the registration's keys first: "already registered" would be untrue.
            try client.checkNothingUnownedWouldBeOverwritten()
            if try client.storedApplicationConnectionId() != nil {
                let remembered = try MobileServicesConfiguration.remembered(in: store)
                throw MobileServicesError.alreadyRegistered(
                    server: remembered?.server ?? client.configuration.server,
                    applicationId: remembered?.applicationId ?? client.configuration.applicationId)
            }
            _ = try await authenticating(client, login: true) { try await client.register() }
            let user = try client.credentials.primaryUsername()
            if options.json {
                var object: [String: Any] = [
                    "registered": true, "server": client.configuration.server,
                    "application_id": client.configuration.applicationId,
                ]
                if let user { object["username"] = user }
                try writeJSON(object)
            } else {
                try writeToStdout("registered with \(client.configuration.server) (application \(client.configuration.applicationId))"
                    + (user.map { " as \($0)" } ?? "") + "\n")
            }
        }
    }
}

struct DeviceStatus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Check the registration with the server (exit 0 registered, 2 not registered).",
        discussion: """
            Sends one request to the service root with the stored credentials and appcid. If the server answers 404 (the registration was removed), appcid, username and password are deleted from the vault and the exit status is 2. A network failure deletes nothing (exit 1).
            """)

    @OptionGroup var http: HTTPOptions

    @OptionGroup var options: VaultOptions

    func run() async throws {
        try await reportingErrors(json: options.json) {
            let (store, client) = try makeDeviceClient(options, http, prompt: terminalPrompt())
            defer { store.close() }
            let configuration = client.configuration
            let status = try await authenticating(client, login: false) { try await client.verifyRegistration() }
            switch status {
            case .registered:
                if options.json {
                    try writeJSON([
                        "registered": true, "server": configuration.server,
                        "application_id": configuration.applicationId,
                    ])
                } else {
                    try writeToStdout("registered with \(configuration.server) (application \(configuration.applicationId))\n")
                }
            case .notRegistered:
                throw MobileServicesError.notRegistered
            case .registrationRemoved:
                throw MobileServicesError.registrationRemoved(
                    server: configuration.server, applicationId: configuration.applicationId)
            }
        }
    }
}

struct DeviceUnregister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unregister",
        abstract: "Delete the registration on the server, then the appcid in the vault.",
        discussion: "Username, password and the remembered server stay; 'vault device register' registers again.")

    @OptionGroup var http: HTTPOptions

    @OptionGroup var options: VaultOptions

    func run() async throws {
        try await reportingErrors(json: options.json) {
            let (store, client) = try makeDeviceClient(options, http, prompt: terminalPrompt())
            defer { store.close() }
            let deletedOnServer = try await authenticating(client, login: false) { try await client.unregister() }
            if options.json {
                try writeJSON(["unregistered": true, "deleted_on_server": deletedOnServer])
            } else {
                try writeToStdout(deletedOnServer
                    ? "unregistered from \(client.configuration.server)\n"
                    : "the server no longer knew this registration; removed the appcid\n")
            }
        }
    }
}

import ArgumentParser
import Foundation
import MobileServices
import VaultAuth
import VaultCommands
import VaultCore
import VaultTerminal

// `vault device register|status|unregister`: device registration with the mobile-services API
// (MobileServices; see docs/MOBILE-SERVICES.md).

struct Device: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: NetworkVerb.device.abstract,
        discussion: """
            The server URL and application id given to 'register' are remembered in the vault
            (mobileservices.server, mobileservices.appid); username, password and the application
            connection id are stored under username, password and appcid, in one atomic write,
            only once the server answered 201.

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

/// Options of every `device` verb.
struct DeviceOptions: ParsableArguments {
    @Flag(
        name: .customLong("allow-insecure-http"),
        help: "Allow credentials over plain http to a loopback address (127.0.0.0/8, ::1, localhost) only.")
    var allowInsecureHTTP = false

    @Option(help: ArgumentHelp("Seconds a request may stay idle before it fails.", valueName: "seconds"))
    var timeout: Double = 30

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else {
            throw ValidationError("--timeout must be more than 0 and at most 3600 seconds")
        }
    }

    var authenticatorOptions: KeystoreAuthenticator.Options {
        KeystoreAuthenticator.Options(allowInsecureLoopbackHTTP: allowInsecureHTTP)
    }
}

/// Opens the vault and makes a client for the remembered configuration (or `configuration`).
private func makeDeviceClient(
    _ options: VaultOptions, _ device: DeviceOptions, configuration: MobileServicesConfiguration? = nil,
    prompt: (any CredentialPrompting)?, authenticator: KeystoreAuthenticator.Options? = nil
) throws -> MobileServicesClient {
    let store = try openStore(options)
    guard let configuration = try configuration ?? MobileServicesConfiguration.remembered(in: store) else {
        throw MobileServicesError.notConfigured
    }
    return MobileServicesClient(
        configuration: configuration, store: store, prompt: prompt,
        options: authenticator ?? device.authenticatorOptions, timeout: device.timeout)
}

struct DeviceRegister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Log in and register this device; store username, password and appcid in the vault.",
        discussion: """
            Credentials: --username with --password-fd N or --password-file PATH (first line), else the
            credential stored for the server, else a prompt on the terminal (without a terminal: exit 3).
            The server and application id are remembered: later 'status' and 'unregister' need no flags.
            """)

    @OptionGroup var options: VaultOptions
    @OptionGroup var device: DeviceOptions

    @Option(help: ArgumentHelp("The mobile-services base URL, e.g. https://hcpms-ACCOUNT.hanatrial.ondemand.com (default: the remembered one).", valueName: "url"))
    var server: String?

    @Option(name: .customLong("app-id"), help: ArgumentHelp("The application id (default: the remembered one).", valueName: "id"))
    var appId: String?

    @OptionGroup var credential: CredentialOptions

    func validate() throws {
        try credential.validate(against: options)
        if (server == nil) != (appId == nil) { throw ValidationError("--server and --app-id go together") }
    }

    func run() async throws {
        try await reportingErrors(json: options.json) {
            var configuration: MobileServicesConfiguration?
            if let server, let appId {
                configuration = try MobileServicesConfiguration(server: server, applicationId: appId)
            }
            // The password is read before the vault's passphrase prompt, so a pipe is drained first.
            var prompt: any CredentialPrompting = SuggestingTerminalPrompt(username: credential.username)
            var authenticatorOptions = device.authenticatorOptions
            if let username = credential.username, let password = try credential.password() {
                prompt = OnceCredentialPrompt(Credential(username: username, password: password))
                authenticatorOptions.useStoredCredentials = false  // log in with exactly what was given
            }
            let client = try makeDeviceClient(
                options, device, configuration: configuration, prompt: prompt, authenticator: authenticatorOptions)
            defer { client.store.close() }
            if try client.storedApplicationConnectionId() != nil {
                let remembered = try MobileServicesConfiguration.remembered(in: client.store)
                throw MobileServicesError.alreadyRegistered(
                    server: remembered?.server ?? client.configuration.server,
                    applicationId: remembered?.applicationId ?? client.configuration.applicationId)
            }
            do {
                _ = try await client.register()
            } catch let error as AuthenticationError {
                throw AuthCLIError.authentication(error, url: client.configuration.server, login: true)
            }
            let user = try client.store.getString(MobileServicesClient.Keys.username)
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
            Sends one request to the service root with the stored credentials and appcid. If the server
            answers 404 (the registration was removed), appcid, username and password are deleted from
            the vault and the exit status is 2. A network failure deletes nothing (exit 1).
            """)

    @OptionGroup var options: VaultOptions
    @OptionGroup var device: DeviceOptions

    func run() async throws {
        try await reportingErrors(json: options.json) {
            let client = try makeDeviceClient(options, device, prompt: TerminalCredentialPrompt())
            defer { client.store.close() }
            let configuration = client.configuration
            let status: MobileServicesClient.RegistrationStatus
            do {
                status = try await client.verifyRegistration()
            } catch let error as AuthenticationError {
                throw AuthCLIError.authentication(error, url: configuration.server, login: false)
            }
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

    @OptionGroup var options: VaultOptions
    @OptionGroup var device: DeviceOptions

    func run() async throws {
        try await reportingErrors(json: options.json) {
            let client = try makeDeviceClient(options, device, prompt: TerminalCredentialPrompt())
            defer { client.store.close() }
            let deletedOnServer: Bool
            do {
                deletedOnServer = try await client.unregister()
            } catch let error as AuthenticationError {
                throw AuthCLIError.authentication(error, url: client.configuration.server, login: false)
            }
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

/// The terminal prompt, offering `--username` as the default user name.
struct SuggestingTerminalPrompt: CredentialPrompting {
    let username: String?
    let terminal = TerminalCredentialPrompt()

    func credential(for space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?) async throws -> Credential? {
        try await terminal.credential(for: space, reason: reason, suggestedUsername: suggestedUsername ?? username)
    }
}

/// Exit code, `--json` code, message and hint of a ``MobileServicesError`` (the library's hint, after
/// "\nhint: ", becomes the CLI's hint line).
func classifyMobileServices(_ error: MobileServicesError) -> (exitCode: Int32, code: String, message: String, hint: String?) {
    let parts = error.description.components(separatedBy: "\nhint: ")
    let message = parts[0]
    let hint = parts.count > 1 ? parts[1] : nil
    switch error {
    case .invalidConfiguration: return (Exit.usage, "invalid_configuration", message, hint)
    case .notConfigured: return (Exit.failure, "not_configured", message, hint)
    case .notRegistered: return (Exit.notFound, "not_registered", message, hint)
    case .registrationRemoved: return (Exit.notFound, "registration_removed", message, hint)
    case .alreadyRegistered: return (Exit.failure, "already_registered", message, hint)
    case .serverUnreachable:
        return (Exit.failure, "network_error", message, "check the URL and that the server is running; nothing was changed")
    case .unexpectedStatus: return (Exit.failure, "http_error", message, hint)
    case .malformedResponse: return (Exit.failure, "malformed_response", message, hint)
    }
}

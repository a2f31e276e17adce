import Foundation
import VaultAuth
import VaultCore

/// The SAP mobile-services tutorials' start of an app in one call: open the vault, check a stored registration once, otherwise log in
/// (stored credentials or the prompt) and register.
public enum MobileServicesStartup {
    /// How the client became ready.
    public enum Outcome: Sendable, Equatable {
        /// An `appcid` was stored and the server confirmed it: one request, no prompt.
        case verified
        /// No `appcid` was stored: the device was registered (stored credentials or the prompt's).
        case registered
        /// The stored registration was gone on the server (`404`): `appcid`, `username` and `password` were
        /// purged, then the device was registered again (which needs the prompt).
        case reregistered
    }

    /// What ``start(store:passphrase:createIfMissing:configuration:prompt:options:deviceInfo:timeout:tls:)`` returns.
    public struct Result: Sendable {
        /// The vault, open (the caller closes it).
        public let store: any KeyValueVault
        /// The ready client: registered and checked; back-end requests need no further check.
        public let client: MobileServicesClient
        public let outcome: Outcome
        /// The `appcid` in use.
        public let applicationConnectionId: String
    }

    /// Opens the vault (if not open), then:
    /// 1. the configuration is `configuration`, else the one remembered in the vault
    ///    (``MobileServicesConfiguration/remembered(in:)``);
    /// 2. if an `appcid` is stored: ``MobileServicesClient/verifyRegistration(force:)``; `200` → ready;
    ///    `404` → purged, continue with 3;
    /// 3. ``MobileServicesClient/register()`` (stored credentials, else `prompt`) → ready.
    ///
    /// - Parameters:
    ///   - passphrase: opens `store` when it is not open yet; ignored when it is.
    ///   - createIfMissing: create an empty vault when none exists (the tutorials' app does).
    ///   - configuration: the server and application id; `nil` uses the remembered ones.
    /// - Throws: ``MobileServicesError/notConfigured``; ``MobileServicesError/alreadyRegistered(server:applicationId:)``
    ///   when the vault holds a registration with another server or application id; whatever
    ///   ``MobileServicesClient/verifyRegistration(force:)`` and ``MobileServicesClient/register()`` throw
    ///   (a network failure deletes nothing); `VaultError`.
    public static func start(
        store: any KeyValueVault,
        passphrase: SecureBytes?,
        createIfMissing: Bool = true,
        configuration: MobileServicesConfiguration? = nil,
        prompt: (any CredentialPrompting)?,
        options: KeystoreAuthenticator.Options = .init(),
        deviceInfo: DeviceInfo = .current(),
        timeout: TimeInterval = AuthenticatingHTTPClient.defaultTimeout,
        tls: TLSOptions = TLSOptions()
    ) async throws -> Result {
        // Opening runs Argon2id and takes the file lock: off the cooperative pool, as every store call here.
        let remembered = try await runBlocking { () throws -> MobileServicesConfiguration? in
            // A local store may still need opening; a vault held by the agent is open already.
            if let local = store as? SecureKeyValueStore, !local.isOpen {
                guard let passphrase else { throw VaultError.notOpen }
                try local.open(with: passphrase, createIfMissing: createIfMissing)
            }
            return try MobileServicesConfiguration.remembered(in: store)
        }
        guard let configuration = configuration ?? remembered else { throw MobileServicesError.notConfigured }
        let client = MobileServicesClient(
            configuration: configuration, store: store, prompt: prompt, options: options, deviceInfo: deviceInfo,
            timeout: timeout, tls: tls)

        var outcome = Outcome.registered
        if try await runBlocking({ try client.storedApplicationConnectionId() }) != nil {
            if let remembered, remembered != configuration {
                throw MobileServicesError.alreadyRegistered(
                    server: remembered.server, applicationId: remembered.applicationId)
            }
            switch try await client.verifyRegistration() {
            case .registered:
                guard let appcid = try await runBlocking({ try client.storedApplicationConnectionId() }) else {
                    throw MobileServicesError.notRegistered
                }
                return Result(store: store, client: client, outcome: .verified, applicationConnectionId: appcid)
            case .registrationRemoved:
                outcome = .reregistered
            case .notRegistered:
                break
            }
        }
        let appcid = try await client.register()
        return Result(store: store, client: client, outcome: outcome, applicationConnectionId: appcid)
    }
}

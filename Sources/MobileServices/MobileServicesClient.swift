import Foundation
import Synchronization
import VaultAuth
import VaultCore

/// The device-registration client of the mobile-services API (the SAP mobile-services tutorials 000 and 002),
/// on the encrypted vault (any `KeyValueVault`).
///
/// - ``register()``: `POST` the connection root with Basic credentials; on `201` the `appcid` from
///   `d.ApplicationConnectionId`, and then the credential (under `credential/…`) and `appcid` are stored in **one** atomic
///   vault update (nothing is stored on any failure).
/// - ``verifyRegistration()``: once per client (process start), `GET` the service root with the credentials and
///   `X-SMP-APPCID`; `404` purges `appcid` and the credential in one update.
/// - ``unregister()``: `DELETE Connections('appcid')`, then the `appcid` is removed.
/// - ``data(forServicePath:)``: back-end requests with `X-SMP-APPCID` and the credentials (the tutorials' app
///   reads its `TravelAgencies` this way: Examples/DemoApp/TravelAgency.swift).
///
/// Credentials go through a `KeystoreAuthenticator` on the vault (`VaultCredentialStore`), so its rules hold:
/// a rejected stored password is asked for once, a typed one is kept only once accepted, plain `http` carries
/// credentials only to loopback and only with `allowInsecureLoopbackHTTP`. Unlike `vault fetch`, a stored
/// password the server rejects (401) on the check, a back-end request or the unregistration is **kept** in the
/// vault with the `appcid` (`AuthenticationError.storedCredentialRejected(…, erased: false)` without a prompt).
///
/// Every request goes to the configured origin only: a redirect to another origin fails
/// (`AuthenticationError.redirectRefused`), so no other origin's answer can confirm a registration. What is
/// parsed is read up to ``maximumResponseSize``; back-end bodies up to ``maximumServiceResponseSize``.
///
/// All methods are `async` and every request ends (timeouts). The vault's calls, which block (file I/O, `fsync`,
/// another process's lock), run off the cooperative pool (`runBlocking`). The store must be open.
public final class MobileServicesClient: Sendable {
    /// The vault keys this client reads and writes itself. The credential (`credential/<space>/username`, `password`,
    /// `credential/primary`) is `VaultCredentialStore`'s: see its key layout.
    public enum Keys {
        /// The application connection id (the tutorials' key).
        public static let applicationConnectionId = "appcid"
        /// The remembered server URL.
        public static let server = MobileServicesConfiguration.serverKey
        /// The remembered application id.
        public static let applicationId = MobileServicesConfiguration.applicationIdKey
    }

    /// The result of ``verifyRegistration()``.
    public enum RegistrationStatus: Sendable, Equatable {
        /// The server confirmed the stored `appcid` (`200`).
        case registered
        /// No `appcid` is stored; no request was made.
        case notRegistered
        /// The server answered `404`: the registration was removed (e.g. by an administrator). `appcid`,
        /// the credential was deleted from the vault.
        case registrationRemoved
    }

    public let configuration: MobileServicesConfiguration
    public let store: any KeyValueVault
    /// Who is asked for credentials when none are stored or the stored ones are rejected; `nil`: nobody.
    public let prompt: (any CredentialPrompting)?
    public let options: KeystoreAuthenticator.Options
    /// The registration body.
    public let deviceInfo: DeviceInfo
    /// Seconds a call may take (each method's requests together, prompts not counted).
    public let timeout: TimeInterval
    /// Extra trust roots and public-key pins for the server's certificate.
    public let tls: TLSOptions

    /// The most of a registration or check answer that is read (1 MiB): it is parsed, and nothing it holds is
    /// that long. A longer one fails with `AuthenticationError.responseTooLarge`.
    public static let maximumResponseSize = AuthenticatingHTTPClient.defaultMaximumBodySize
    /// The most of a back-end answer ``data(forServicePath:)`` reads: 16 MiB.
    public static let maximumServiceResponseSize = 16 << 20

    /// The authenticator on the vault used for everything but the registration itself.
    public let authenticator: KeystoreAuthenticator
    /// The vault's credentials (the one owner of their keys).
    public let credentials: VaultCredentialStore
    private let http: AuthenticatingHTTPClient
    /// Whether the registration was confirmed by this client (register, or a `200` check).
    private let verified = Mutex(false)

    /// Makes a client; nothing is sent until a method is called.
    ///
    /// - Parameters:
    ///   - store: the vault, open.
    ///   - prompt: e.g. `TerminalCredentialPrompt()`, or a `ClosureCredentialPrompt` answering from a script.
    ///   - options: the authenticator's options; tests against the loopback emulator need
    ///     `allowInsecureLoopbackHTTP: true`.
    public init(
        configuration: MobileServicesConfiguration,
        store: any KeyValueVault,
        prompt: (any CredentialPrompting)?,
        options: KeystoreAuthenticator.Options = .init(),
        deviceInfo: DeviceInfo = .current(),
        timeout: TimeInterval = AuthenticatingHTTPClient.defaultTimeout,
        tls: TLSOptions = TLSOptions()
    ) {
        self.configuration = configuration
        self.tls = tls
        self.store = store
        self.prompt = prompt
        self.options = options
        self.deviceInfo = deviceInfo
        self.timeout = timeout
        self.credentials = VaultCredentialStore(store: store)
        // A 401 to the check (or a later request) keeps the credential: it belongs to the registration, and
        // erasing it would leave an appcid without its user (docs/MOBILE-SERVICES.md, "A rejected password").
        var kept = options
        kept.eraseRejectedCredentials = false
        self.authenticator = KeystoreAuthenticator(store: credentials, prompt: prompt, options: kept)
        self.http = AuthenticatingHTTPClient(
            authenticator: authenticator, timeout: timeout, tls: tls, redirects: .sameOriginOnly)
    }

    /// The stored application connection id, or `nil`.
    public func storedApplicationConnectionId() throws -> String? {
        try store.getString(Keys.applicationConnectionId)
    }

    /// ``storedApplicationConnectionId()`` off the cooperative pool.
    private func loadApplicationConnectionId() async throws -> String? {
        try await runBlocking { try self.storedApplicationConnectionId() }
    }

    // MARK: - Register

    /// Registers this device: `POST {base}/odata/applications/latest/{applicationId}/Connections` with ``deviceInfo``
    /// as JSON and Basic credentials (stored ones, or the prompt's, by the authenticator's rules).
    ///
    /// On `201` the `appcid` is read from `d.ApplicationConnectionId`, then **one** vault update stores
    /// the accepted credential (`credential/…`), `appcid`, `mobileservices.server`
    /// and `mobileservices.appid`, and records its space as the primary one (another server's credential stays
    /// where it is). Nothing is stored before the `201`, nor after any
    /// failure; the only write a failure can cause is the authenticator erasing a **stored** credential the
    /// server rejected (its rule, git's `credential reject`).
    ///
    /// - Returns: the new `appcid`.
    /// - Throws: `AuthenticationError` (e.g. `credentialsRejected` after a `401`, `noPromptAvailable`,
    ///   `insecureTransport`); ``MobileServicesError/unexpectedStatus(operation:url:status:)`` for any status
    ///   but `201`; ``MobileServicesError/malformedResponse(operation:url:status:detail:)``;
    ///   ``MobileServicesError/serverUnreachable(url:detail:)``; `VaultError`.
    @discardableResult
    public func register() async throws -> String {
        let url = configuration.connectionsURL
        // Before any request: a registration the vault could not record must not be made on the server.
        try await runBlocking { try self.checkNothingUnownedWouldBeOverwritten() }
        let staging = StagingCredentialStore(base: credentials)
        let authenticator = KeystoreAuthenticator(store: staging, prompt: prompt, options: options)
        try await rememberPrimarySpace(in: authenticator)
        let client = AuthenticatingHTTPClient(
            authenticator: authenticator, timeout: timeout, tls: tls, redirects: .sameOriginOnly)

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let request = HTTPRequest(
            method: "POST", url: url,
            headers: HTTPHeaderFields([("Content-Type", "application/json"), ("Accept", "application/json")]),
            body: Array(try encoder.encode(deviceInfo)))

        let (data, response) = try await send(request, through: client, operation: .registration)
        guard response.statusCode == 201 else {
            throw MobileServicesError.unexpectedStatus(
                operation: .registration, url: url.absoluteString, status: response.statusCode)
        }
        let appcid = try Self.applicationConnectionId(fromRegistrationBody: data, url: url)
        let accepted = staging.acceptedCredential
        try await runBlocking { try self.commitRegistration(applicationConnectionId: appcid, credential: accepted) }
        if let accepted { self.authenticator.rememberProtectionSpace(accepted.space) }
        verified.withLock { $0 = true }
        return appcid
    }

    /// The `201` body: OData v2's `{"d": {"ApplicationConnectionId": "…", …}}` (other fields are ignored).
    private struct CreatedConnection: Decodable {
        struct Entity: Decodable {
            let applicationConnectionId: String
            enum CodingKeys: String, CodingKey { case applicationConnectionId = "ApplicationConnectionId" }
        }
        let d: Entity
    }

    /// Reads `d.ApplicationConnectionId` from a `201` body; the id must be 1 to 128 ASCII letters, digits, `-`,
    /// `_` or `.` (it goes into a URL path and a header).
    ///
    /// - Throws: ``MobileServicesError/malformedResponse(operation:url:status:detail:)``.
    static func applicationConnectionId(fromRegistrationBody data: Data, url: URL) throws -> String {
        func malformed(_ detail: String) -> MobileServicesError {
            .malformedResponse(operation: .registration, url: url.absoluteString, status: 201, detail: detail)
        }
        guard !data.isEmpty else { throw malformed("the body is empty") }
        let created: CreatedConnection
        do {
            created = try JSONDecoder().decode(CreatedConnection.self, from: data)
        } catch let error as DecodingError {
            // How deep the failure is: at the root or at `d` the object is missing, below it the string.
            let depth: Int
            switch error {
            case let .dataCorrupted(context):
                guard !context.codingPath.isEmpty else { throw malformed("the body is not JSON") }
                depth = context.codingPath.count
            case let .keyNotFound(_, context): depth = context.codingPath.count + 1
            case let .typeMismatch(_, context), let .valueNotFound(_, context): depth = context.codingPath.count
            @unknown default: depth = 0
            }
            throw malformed(depth <= 1 ? "no object 'd'" : "no string 'd.ApplicationConnectionId'")
        }
        let appcid = created.d.applicationConnectionId
        guard isValidApplicationConnectionId(appcid) else {
            throw malformed("'d.ApplicationConnectionId' is empty or has characters an id cannot have")
        }
        return appcid
    }

    /// Refuses (``AuthenticationError/unownedEntries(_:)``) when the vault holds the user's own entry under a key
    /// a registration writes: an `appcid` without the `mobileservices.server` a registration records next to it.
    /// (Credentials live under `credential/…`, apart from the user's entries: a user's `username` or `password`
    /// is neither overwritten nor sent.)
    public func checkNothingUnownedWouldBeOverwritten() throws {
        if try store.contains(Keys.applicationConnectionId), try !store.contains(Keys.server) {
            throw AuthenticationError.unownedEntries([Keys.applicationConnectionId])
        }
    }

    static func isValidApplicationConnectionId(_ appcid: String) -> Bool {
        !appcid.isEmpty && appcid.utf8.count <= 128
            && appcid.unicodeScalars.allSatisfy(MobileServicesConfiguration.isIdentifierScalar)
    }

    /// The one vault update of a successful registration: the accepted credential becomes the primary one (a
    /// previous primary of another server moves to its own keys), with the `appcid` and the configuration.
    private func commitRegistration(applicationConnectionId: String, credential: StagingCredentialStore.Entry?) throws {
        var changes = SecureKeyValueStore.Changes()
        try checkNothingUnownedWouldBeOverwritten()
        if let credential {
            try credentials.stage(credential.credential, for: credential.space, asPrimary: true, into: &changes)
        }
        try changes.put(applicationConnectionId, forKey: Keys.applicationConnectionId)
        try changes.put(configuration.server, forKey: Keys.server)
        try changes.put(configuration.applicationId, forKey: Keys.applicationId)
        try store.write(changes)
    }

    // MARK: - Verify

    /// Checks the stored registration once (tutorial 002): `GET {base}/{applicationId}` with the credentials and
    /// `X-SMP-APPCID`. Later calls on the same client return ``RegistrationStatus/registered`` without a request
    /// once it was confirmed (pass `force` to ask again).
    ///
    /// - `200`: ``RegistrationStatus/registered``.
    /// - `404`: the registration is gone: `appcid` and the primary credential are deleted in
    ///   one update; ``RegistrationStatus/registrationRemoved``.
    /// - No `appcid` stored: ``RegistrationStatus/notRegistered``, no request.
    ///
    /// - Throws: ``MobileServicesError/serverUnreachable(url:detail:)`` (nothing deleted);
    ///   ``MobileServicesError/unexpectedStatus(operation:url:status:)`` for any other status, e.g. `403`
    ///   (nothing deleted); `AuthenticationError` when the credentials are rejected or cannot be asked for.
    public func verifyRegistration(force: Bool = false) async throws -> RegistrationStatus {
        guard let appcid = try await loadApplicationConnectionId() else { return .notRegistered }
        if !force, verified.withLock({ $0 }) { return .registered }
        let url = configuration.serviceRootURL
        let response = try await serviceRequest(url: url, method: "GET", appcid: appcid, operation: .verification).1
        switch response.statusCode {
        case 200:
            verified.withLock { $0 = true }
            return .registered
        case 404:
            try await runBlocking {
                var changes = SecureKeyValueStore.Changes()
                changes.remove(Keys.applicationConnectionId)
                try self.credentials.stagePurgeOfPrimary(ifItBelongsTo: url, into: &changes)
                try self.store.write(changes)
            }
            verified.withLock { $0 = false }
            return .registrationRemoved
        default:
            throw MobileServicesError.unexpectedStatus(
                operation: .verification, url: url.absoluteString, status: response.statusCode)
        }
    }

    // MARK: - Unregister

    /// Removes the registration: `DELETE .../Connections('{appcid}')`, then the `appcid` is removed from the
    /// vault (the credentials and the remembered server stay).
    ///
    /// - Returns: `true` if the server deleted it (`200`/`204`), `false` if it did not know it any more (`404`;
    ///   the `appcid` is removed too).
    /// - Throws: ``MobileServicesError/notRegistered`` when no `appcid` is stored; for any other status
    ///   ``MobileServicesError/unexpectedStatus(operation:url:status:)`` and nothing is removed.
    @discardableResult
    public func unregister() async throws -> Bool {
        guard let appcid = try await loadApplicationConnectionId() else { throw MobileServicesError.notRegistered }
        let url = try checkedConnectionURL(appcid)
        let response = try await serviceRequest(url: url, method: "DELETE", appcid: appcid, operation: .unregistration).1
        let deleted: Bool
        switch response.statusCode {
        case 200, 204: deleted = true
        case 404: deleted = false
        default:
            throw MobileServicesError.unexpectedStatus(
                operation: .unregistration, url: url.absoluteString, status: response.statusCode)
        }
        _ = try await runBlocking { try self.store.remove(Keys.applicationConnectionId) }
        verified.withLock { $0 = false }
        return deleted
    }

    private func checkedConnectionURL(_ appcid: String) throws -> URL {
        guard Self.isValidApplicationConnectionId(appcid) else { throw MobileServicesError.invalidStoredRegistration }
        return configuration.connectionURL(applicationConnectionId: appcid)
    }

    // MARK: - Back end

    /// `GET {base}/{applicationId}/{path}` with `X-SMP-APPCID` and the credentials; the body of a `200`.
    ///
    /// - Throws: ``MobileServicesError/notRegistered`` when no `appcid` is stored;
    ///   ``MobileServicesError/unexpectedStatus(operation:url:status:)`` for any status but `200`.
    public func data(forServicePath path: String) async throws -> Data {
        guard let appcid = try await loadApplicationConnectionId() else { throw MobileServicesError.notRegistered }
        let url = configuration.serviceURL(path: path)
        let (data, response) = try await serviceRequest(
            url: url, method: "GET", appcid: appcid, operation: .serviceRequest,
            maximumBodySize: Self.maximumServiceResponseSize)
        guard response.statusCode == 200 else {
            throw MobileServicesError.unexpectedStatus(
                operation: .serviceRequest, url: url.absoluteString, status: response.statusCode)
        }
        return data
    }

    // MARK: - Plumbing

    private func serviceRequest(
        url: URL, method: String, appcid: String, operation: MobileServicesError.Operation,
        maximumBodySize: Int = MobileServicesClient.maximumResponseSize
    ) async throws -> (Data, HTTPResponse) {
        guard Self.isValidApplicationConnectionId(appcid) else { throw MobileServicesError.invalidStoredRegistration }
        try await rememberPrimarySpace(in: authenticator)
        let request = HTTPRequest(
            method: method, url: url,
            headers: HTTPHeaderFields([("Accept", "application/json"), ("X-SMP-APPCID", appcid)]))
        return try await send(request, through: http, operation: operation, maximumBodySize: maximumBodySize)
    }

    /// Lets `authenticator` send the stored credential with the first request when the vault's primary space is
    /// this server's origin (one request per check instead of a 401 round trip).
    private func rememberPrimarySpace(in authenticator: KeystoreAuthenticator) async throws {
        guard let space = try await runBlocking({ try self.credentials.recordedPrimary() }),
              let origin = Origin(configuration.connectionsURL), space.origin == origin
        else { return }
        authenticator.rememberProtectionSpace(space)
    }

    private func send(
        _ request: HTTPRequest, through client: AuthenticatingHTTPClient, operation: MobileServicesError.Operation,
        maximumBodySize: Int = MobileServicesClient.maximumResponseSize
    ) async throws -> (Data, HTTPResponse) {
        do {
            return try await client.data(for: request, maximumBodySize: maximumBodySize)
        } catch let AuthenticationError.transportFailed(url, detail) {
            throw MobileServicesError.serverUnreachable(url: url.absoluteString, detail: detail)
        }
    }
}

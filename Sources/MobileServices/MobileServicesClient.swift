import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import VaultAuth
import VaultCore

/// The device-registration client of the mobile-services API (seeds 000 and 002), on the encrypted vault.
///
/// - ``register()``: `POST` the connection root with Basic credentials; on `201` the `appcid` from
///   `d.ApplicationConnectionId`, and then `username`, `password` and `appcid` are stored in **one** atomic
///   vault update (nothing is stored on any failure).
/// - ``verifyRegistration()``: once per client (process start), `GET` the service root with the credentials and
///   `X-SMP-APPCID`; `404` purges `appcid`, `username` and `password` in one update.
/// - ``unregister()``: `DELETE Connections('appcid')`, then the `appcid` is removed.
/// - ``data(forServicePath:)`` and ``travelAgencies()``: back-end requests with `X-SMP-APPCID` and the
///   credentials.
///
/// Credentials go through a `KeystoreAuthenticator` on the vault (`VaultCredentialStore`), so its rules hold:
/// a rejected stored password is erased and asked for once, a typed one is kept only once accepted, plain
/// `http` carries credentials only to loopback and only with `allowInsecureLoopbackHTTP`.
///
/// All methods are `async` and every request ends (timeouts); nothing blocks a thread. The store must be open.
public final class MobileServicesClient: Sendable {
    /// The vault keys this client reads and writes.
    public enum Keys {
        /// The application connection id (the seeds' key).
        public static let applicationConnectionId = "appcid"
        /// The username (the seeds' key; `VaultCredentialStore`'s primary space).
        public static let username = VaultCredentialStore.usernameKey
        /// The password (the seeds' key).
        public static let password = VaultCredentialStore.passwordKey
        /// The protection space `username`/`password` belong to (see docs/AUTH.md).
        public static let credentialSpace = VaultCredentialStore.primarySpaceKey
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
        /// `username` and `password` were deleted from the vault.
        case registrationRemoved
    }

    public let configuration: MobileServicesConfiguration
    public let store: SecureKeyValueStore
    /// Who is asked for credentials when none are stored or the stored ones are rejected; `nil`: nobody.
    public let prompt: (any CredentialPrompting)?
    public let options: KeystoreAuthenticator.Options
    /// The registration body.
    public let deviceInfo: DeviceInfo
    /// Seconds before an idle request fails.
    public let timeout: TimeInterval

    /// The authenticator on the vault used for everything but the registration itself.
    public let authenticator: KeystoreAuthenticator
    private let credentials: VaultCredentialStore
    private let http: AuthenticatingHTTPClient

    private let lock = NSLock()
    nonisolated(unsafe) private var verified = false  // guarded by `lock`

    /// Makes a client; nothing is sent until a method is called.
    ///
    /// - Parameters:
    ///   - store: the vault, open.
    ///   - prompt: e.g. `TerminalCredentialPrompt()`, or a `ClosureCredentialPrompt` answering from a script.
    ///   - options: the authenticator's options; tests against the loopback emulator need
    ///     `allowInsecureLoopbackHTTP: true`.
    public init(
        configuration: MobileServicesConfiguration,
        store: SecureKeyValueStore,
        prompt: (any CredentialPrompting)?,
        options: KeystoreAuthenticator.Options = .init(),
        deviceInfo: DeviceInfo = .current(),
        timeout: TimeInterval = AuthenticatingHTTPClient.defaultTimeout
    ) {
        self.configuration = configuration
        self.store = store
        self.prompt = prompt
        self.options = options
        self.deviceInfo = deviceInfo
        self.timeout = timeout
        self.credentials = VaultCredentialStore(store: store)
        self.authenticator = KeystoreAuthenticator(store: credentials, prompt: prompt, options: options)
        self.http = AuthenticatingHTTPClient(authenticator: authenticator, timeout: timeout)
    }

    deinit {
        http.invalidate()
    }

    /// The stored application connection id, or `nil`.
    public func storedApplicationConnectionId() throws -> String? {
        try store.getString(Keys.applicationConnectionId)
    }

    // MARK: - Register

    /// Registers this device: `POST {base}/odata/applications/latest/{appId}/Connections` with ``deviceInfo``
    /// as JSON and Basic credentials (stored ones, or the prompt's, by the authenticator's rules).
    ///
    /// On `201` the `appcid` is read from `d.ApplicationConnectionId`, then **one** vault update stores
    /// `username`, `password`, `credential.space` (the accepted credential), `appcid`, `mobileservices.server`
    /// and `mobileservices.appid`. If another server's credential was the vault's primary one, it is moved to
    /// its `credential/<space>/` keys in the same update. Nothing is stored before the `201`, nor after any
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
        let staging = StagingCredentialStore(base: credentials)
        let authenticator = KeystoreAuthenticator(store: staging, prompt: prompt, options: options)
        try rememberPrimarySpace(in: authenticator)
        let client = AuthenticatingHTTPClient(authenticator: authenticator, timeout: timeout)
        defer { client.invalidate() }

        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        request.httpBody = try encoder.encode(deviceInfo)

        let (data, response) = try await send(request, through: client, operation: .registration)
        guard response.statusCode == 201 else {
            throw MobileServicesError.unexpectedStatus(
                operation: .registration, url: url.absoluteString, status: response.statusCode)
        }
        let appcid = try Self.applicationConnectionId(fromRegistrationBody: data, url: url)
        let accepted = staging.acceptedCredential
        try commitRegistration(applicationConnectionId: appcid, credential: accepted)
        if let accepted { self.authenticator.rememberProtectionSpace(accepted.space) }
        lock.withLock { verified = true }
        return appcid
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
        guard let root = try? JSONSerialization.jsonObject(with: data) else { throw malformed("the body is not JSON") }
        guard let object = root as? [String: Any], let d = object["d"] as? [String: Any] else {
            throw malformed("no object 'd'")
        }
        guard let appcid = d["ApplicationConnectionId"] as? String else {
            throw malformed("no string 'd.ApplicationConnectionId'")
        }
        guard isValidApplicationConnectionId(appcid) else {
            throw malformed("'d.ApplicationConnectionId' is empty or has characters an id cannot have")
        }
        return appcid
    }

    static func isValidApplicationConnectionId(_ appcid: String) -> Bool {
        !appcid.isEmpty && appcid.utf8.count <= 128
            && appcid.unicodeScalars.allSatisfy(MobileServicesConfiguration.isIdentifierScalar)
    }

    /// The one vault update of a successful registration.
    private func commitRegistration(applicationConnectionId: String, credential: StagingCredentialStore.Entry?) throws {
        let previousPrimary = try store.getString(Keys.credentialSpace).flatMap(ProtectionSpace.init(key:))
        var moved: (prefix: String, username: String, password: SecureBytes)?
        if let credential, let previousPrimary, previousPrimary != credential.space,
           let username = try store.getString(Keys.username), let password = try store.getBytes(Keys.password) {
            moved = (VaultCredentialStore.keyPrefix(for: previousPrimary), username, password)
        }
        try store.update { changes in
            if let credential {
                try changes.put(credential.credential.username, forKey: Keys.username)
                try changes.put(credential.credential.password, forKey: Keys.password)
                try changes.put(credential.space.key, forKey: Keys.credentialSpace)
                let prefix = VaultCredentialStore.keyPrefix(for: credential.space)
                changes.remove(prefix + "username")
                changes.remove(prefix + "password")
            }
            if let moved {
                try changes.put(moved.username, forKey: moved.prefix + "username")
                try changes.put(moved.password, forKey: moved.prefix + "password")
            }
            try changes.put(applicationConnectionId, forKey: Keys.applicationConnectionId)
            try changes.put(configuration.server, forKey: Keys.server)
            try changes.put(configuration.applicationId, forKey: Keys.applicationId)
        }
    }

    // MARK: - Verify

    /// Checks the stored registration once (seed 002): `GET {base}/{appId}` with the credentials and
    /// `X-SMP-APPCID`. Later calls on the same client return ``RegistrationStatus/registered`` without a request
    /// once it was confirmed (pass `force` to ask again).
    ///
    /// - `200`: ``RegistrationStatus/registered``.
    /// - `404`: the registration is gone: `appcid`, `username`, `password` and `credential.space` are deleted in
    ///   one update; ``RegistrationStatus/registrationRemoved``.
    /// - No `appcid` stored: ``RegistrationStatus/notRegistered``, no request.
    ///
    /// - Throws: ``MobileServicesError/serverUnreachable(url:detail:)`` (nothing deleted);
    ///   ``MobileServicesError/unexpectedStatus(operation:url:status:)`` for any other status, e.g. `403`
    ///   (nothing deleted); `AuthenticationError` when the credentials are rejected or cannot be asked for.
    public func verifyRegistration(force: Bool = false) async throws -> RegistrationStatus {
        guard let appcid = try storedApplicationConnectionId() else { return .notRegistered }
        if !force, lock.withLock({ verified }) { return .registered }
        let url = configuration.serviceRootURL
        let response = try await serviceRequest(url: url, method: "GET", appcid: appcid, operation: .verification).1
        switch response.statusCode {
        case 200:
            lock.withLock { verified = true }
            return .registered
        case 404:
            try store.update { changes in
                changes.remove(Keys.applicationConnectionId)
                changes.remove(Keys.username)
                changes.remove(Keys.password)
                changes.remove(Keys.credentialSpace)
            }
            lock.withLock { verified = false }
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
        guard let appcid = try storedApplicationConnectionId() else { throw MobileServicesError.notRegistered }
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
        _ = try store.remove(Keys.applicationConnectionId)
        lock.withLock { verified = false }
        return deleted
    }

    private func checkedConnectionURL(_ appcid: String) throws -> URL {
        guard Self.isValidApplicationConnectionId(appcid) else {
            throw VaultError.typeMismatch(key: Keys.applicationConnectionId, reason: "not an application connection id")
        }
        return configuration.connectionURL(applicationConnectionId: appcid)
    }

    // MARK: - Back end

    /// `GET {base}/{appId}/{path}` with `X-SMP-APPCID` and the credentials; the body of a `200`.
    ///
    /// - Throws: ``MobileServicesError/notRegistered`` when no `appcid` is stored;
    ///   ``MobileServicesError/unexpectedStatus(operation:url:status:)`` for any status but `200`.
    public func data(forServicePath path: String) async throws -> Data {
        guard let appcid = try storedApplicationConnectionId() else { throw MobileServicesError.notRegistered }
        let url = configuration.serviceURL(path: path)
        let (data, response) = try await serviceRequest(url: url, method: "GET", appcid: appcid, operation: .serviceRequest)
        guard response.statusCode == 200 else {
            throw MobileServicesError.unexpectedStatus(
                operation: .serviceRequest, url: url.absoluteString, status: response.statusCode)
        }
        return data
    }

    /// The back end's travel agencies (`GET {base}/{appId}/TravelAgencies`, OData `d.results`).
    public func travelAgencies() async throws -> [TravelAgency] {
        let url = configuration.serviceURL(path: TravelAgency.entitySet)
        let data = try await data(forServicePath: TravelAgency.entitySet)
        return try TravelAgency.parse(data, url: url)
    }

    // MARK: - Plumbing

    private func serviceRequest(
        url: URL, method: String, appcid: String, operation: MobileServicesError.Operation
    ) async throws -> (Data, HTTPURLResponse) {
        guard Self.isValidApplicationConnectionId(appcid) else {
            throw VaultError.typeMismatch(key: Keys.applicationConnectionId, reason: "not an application connection id")
        }
        try rememberPrimarySpace(in: authenticator)
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.setValue(appcid, forHTTPHeaderField: "X-SMP-APPCID")
        return try await send(request, through: http, operation: operation)
    }

    /// Lets `authenticator` send the stored credential with the first request when the vault's primary space is
    /// this server's origin (one request per check instead of a 401 round trip).
    private func rememberPrimarySpace(in authenticator: KeystoreAuthenticator) throws {
        guard let key = try store.getString(Keys.credentialSpace), let space = ProtectionSpace(key: key),
              let origin = Origin(configuration.connectionsURL), space.origin == origin
        else { return }
        authenticator.rememberProtectionSpace(space)
    }

    private func send(
        _ request: URLRequest, through client: AuthenticatingHTTPClient, operation: MobileServicesError.Operation
    ) async throws -> (Data, HTTPURLResponse) {
        do {
            return try await client.data(for: request)
        } catch let AuthenticationError.transportFailed(url, detail) {
            throw MobileServicesError.serverUnreachable(url: url.absoluteString, detail: detail)
        }
    }
}

/// Reads stored credentials from the vault, but keeps a credential the server accepted in memory, so that the
/// registration can store it together with the `appcid` in one update. Erasing a rejected stored credential
/// goes to the vault (the authenticator's rule).
final class StagingCredentialStore: CredentialStoring, @unchecked Sendable {
    struct Entry {
        let space: ProtectionSpace
        let credential: Credential
    }

    private let base: VaultCredentialStore
    private let lock = NSLock()
    private var staged: Entry?  // guarded by `lock`: accepted, typed by the user
    private var lastRead: Entry?  // guarded by `lock`: the stored one handed out (and so sent)

    init(base: VaultCredentialStore) {
        self.base = base
    }

    /// The credential the request went out with last: the accepted typed one, else the stored one.
    var acceptedCredential: Entry? { lock.withLock { staged ?? lastRead } }

    func credential(for space: ProtectionSpace) throws -> Credential? {
        if let staged = lock.withLock({ staged }), staged.space == space { return staged.credential }
        let credential = try base.credential(for: space)
        if let credential { lock.withLock { lastRead = Entry(space: space, credential: credential) } }
        return credential
    }

    func store(_ credential: Credential, for space: ProtectionSpace) throws {
        lock.withLock { staged = Entry(space: space, credential: credential) }
    }

    func removeCredential(for space: ProtectionSpace) throws {
        lock.withLock {
            if lastRead?.space == space { lastRead = nil }
            if staged?.space == space { staged = nil }
        }
        try base.removeCredential(for: space)
    }

    func storedSpaces() throws -> [ProtectionSpace] {
        try base.storedSpaces()
    }
}

import FoundationEssentials
import Synchronization
import VaultCore

/// A ``CredentialStoring`` in the encrypted vault (any ``KeyValueVault``): the one owner of the credential key
/// layout. Nothing else in the package spells these keys; callers that must change credentials together with
/// other entries (device registration, `vault logout`, the git credential helper) stage the change into their
/// own ``SecureKeyValueStore/Changes`` with the `stage…` methods, so that one atomic update remains possible.
///
/// ## Key layout
///
/// One protection space is the **primary** one: its credential is kept under the keys of the SAP
/// mobile-services tutorials, which the device-registration flow reads, and `credential.space` records which
/// space they belong to:
///
/// | key                                   | value                                              |
/// |---------------------------------------|----------------------------------------------------|
/// | `username`                            | the primary space's username (UTF-8)               |
/// | `password`                            | the primary space's password (UTF-8)               |
/// | `credential.space`                    | the primary space, as ``ProtectionSpace/key``      |
/// | `credential/<space key>/username`     | the username of any other space                    |
/// | `credential/<space key>/password`     | the password of any other space                    |
/// | `credential/<space key>/password_expiry_utc` | when the password expires, Unix seconds (any space) |
/// | `credential/<space key>/oauth_refresh_token` | the OAuth refresh token sent with the password (any space) |
/// | `credential/<space key>/authtype`     | the scheme of a pre-encoded credential, e.g. `Bearer` (any space) |
/// | `credential/<space key>/credential`   | the pre-encoded credential itself (any space)      |
///
/// `<space key>` is ``ProtectionSpace/key``: `scheme://host:port/realm` with the realm percent-encoded, so it
/// holds no `/` after the port, e.g. `credential/https://example.com:443/My%20Realm/username`.
///
/// Which space is primary:
/// 1. the one recorded in `credential.space`, when present (a value that is not a space key is an error,
///    ``AuthenticationError/malformedStoredSpace(entry:)``, never "no primary");
/// 2. else the `primarySpace` given to ``init(store:primarySpace:)``; a vault written by the tutorials' app
///    (`username` and `password` without `credential.space`) is read as that space's credential;
/// 3. else the first space stored while the vault has no `username` and no `password`.
/// An unscoped `username`/`password` (no `credential.space`, no `primarySpace`) is never sent anywhere: nobody
/// knows which server it belongs to.
///
/// Each store and each removal is **one** atomic write (username, password and `credential.space` change
/// together). Removing the primary credential leaves other keys (e.g. `appcid`) alone.
///
/// Every method blocks (the vault's file I/O); call it from `async` code through `runBlocking`.
public final class VaultCredentialStore: CredentialStoring {
    private static let usernameKey = "username"
    private static let passwordKey = "password"
    private static let primarySpaceKey = "credential.space"
    private static let prefix = "credential/"
    private static let expiryName = "password_expiry_utc"
    private static let refreshTokenName = "oauth_refresh_token"
    private static let authTypeName = "authtype"
    private static let authCredentialName = "credential"

    /// The key prefix of a space's own entries: `credential/<space key>/`.
    private static func keyPrefix(for space: ProtectionSpace) -> String { prefix + space.key + "/" }

    public let store: any KeyValueVault
    /// The space to use for the tutorials' `username`/`password` keys when the vault does not record one.
    public let primarySpace: ProtectionSpace?
    /// Serialises read-modify-write in this process; the vault locks across processes.
    private let lock = Mutex<Void>(())

    public init(store: any KeyValueVault, primarySpace: ProtectionSpace? = nil) {
        self.store = store
        self.primarySpace = primarySpace
    }

    // MARK: - Reading

    /// The primary space: recorded in the vault, else ``primarySpace`` if the vault has tutorial-style
    /// credentials, else `nil`.
    ///
    /// - Throws: ``AuthenticationError/malformedStoredSpace(entry:)`` when `credential.space` is not a space key;
    ///   `VaultError`.
    public func primary() throws -> ProtectionSpace? {
        if let recorded = try recordedPrimary() { return recorded }
        if let primarySpace, try store.getString(Self.usernameKey) != nil { return primarySpace }
        return nil
    }

    /// The space recorded in `credential.space`, or `nil` when none is recorded.
    ///
    /// - Throws: ``AuthenticationError/malformedStoredSpace(entry:)``; `VaultError`.
    public func recordedPrimary() throws -> ProtectionSpace? {
        guard let recorded = try store.getString(Self.primarySpaceKey) else { return nil }
        guard let space = ProtectionSpace(key: recorded) else {
            throw AuthenticationError.malformedStoredSpace(entry: Self.primarySpaceKey)
        }
        return space
    }

    /// The username under the primary keys (whatever space they belong to), or `nil`.
    public func primaryUsername() throws -> String? {
        try store.getString(Self.usernameKey)
    }

    public func credential(for space: ProtectionSpace) throws -> Credential? {
        try lock.withLock { _ in
            if try primary() == space {
                return try read(usernameKey: Self.usernameKey, passwordKey: Self.passwordKey)
            }
            let prefix = Self.keyPrefix(for: space)
            return try read(usernameKey: prefix + Self.usernameKey, passwordKey: prefix + Self.passwordKey)
        }
    }

    private func read(usernameKey: String, passwordKey: String) throws -> Credential? {
        guard let username = try store.getString(usernameKey), let password = try store.getBytes(passwordKey)
        else { return nil }
        return Credential(username: username, password: password)
    }

    /// When the password of `space` expires, as git gave it (`password_expiry_utc`), or `nil`.
    public func expiry(for space: ProtectionSpace) throws -> String? {
        try store.getString(Self.keyPrefix(for: space) + Self.expiryName)
    }

    /// What `space`'s credential carries besides username and password (all `nil` when nothing is stored).
    public func extras(for space: ProtectionSpace) throws -> CredentialExtras {
        let prefix = Self.keyPrefix(for: space)
        return CredentialExtras(
            passwordExpiryUTC: try store.getString(prefix + Self.expiryName),
            oauthRefreshToken: try store.getBytes(prefix + Self.refreshTokenName),
            authType: try store.getString(prefix + Self.authTypeName),
            authCredential: try store.getBytes(prefix + Self.authCredentialName))
    }

    /// When `space`'s entries were last written (its password's, else its pre-encoded credential's), or `nil`
    /// when it has neither.
    public func lastModified(of space: ProtectionSpace) throws -> Date? {
        let prefix = Self.keyPrefix(for: space)
        if try primary() == space, let attributes = try store.attributes(forKey: Self.passwordKey) {
            return attributes.modified
        }
        return try (store.attributes(forKey: prefix + Self.passwordKey)
            ?? store.attributes(forKey: prefix + Self.authCredentialName))?.modified
    }

    /// Every space with a credential: the primary one, each with a `credential/<space key>/username`, and each
    /// with only a pre-encoded `credential/<space key>/credential`.
    public func storedSpaces() throws -> [ProtectionSpace] {
        try lock.withLock { _ in
            var spaces: Set<ProtectionSpace> = []
            if let primary = try primary() { spaces.insert(primary) }
            for suffix in ["/" + Self.usernameKey, "/" + Self.authCredentialName] {
                for key in try store.keys() where key.hasPrefix(Self.prefix) && key.hasSuffix(suffix) {
                    let spaceKey = key.dropFirst(Self.prefix.count).dropLast(suffix.count)
                    if let space = ProtectionSpace(key: String(spaceKey)) { spaces.insert(space) }
                }
            }
            return spaces.sorted { $0.key < $1.key }
        }
    }

    // MARK: - Writing, one atomic update each

    public func store(_ credential: Credential, for space: ProtectionSpace) throws {
        try lock.withLock { _ in
            let usePrimary: Bool
            if let recorded = try recordedPrimary() {
                usePrimary = recorded == space
            } else if let primarySpace {
                usePrimary = primarySpace == space
            } else {
                usePrimary = try store.getString(Self.usernameKey) == nil && store.getBytes(Self.passwordKey) == nil
            }
            var changes = SecureKeyValueStore.Changes()
            try stage(credential, for: space, asPrimary: usePrimary, into: &changes)
            try store.write(changes)
        }
    }

    /// Removes every entry of `space` (under `credential/<space key>/`, and the primary keys when it is the
    /// primary space).
    public func removeCredential(for space: ProtectionSpace) throws {
        try removeCredentials(of: [space])
    }

    /// Removes the credentials of `spaces` in one update (see ``stageRemoval(of:into:)``).
    public func removeCredentials(of spaces: [ProtectionSpace]) throws {
        try lock.withLock { _ in
            var changes = SecureKeyValueStore.Changes()
            try stageRemoval(of: spaces, into: &changes)
            try store.write(changes)
        }
    }

    // MARK: - Staging into a caller's update

    /// Adds to `changes` what stores `credential` for `space`.
    ///
    /// - `asPrimary`: under the primary keys, recording `space` in `credential.space` (and dropping the space's
    ///   own `credential/<space key>/` username and password). If another space's credential was primary, it
    ///   moves to its own `credential/<space key>/` keys in the same update.
    /// - otherwise: under `credential/<space key>/`.
    public func stage(
        _ credential: Credential, for space: ProtectionSpace, asPrimary: Bool,
        into changes: inout SecureKeyValueStore.Changes
    ) throws {
        let prefix = Self.keyPrefix(for: space)
        guard asPrimary else {
            try changes.put(credential.username, forKey: prefix + Self.usernameKey)
            try changes.put(credential.password, forKey: prefix + Self.passwordKey)
            return
        }
        // Unless the embedder declared these keys `space`'s (``primarySpace``, the tutorials' vaults).
        if primarySpace != space { try checkPrimaryKeysAreOwned() }
        if let previous = try recordedPrimary(), previous != space,
           let moved = try read(usernameKey: Self.usernameKey, passwordKey: Self.passwordKey) {
            let movedPrefix = Self.keyPrefix(for: previous)
            try changes.put(moved.username, forKey: movedPrefix + Self.usernameKey)
            try changes.put(moved.password, forKey: movedPrefix + Self.passwordKey)
        }
        try changes.put(credential.username, forKey: Self.usernameKey)
        try changes.put(credential.password, forKey: Self.passwordKey)
        try changes.put(space.key, forKey: Self.primarySpaceKey)
        changes.remove(prefix + Self.usernameKey)
        changes.remove(prefix + Self.passwordKey)
    }

    /// Adds to `changes` the removal of the credentials of `spaces`: the primary keys when one of them is the
    /// primary space, and every key under `credential/<space key>/` (username, password, password_expiry_utc).
    public func stageRemoval(of spaces: [ProtectionSpace], into changes: inout SecureKeyValueStore.Changes) throws {
        if let primary = try primary(), spaces.contains(primary) {
            stagePurgeOfPrimary(into: &changes)
        }
        let prefixes = spaces.map(Self.keyPrefix(for:))
        for key in try store.keys() where prefixes.contains(where: { key.hasPrefix($0) }) {
            changes.remove(key)
        }
    }

    /// Throws ``AuthenticationError/unownedEntries(_:)`` when `username` or `password` exist but no
    /// `credential.space` does: then they are not a credential any store wrote but the user's own entries,
    /// which are never overwritten (nor adopted: a later purge would delete them).
    public func checkPrimaryKeysAreOwned() throws {
        guard try recordedPrimary() == nil else { return }
        let unowned = try [Self.usernameKey, Self.passwordKey].filter { try store.contains($0) }
        guard unowned.isEmpty else { throw AuthenticationError.unownedEntries(unowned) }
    }

    /// Adds to `changes` the removal of the primary credential: `username`, `password` and `credential.space`.
    public func stagePurgeOfPrimary(into changes: inout SecureKeyValueStore.Changes) {
        changes.remove(Self.usernameKey)
        changes.remove(Self.passwordKey)
        changes.remove(Self.primarySpaceKey)
    }

    /// ``stagePurgeOfPrimary(into:)`` only when `credential.space` records a primary credential of `origin`'s
    /// server (scheme, host and port): what device registration removes when its registration is gone, so that
    /// it never deletes entries it did not write (the user's own `username`, another server's credential).
    /// Whether it did.
    @discardableResult
    public func stagePurgeOfPrimary(ifItBelongsTo origin: URL, into changes: inout SecureKeyValueStore.Changes) throws -> Bool {
        guard let recorded = try recordedPrimary(), recorded.origin == Origin(origin) else { return false }
        stagePurgeOfPrimary(into: &changes)
        return true
    }

    /// Adds to `changes` the expiry of `space`'s password (git's `password_expiry_utc`), or its removal (`nil`).
    public func setExpiry(_ expiry: String?, for space: ProtectionSpace, into changes: inout SecureKeyValueStore.Changes) throws {
        let key = Self.keyPrefix(for: space) + Self.expiryName
        if let expiry { try changes.put(expiry, forKey: key) } else { changes.remove(key) }
    }

    /// Adds to `changes` every extra of `space` as given: each non-`nil` one is written, each `nil` one removed
    /// (so storing a credential again without an expiry or a refresh token drops the old one).
    public func stageExtras(
        _ extras: CredentialExtras, for space: ProtectionSpace, into changes: inout SecureKeyValueStore.Changes
    ) throws {
        let prefix = Self.keyPrefix(for: space)
        try setExpiry(extras.passwordExpiryUTC, for: space, into: &changes)
        if let token = extras.oauthRefreshToken {
            try changes.put(token, forKey: prefix + Self.refreshTokenName)
        } else {
            changes.remove(prefix + Self.refreshTokenName)
        }
        if let type = extras.authType, let credential = extras.authCredential {
            try changes.put(type, forKey: prefix + Self.authTypeName)
            try changes.put(credential, forKey: prefix + Self.authCredentialName)
        } else {
            changes.remove(prefix + Self.authTypeName)
            changes.remove(prefix + Self.authCredentialName)
        }
    }
}

/// What a stored credential may carry besides username and password: the attributes of git's credential
/// protocol (git-credential(1)) that a helper keeps.
extension CredentialExtras {
    /// Whether `other` holds the same extras (secrets compared in constant time).
    public func isSame(as other: CredentialExtras) -> Bool {
        passwordExpiryUTC == other.passwordExpiryUTC && authType == other.authType
            && oauthRefreshToken == other.oauthRefreshToken && authCredential == other.authCredential
    }
}

public struct CredentialExtras {
    /// When the password expires, Unix seconds in UTC, as a decimal string (`password_expiry_utc`).
    public var passwordExpiryUTC: String?
    /// An OAuth refresh token that accompanies the password (`oauth_refresh_token`), as confidential as it.
    public var oauthRefreshToken: SecureBytes?
    /// The scheme of ``authCredential`` (`authtype`, e.g. `Bearer`); stored only together with it.
    public var authType: String?
    /// A pre-encoded credential (`credential`): `Authorization: <authType> <authCredential>`.
    public var authCredential: SecureBytes?

    public init(
        passwordExpiryUTC: String? = nil, oauthRefreshToken: SecureBytes? = nil, authType: String? = nil,
        authCredential: SecureBytes? = nil
    ) {
        self.passwordExpiryUTC = passwordExpiryUTC
        self.oauthRefreshToken = oauthRefreshToken
        self.authType = authType
        self.authCredential = authCredential
    }
}

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
/// Every credential lives under `credential/<space key>/`, out of the way of the user's own entries (a user's
/// `password` entry is never sent to a server, nor erased when a server rejects a stored credential):
///
/// | key                                   | value                                              |
/// |---------------------------------------|----------------------------------------------------|
/// | `credential/<space key>/username`     | the space's username (UTF-8)                       |
/// | `credential/<space key>/password`     | the space's password                               |
/// | `credential/<space key>/password_expiry_utc` | when the password expires, Unix seconds        |
/// | `credential/<space key>/oauth_refresh_token` | the OAuth refresh token sent with the password |
/// | `credential/<space key>/authtype`     | the scheme of a pre-encoded credential, e.g. `Bearer` |
/// | `credential/<space key>/credential`   | the pre-encoded credential itself                  |
/// | `credential/primary`                  | the **primary** space, as ``ProtectionSpace/key``: the one device registration uses |
///
/// `<space key>` is ``ProtectionSpace/key``: `scheme://host:port/realm` with the realm percent-encoded, so it
/// holds no `/` after the port, e.g. `credential/https://example.com:443/My%20Realm/username`.
///
/// Which space is primary: the one recorded in `credential/primary` (a value that is not a space key is an
/// error, ``AuthenticationError/malformedStoredSpace(entry:)``, never "no primary"), else the first space stored
/// in a vault that records none, or the `primarySpace` given to ``init(store:primarySpace:)`` when that one is
/// stored.
///
/// ## Earlier layouts, read and migrated
///
/// Vaults written before this layout keep the primary credential in the top-level entries of the SAP
/// mobile-services tutorials: `username`, `password`, and `credential.space` naming their space. Such a
/// credential is read where it is, and moved to `credential/<space key>/` (with `credential/primary`) by the
/// next write of this store, in the same update. A vault written by the tutorials' app (`username` and
/// `password` without `credential.space`) is read, and migrated, as the `primarySpace` an embedder declares.
/// Top-level `username`/`password` without `credential.space` and without a declared `primarySpace` are the
/// user's own entries: never sent anywhere, never moved, never erased.
///
/// Each store and each removal is **one** atomic write. Removing the primary credential leaves other keys (e.g.
/// `appcid`) alone.
///
/// Every method blocks (the vault's file I/O); call it from `async` code through `runBlocking`.
public final class VaultCredentialStore: CredentialStoring {
    private static let prefix = "credential/"
    private static let primaryKey = "credential/primary"
    private static let usernameName = "username"
    private static let passwordName = "password"
    private static let expiryName = "password_expiry_utc"
    private static let refreshTokenName = "oauth_refresh_token"
    private static let authTypeName = "authtype"
    private static let authCredentialName = "credential"
    /// The earlier layout's primary credential (read, and migrated by the next write).
    private static let legacyUsernameKey = "username"
    private static let legacyPasswordKey = "password"
    private static let legacySpaceKey = "credential.space"

    /// The key prefix of a space's own entries: `credential/<space key>/`.
    private static func keyPrefix(for space: ProtectionSpace) -> String { prefix + space.key + "/" }

    public let store: any KeyValueVault
    /// The space the tutorials' top-level `username`/`password` belong to when the vault does not record one.
    public let primarySpace: ProtectionSpace?
    /// Serialises read-modify-write in this process; the vault locks across processes.
    private let lock = Mutex<Void>(())

    public init(store: any KeyValueVault, primarySpace: ProtectionSpace? = nil) {
        self.store = store
        self.primarySpace = primarySpace
    }

    // MARK: - Reading

    /// The primary space: recorded in the vault (`credential/primary`, or an earlier layout's
    /// `credential.space`), else ``primarySpace`` when the vault holds its credential, else `nil`.
    ///
    /// - Throws: ``AuthenticationError/malformedStoredSpace(entry:)`` when the record is not a space key;
    ///   `VaultError`.
    public func primary() throws -> ProtectionSpace? {
        if let recorded = try recordedPrimary() { return recorded }
        if let primarySpace, try legacyPrimary() == primarySpace || store.contains(Self.keyPrefix(for: primarySpace) + Self.usernameName) {
            return primarySpace
        }
        return nil
    }

    /// The space recorded as primary (`credential/primary`, or an earlier layout's `credential.space`), or `nil`
    /// when none is recorded.
    ///
    /// - Throws: ``AuthenticationError/malformedStoredSpace(entry:)``; `VaultError`.
    public func recordedPrimary() throws -> ProtectionSpace? {
        if let recorded = try space(in: Self.primaryKey) { return recorded }
        return try space(in: Self.legacySpaceKey)
    }

    private func space(in key: String) throws -> ProtectionSpace? {
        guard let recorded = try store.getString(key) else { return nil }
        guard let space = ProtectionSpace(key: recorded) else {
            throw AuthenticationError.malformedStoredSpace(entry: key)
        }
        return space
    }

    /// The space whose credential an earlier layout keeps in the top-level `username`/`password`, or `nil`: the
    /// one `credential.space` names, else the declared ``primarySpace`` when `username` exists. Never once the
    /// vault has this layout's `credential/primary` (top-level entries are then the user's own).
    private func legacyPrimary() throws -> ProtectionSpace? {
        // The three entries in one request through the agent.
        let found = try store.entries([Self.primaryKey, Self.legacySpaceKey, Self.legacyUsernameKey])
        if found[0] != nil { return nil }
        if let value = found[1]?.value {
            guard let space = ProtectionSpace(key: try Self.text(value, of: Self.legacySpaceKey)) else {
                throw AuthenticationError.malformedStoredSpace(entry: Self.legacySpaceKey)
            }
            return space
        }
        if let primarySpace, found[2] != nil { return primarySpace }
        return nil
    }

    /// The primary space's username, or `nil`.
    public func primaryUsername() throws -> String? {
        if try legacyPrimary() != nil { return try store.getString(Self.legacyUsernameKey) }
        guard let primary = try primary() else { return nil }
        return try store.getString(Self.keyPrefix(for: primary) + Self.usernameName)
    }

    public func credential(for space: ProtectionSpace) throws -> Credential? {
        try lock.withLock { _ in
            if try legacyPrimary() == space {
                return try read(usernameKey: Self.legacyUsernameKey, passwordKey: Self.legacyPasswordKey)
            }
            let prefix = Self.keyPrefix(for: space)
            return try read(usernameKey: prefix + Self.usernameName, passwordKey: prefix + Self.passwordName)
        }
    }

    private func read(usernameKey: String, passwordKey: String) throws -> Credential? {
        // One request through the agent for both.
        let found = try store.entries([usernameKey, passwordKey])
        guard let username = try found[0]?.value.map({ try Self.text($0, of: usernameKey) }), let password = found[1]?.value
        else { return nil }
        return Credential(username: username, password: password)
    }

    /// `value` as text (as ``KeyValueVault/getString(_:)`` reads it).
    private static func text(_ value: SecureBytes, of key: String) throws -> String {
        guard let text = value.stringValue else { throw VaultError.typeMismatch(key: key, reason: "the value is not valid UTF-8") }
        return text
    }

    /// When the password of `space` expires, as git gave it (`password_expiry_utc`), or `nil`.
    public func expiry(for space: ProtectionSpace) throws -> String? {
        try store.getString(Self.keyPrefix(for: space) + Self.expiryName)
    }

    /// What `space`'s credential carries besides username and password (all `nil` when nothing is stored).
    public func extras(for space: ProtectionSpace) throws -> CredentialExtras {
        let prefix = Self.keyPrefix(for: space)
        let keys = [Self.expiryName, Self.refreshTokenName, Self.authTypeName, Self.authCredentialName].map { prefix + $0 }
        let found = try store.entries(keys).map { $0?.value }  // one request through the agent
        return CredentialExtras(
            passwordExpiryUTC: try found[0].map { try Self.text($0, of: keys[0]) },
            oauthRefreshToken: found[1],
            authType: try found[2].map { try Self.text($0, of: keys[2]) },
            authCredential: found[3])
    }

    /// When `space`'s entries were last written (its password's, else its pre-encoded credential's), or `nil`
    /// when it has neither.
    public func lastModified(of space: ProtectionSpace) throws -> Date? {
        let prefix = Self.keyPrefix(for: space)
        let found = try store.entries([Self.legacyPasswordKey, prefix + Self.passwordName, prefix + Self.authCredentialName])
        if let attributes = found[0]?.attributes, try legacyPrimary() == space { return attributes.modified }
        return (found[1] ?? found[2])?.attributes.modified
    }

    /// Every space with a credential: an earlier layout's primary one, each with a
    /// `credential/<space key>/username`, and each with only a pre-encoded `credential/<space key>/credential`.
    public func storedSpaces() throws -> [ProtectionSpace] {
        try lock.withLock { _ in
            var spaces: Set<ProtectionSpace> = []
            if let legacy = try legacyPrimary(), try store.contains(Self.legacyUsernameKey) { spaces.insert(legacy) }
            let keys = try store.keys()  // once: through the agent, every name of the vault
            for suffix in ["/" + Self.usernameName, "/" + Self.authCredentialName] {
                for key in keys where key.hasPrefix(Self.prefix) && key.hasSuffix(suffix) {
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
                usePrimary = true  // the first space stored in a vault that records none
            }
            var changes = SecureKeyValueStore.Changes()
            try stage(credential, for: space, asPrimary: usePrimary, into: &changes)
            try store.write(changes)
        }
    }

    /// Removes every entry of `space` under `credential/<space key>/` (and the record of the primary space when it
    /// is that one).
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

    /// Adds to `changes` the move of an earlier layout's primary credential (top-level `username`, `password`,
    /// `credential.space`) to `credential/<space key>/` and `credential/primary`. Every staging method does this
    /// first, so the next write of a credential migrates the vault. `skipping`: a space whose username and
    /// password the caller writes or removes itself (not copied, only the top-level entries removed).
    private func stageMigration(skipping: Set<ProtectionSpace> = [], into changes: inout SecureKeyValueStore.Changes) throws {
        guard let legacy = try legacyPrimary() else { return }
        // Each of the pair that exists moves (one alone too: nothing the login wrote is dropped on the way).
        let prefix = Self.keyPrefix(for: legacy)
        for (from, to) in [(Self.legacyUsernameKey, Self.usernameName), (Self.legacyPasswordKey, Self.passwordName)] {
            guard let value = try store.getBytes(from) else { continue }
            if !skipping.contains(legacy) { try changes.put(value, forKey: prefix + to) }
            changes.remove(from)
        }
        changes.remove(Self.legacySpaceKey)
        try changes.put(legacy.key, forKey: Self.primaryKey)
    }

    /// Adds to `changes` what stores `credential` for `space` under `credential/<space key>/`, migrating an
    /// earlier layout first; with `asPrimary`, `space` is recorded as the primary space (in `credential/primary`;
    /// the previous primary's credential stays where it is).
    public func stage(
        _ credential: Credential, for space: ProtectionSpace, asPrimary: Bool,
        into changes: inout SecureKeyValueStore.Changes
    ) throws {
        try stageMigration(skipping: [space], into: &changes)
        let prefix = Self.keyPrefix(for: space)
        try changes.put(credential.username, forKey: prefix + Self.usernameName)
        try changes.put(credential.password, forKey: prefix + Self.passwordName)
        if asPrimary { try changes.put(space.key, forKey: Self.primaryKey) }
    }

    /// Adds to `changes` the removal of the credentials of `spaces`: every key under `credential/<space key>/`
    /// (username, password, password_expiry_utc, …), and `credential/primary` when one of them is the primary.
    /// Nothing outside `credential/` is removed, except an earlier layout's primary credential of one of `spaces`.
    public func stageRemoval(of spaces: [ProtectionSpace], into changes: inout SecureKeyValueStore.Changes) throws {
        let primary = try primary()
        try stageMigration(skipping: Set(spaces), into: &changes)
        let prefixes = spaces.map(Self.keyPrefix(for:))
        for key in try store.keys() where prefixes.contains(where: { key.hasPrefix($0) }) {
            changes.remove(key)
        }
        if let primary, spaces.contains(primary) { changes.remove(Self.primaryKey) }
    }

    /// The primary credential (`credential/<primary key>/username` and `password`, and the record
    /// `credential/primary`) removed, only when it belongs to `origin`'s server (scheme, host and port): what
    /// device registration removes when its registration is gone, so that it never deletes entries it did not
    /// write (the user's own `password`, another server's credential). Whether it did.
    @discardableResult
    public func stagePurgeOfPrimary(ifItBelongsTo origin: URL, into changes: inout SecureKeyValueStore.Changes) throws -> Bool {
        guard let recorded = try recordedPrimary(), recorded.origin == Origin(origin) else { return false }
        try stageMigration(skipping: [recorded], into: &changes)
        let prefix = Self.keyPrefix(for: recorded)
        changes.remove(prefix + Self.usernameName)
        changes.remove(prefix + Self.passwordName)
        changes.remove(Self.primaryKey)
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

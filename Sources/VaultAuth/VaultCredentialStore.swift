import Foundation
import VaultCore

/// A ``CredentialStoring`` in the encrypted vault (``SecureKeyValueStore``).
///
/// ## Key layout
///
/// One protection space is the **primary** one: its credential is kept under the seeds' keys, which the
/// device-registration flow reads, and `credential.space` records which space they belong to:
///
/// | key                                   | value                                              |
/// |---------------------------------------|----------------------------------------------------|
/// | `username`                            | the primary space's username (UTF-8)               |
/// | `password`                            | the primary space's password (UTF-8)               |
/// | `credential.space`                    | the primary space, as ``ProtectionSpace/key``      |
/// | `credential/<space key>/username`     | the username of any other space                    |
/// | `credential/<space key>/password`     | the password of any other space                    |
///
/// `<space key>` is ``ProtectionSpace/key``: `scheme://host:port/realm` with the realm percent-encoded, so it
/// holds no `/` after the port, e.g. `credential/https://example.com:443/My%20Realm/username`.
///
/// Which space is primary:
/// 1. the one recorded in `credential.space`, when present;
/// 2. else the `primarySpace` given to ``init(store:primarySpace:)``; a vault written by the seeds (`username` and
///    `password` without `credential.space`) is read as that space's credential;
/// 3. else the first space stored while the vault has no `username` and no `password`.
/// An unscoped `username`/`password` (no `credential.space`, no `primarySpace`) is never sent anywhere: nobody
/// knows which server it belongs to.
///
/// Each store and each removal is **one** atomic ``SecureKeyValueStore/update(_:)`` (username, password and
/// `credential.space` change together). Removing the primary credential leaves other keys (e.g. `appcid`) alone.
///
/// The store must be open (``SecureKeyValueStore/open(with:)``) while this object is used.
public final class VaultCredentialStore: CredentialStoring {
    /// The key of the primary space's username (the seeds' key).
    public static let usernameKey = "username"
    /// The key of the primary space's password (the seeds' key).
    public static let passwordKey = "password"
    /// The key that records which space `username` and `password` belong to.
    public static let primarySpaceKey = "credential.space"

    /// The key prefix of a non-primary space's entries: `credential/<space key>/`.
    public static func keyPrefix(for space: ProtectionSpace) -> String { "credential/\(space.key)/" }

    public let store: SecureKeyValueStore
    /// The space to use for the seeds' `username`/`password` keys when the vault does not record one.
    public let primarySpace: ProtectionSpace?
    private let lock = NSLock()  // serialises read-modify-write in this process; the vault locks across processes

    public init(store: SecureKeyValueStore, primarySpace: ProtectionSpace? = nil) {
        self.store = store
        self.primarySpace = primarySpace
    }

    /// The primary space: recorded in the vault, else ``primarySpace`` if the vault has seed-style credentials.
    public func primary() throws -> ProtectionSpace? {
        if let recorded = try store.getString(Self.primarySpaceKey) {
            return ProtectionSpace(key: recorded)
        }
        if let primarySpace, try store.getString(Self.usernameKey) != nil {
            return primarySpace
        }
        return nil
    }

    public func credential(for space: ProtectionSpace) throws -> Credential? {
        try lock.withLock {
            if try primary() == space {
                return try read(usernameKey: Self.usernameKey, passwordKey: Self.passwordKey)
            }
            let prefix = Self.keyPrefix(for: space)
            return try read(usernameKey: prefix + "username", passwordKey: prefix + "password")
        }
    }

    private func read(usernameKey: String, passwordKey: String) throws -> Credential? {
        guard let username = try store.getString(usernameKey), let password = try store.getBytes(passwordKey)
        else { return nil }
        return Credential(username: username, password: password)
    }

    public func store(_ credential: Credential, for space: ProtectionSpace) throws {
        try lock.withLock {
            let recorded = try store.getString(Self.primarySpaceKey)
            let usePrimary: Bool
            if let recorded {
                usePrimary = recorded == space.key
            } else if let primarySpace {
                usePrimary = primarySpace == space
            } else {
                usePrimary = try store.getString(Self.usernameKey) == nil
                    && store.getBytes(Self.passwordKey) == nil
            }
            let prefix = Self.keyPrefix(for: space)
            try store.update { changes in
                if usePrimary {
                    try changes.put(credential.username, forKey: Self.usernameKey)
                    try changes.put(credential.password, forKey: Self.passwordKey)
                    try changes.put(space.key, forKey: Self.primarySpaceKey)
                    changes.remove(prefix + "username")
                    changes.remove(prefix + "password")
                } else {
                    try changes.put(credential.username, forKey: prefix + "username")
                    try changes.put(credential.password, forKey: prefix + "password")
                }
            }
        }
    }

    public func removeCredential(for space: ProtectionSpace) throws {
        try lock.withLock {
            let isPrimary = try primary() == space
            let prefix = Self.keyPrefix(for: space)
            try store.update { changes in
                if isPrimary {
                    changes.remove(Self.usernameKey)
                    changes.remove(Self.passwordKey)
                    changes.remove(Self.primarySpaceKey)
                }
                changes.remove(prefix + "username")
                changes.remove(prefix + "password")
            }
        }
    }

    public func storedSpaces() throws -> [ProtectionSpace] {
        try lock.withLock {
            var spaces: Set<ProtectionSpace> = []
            if let primary = try primary() { spaces.insert(primary) }
            for key in try store.keys() where key.hasPrefix("credential/") && key.hasSuffix("/username") {
                let spaceKey = key.dropFirst("credential/".count).dropLast("/username".count)
                if let space = ProtectionSpace(key: String(spaceKey)) { spaces.insert(space) }
            }
            return spaces.sorted { $0.key < $1.key }
        }
    }
}

import FoundationEssentials
import VaultCore
import VaultCredentials

/// docker's logins as one entry per registry (issue 35 §4): `docker/<registry>` (the server URL's host and port, as
/// docker gave them; ` (2)`, ` (3)`… when another spelling of the same registry has the name), with the fields
/// `server_url` (the `ServerURL` exactly as docker gave it: `get` and `list` answer it back), `username` and `secret`
/// (the one secret field).
///
/// Logins stored before, two entries each under `credential/<space key>/` (``VaultCredentialStore``, realm
/// `docker/<server URL>`), are read where they are and moved into their registry's entry by the next `store` of
/// that server URL, in the same write; `erase` and `vault logout` remove either. A version-1 vault has no fields:
/// it keeps the earlier layout.
package struct DockerRegistryEntries {
    package static let prefix = "docker/"
    static let serverURLField = "server_url", usernameField = "username", secretField = "secret"

    let vault: any KeyValueVault
    var legacy: VaultCredentialStore { VaultCredentialStore(store: vault) }

    package init(vault: any KeyValueVault) { self.vault = vault }

    /// A login as `list` answers it.
    struct Login: Equatable {
        var serverURL: String
        var username: String
    }

    /// Runs `fields` on a vault with fields, `earlier` on a version-1 vault (or one through the agent that answers so).
    private func withFields<R>(_ fields: () throws -> R, else earlier: () throws -> R) throws -> R {
        do {
            try vault.requireFields()
            return try fields()
        } catch VaultError.needsVersion2 {
            return try earlier()
        }
    }

    /// The entry holding `serverURL`'s login (that spelling exactly), with its non-secret fields.
    private func entry(for serverURL: String) throws -> EntryRecord? {
        try vault.search(prefix: Self.prefix, required: [(Self.serverURLField, Array(serverURL.utf8))]).first
    }

    /// The login of `serverURL`: its entry's, else one stored before (two entries), else `nil`.
    func credential(for serverURL: String, space: ProtectionSpace) throws -> Credential? {
        try withFields({
            if let found = try entry(for: serverURL), let record = try vault.record(of: found.name),
               let username = record.field(Self.usernameField)?.value.stringValue, let secret = record.field(Self.secretField)?.value {
                return Credential(username: username, password: secret)
            }
            return try legacy.credential(for: space)
        }, else: { try legacy.credential(for: space) })
    }

    /// Stores `credential` for `serverURL` in its registry's entry (made when it has none), and removes a login stored
    /// before for it, in one write.
    func store(_ credential: Credential, for serverURL: String, space: ProtectionSpace) throws {
        try withFields({
            let existing = try entry(for: serverURL)?.name
            let name = try existing ?? freeName(for: space)
            var changes: [DocumentChange] = existing == nil ? [.require(entry: name, exists: false)] : []
            changes += [
                .setField(entry: name, field: Self.serverURLField, value: SecureBytes(string: serverURL), secret: false),
                .setField(entry: name, field: Self.usernameField, value: SecureBytes(string: credential.username), secret: false),
                .setField(entry: name, field: Self.secretField, value: credential.password, secret: true),
            ]
            changes += try legacyRemoval(of: [space])
            try vault.apply(changes)
        }, else: {
            var changes = SecureKeyValueStore.Changes()
            try legacy.stage(credential, for: space, asPrimary: try legacy.primary() == space, into: &changes)
            try vault.write(changes)
        })
    }

    /// Removes the login of `serverURL` (its entry and one stored before); whether there was one.
    func erase(_ serverURL: String, space: ProtectionSpace) throws -> Bool {
        try withFields({
            let name = try entry(for: serverURL)?.name
            let hadLegacy = try legacy.credential(for: space) != nil
            guard name != nil || hadLegacy else { return false }
            let entry: [DocumentChange] = name.map { [.delete(entry: $0)] } ?? []
            try vault.apply(entry + (hadLegacy ? try legacyRemoval(of: [space]) : []))
            return true
        }, else: {
            guard try legacy.credential(for: space) != nil else { return false }
            try legacy.removeCredential(for: space)
            return true
        })
    }

    /// Every login: each registry entry's, and each stored before that no entry holds, by server URL.
    func logins() throws -> [Login] {
        var byURL: [String: String] = [:]
        for space in try legacy.storedSpaces() {
            guard let serverURL = DockerCredentialHelper.serverURL(of: space), let username = try legacy.credential(for: space)?.username
            else { continue }
            byURL[serverURL] = username
        }
        try withFields({
            for record in try vault.search(prefix: Self.prefix, required: []) {
                guard let serverURL = record.field(Self.serverURLField)?.value.stringValue,
                      let username = record.field(Self.usernameField)?.value.stringValue
                else { continue }
                byURL[serverURL] = username
            }
        }, else: {})
        return byURL.sorted { $0.key < $1.key }.map { Login(serverURL: $0.key, username: $0.value) }
    }

    /// Removes every registry entry whose server URL is on `origin` (`vault logout`), in one write with `changes`
    /// (the credentials of the earlier layout the caller removes); the spaces of the entries removed (realm
    /// `docker/<server URL>`, as the earlier layout named them).
    package func logout(of origin: Origin, with changes: SecureKeyValueStore.Changes) throws -> [ProtectionSpace] {
        try withFields({
            var removed: [ProtectionSpace] = [], batch: [DocumentChange] = []
            for record in try vault.search(prefix: Self.prefix, required: []) {
                guard let serverURL = record.field(Self.serverURLField)?.value.stringValue,
                      let space = try? DockerCredentialHelper.space(for: serverURL), space.origin == origin
                else { continue }
                removed.append(space)
                batch.append(.delete(entry: record.name))
            }
            batch += try changes.documentChanges()
            if !batch.isEmpty { try vault.apply(batch) }
            return removed
        }, else: {
            if !(try changes.documentChanges()).isEmpty { try vault.write(changes) }
            return []
        })
    }

    /// The removal of the logins of `spaces` stored before (two entries each), as document changes.
    private func legacyRemoval(of spaces: [ProtectionSpace]) throws -> [DocumentChange] {
        var removal = SecureKeyValueStore.Changes()
        try legacy.stageRemoval(of: spaces, into: &removal)
        return try removal.documentChanges()
    }

    /// `docker/<host[:port]>` of `space`'s server URL as docker spelled it, or the first of ` (2)`, ` (3)`… free.
    private func freeName(for space: ProtectionSpace) throws -> String {
        let serverURL = DockerCredentialHelper.serverURL(of: space) ?? space.origin.host
        let rest = serverURL.firstRange(of: "://").map { serverURL[$0.upperBound...] } ?? Substring(serverURL)
        let base = Self.prefix + rest.prefix { $0 != "/" }
        var name = base, number = 2
        while try vault.contains(name) {
            name = base + " (\(number))"
            number += 1
        }
        return name
    }
}

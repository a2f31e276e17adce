import Foundation
import Testing
import VaultCore
@testable import VaultAuth
import VaultAuthTesting

@Suite("VaultCredentialStore key layout")
struct VaultCredentialStoreTests {
    static let primary = ProtectionSpace(origin: Origin(scheme: "https", host: "hcpms-p1trial.example.com", port: 443), realm: "SAP")
    static let other = ProtectionSpace(origin: Origin(scheme: "https", host: "git.example.com", port: 8443), realm: "Git Realm/1")

    static let primaryPrefix = "credential/https://hcpms-p1trial.example.com:443/SAP/"
    static let otherPrefix = "credential/https://git.example.com:8443/Git%20Realm%2F1/"

    /// Issue 25 §4: every credential lives under `credential/<space key>/`; the first stored space is recorded as
    /// the primary one in `credential/primary`; nothing is written at the top level, where the user's entries are.
    @Test func everyCredentialLivesUnderItsSpaceAndTheFirstIsRecordedAsPrimary() throws {
        let directory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: directory)
        let store = VaultCredentialStore(store: vault)
        try store.store(Credential(username: "alice", password: "pw1"), for: Self.primary)
        try store.store(Credential(username: "bob", password: "pw2"), for: Self.other)

        #expect(try Set(vault.keys()) == [
            Self.primaryPrefix + "username", Self.primaryPrefix + "password", "credential/primary",
            Self.otherPrefix + "username", Self.otherPrefix + "password",
        ])
        #expect(try vault.getString("credential/primary") == "https://hcpms-p1trial.example.com:443/SAP")
        #expect(try store.primary() == Self.primary)
        #expect(try store.primaryUsername() == "alice")
        #expect(try store.credential(for: Self.other)?.username == "bob")
        #expect(password(of: try store.credential(for: Self.primary)) == "pw1")
        #expect(try store.storedSpaces() == [Self.other, Self.primary].sorted { $0.key < $1.key })

        // Survives closing and reopening the vault.
        vault.close()
        let reopened = try makeTestVault(in: directory)
        #expect(password(of: try VaultCredentialStore(store: reopened).credential(for: Self.other)) == "pw2")
    }

    /// The user's own `username` and `password` entries are never read as a credential, never overwritten,
    /// never removed, whatever the store does.
    @Test func theUsersOwnUsernameAndPasswordAreNeverTouched() throws {
        let directory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: directory)
        let store = VaultCredentialStore(store: vault)
        try store.store(Credential(username: "alice", password: "server-pw"), for: Self.primary)
        try vault.put("my-name", forKey: "username")
        try vault.put("my-own-password", forKey: "password")
        #expect(password(of: try store.credential(for: Self.primary)) == "server-pw")
        #expect(try store.primaryUsername() == "alice")
        try store.store(Credential(username: "alice", password: "new"), for: Self.primary)
        try store.removeCredential(for: Self.primary)
        var purge = SecureKeyValueStore.Changes()
        #expect(try !store.stagePurgeOfPrimary(ifItBelongsTo: URL(string: "https://hcpms-p1trial.example.com/x")!, into: &purge))
        #expect(try Set(vault.keys()) == ["username", "password"])
        #expect(try vault.getString("password") == "my-own-password")
        #expect(try store.credential(for: Self.primary) == nil)
        #expect(try store.primary() == nil)
    }

    @Test func replacingAndRemovingThePrimaryKeepsOtherEntries() throws {
        let directory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: directory)
        try vault.put("connection-id", forKey: "appcid")
        let store = VaultCredentialStore(store: vault)
        try store.store(Credential(username: "alice", password: "old"), for: Self.primary)
        try store.store(Credential(username: "alice", password: "new"), for: Self.primary)
        #expect(try vault.getString(Self.primaryPrefix + "password") == "new")
        try store.removeCredential(for: Self.primary)
        #expect(try Set(vault.keys()) == ["appcid"])
        #expect(try store.credential(for: Self.primary) == nil)
        try store.removeCredential(for: Self.primary)  // no error when absent
        try store.removeCredential(for: Self.other)
    }

    @Test func storingIsOneAtomicUpdate() throws {
        let directory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: directory)
        let store = VaultCredentialStore(store: vault)
        let before = try #require(vault.generation)
        try store.store(Credential(username: "alice", password: "pw"), for: Self.primary)
        #expect(vault.generation == before + 1)  // username, password and credential/primary in one write
        try store.store(Credential(username: "bob", password: "pw"), for: Self.other)
        #expect(vault.generation == before + 2)
        try store.removeCredential(for: Self.primary)
        #expect(vault.generation == before + 3)
    }

    /// A vault of the earlier layout (top-level `username`, `password`, `credential.space`) is read where it is,
    /// and moved under `credential/` by the next write of a credential, in that one write.
    @Test(arguments: ["store", "remove-other", "store-other"])
    func anEarlierLayoutIsReadThenMigratedByTheNextWrite(write: String) throws {
        let directory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: directory)
        try vault.update { changes in
            try changes.put("alice", forKey: "username")
            try changes.put("legacy-pw", forKey: "password")
            try changes.put(Self.primary.key, forKey: "credential.space")
            try changes.put("connection-id", forKey: "appcid")
        }
        let store = VaultCredentialStore(store: vault)
        #expect(try store.primary() == Self.primary)
        #expect(try store.primaryUsername() == "alice")
        #expect(password(of: try store.credential(for: Self.primary)) == "legacy-pw")
        #expect(try store.storedSpaces() == [Self.primary])

        let before = try #require(vault.generation)
        switch write {
        case "store": try store.store(Credential(username: "alice", password: "fresh"), for: Self.primary)
        case "remove-other": try store.removeCredential(for: Self.other)
        default: try store.store(Credential(username: "bob", password: "git"), for: Self.other)
        }
        #expect(vault.generation == before + 1)
        #expect(try !vault.contains("username") && !vault.contains("password") && !vault.contains("credential.space"))
        #expect(try vault.getString("credential/primary") == Self.primary.key)
        #expect(password(of: try store.credential(for: Self.primary)) == (write == "store" ? "fresh" : "legacy-pw"))
        #expect(try vault.getString(Self.primaryPrefix + "username") == "alice")
        #expect(try vault.getString("appcid") == "connection-id")
        #expect(try store.primary() == Self.primary)
        // From now on a top-level `password` is the user's own.
        try vault.put("mine", forKey: "password")
        #expect(password(of: try store.credential(for: Self.primary)) == (write == "store" ? "fresh" : "legacy-pw"))
    }

    @Test func seedWrittenVaultIsReadOnlyForTheConfiguredPrimarySpace() throws {
        let directory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: directory)
        try vault.put("alice", forKey: "username")
        try vault.put("seed-pw", forKey: "password")
        // Unscoped credentials are sent nowhere without a configured primary space, and never moved.
        let unscoped = VaultCredentialStore(store: vault)
        #expect(try unscoped.credential(for: Self.primary) == nil)
        #expect(try unscoped.storedSpaces().isEmpty)
        try unscoped.store(Credential(username: "bob", password: "x"), for: Self.other)
        #expect(try vault.getString("password") == "seed-pw")
        #expect(try vault.getString("username") == "alice")
        try unscoped.removeCredential(for: Self.other)

        // The tutorials' app declares them its server's: read, and migrated by its next write.
        let scoped = VaultCredentialStore(store: vault, primarySpace: Self.primary)
        #expect(password(of: try scoped.credential(for: Self.primary)) == "seed-pw")
        #expect(try scoped.primary() == Self.primary)
        try scoped.store(Credential(username: "alice", password: "fresh"), for: Self.primary)
        #expect(try Set(vault.keys()) == [Self.primaryPrefix + "username", Self.primaryPrefix + "password", "credential/primary"])
        #expect(password(of: try scoped.credential(for: Self.primary)) == "fresh")
    }

    @Test func authenticatorOnTheVaultStoresAfterAcceptanceAndErasesStale() async throws {
        let directory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: directory)
        let store = VaultCredentialStore(store: vault)
        let url = URL(string: "https://hcpms-p1trial.example.com/app")!
        let space = ProtectionSpace(url: url, realm: "fake")!
        let server = InMemoryBasicAuthServer(users: ["alice": "pw1"])
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "pw1")])
        _ = try await KeystoreAuthenticator(store: store, prompt: prompt).perform(HTTPRequest(url: url)) { server.respond($0) }
        #expect(try vault.getString("credential/\(space.key)/username") == "alice")
        #expect(try vault.getString("credential/primary") == space.key)
        try vault.put("my-own-password", forKey: "password")  // the user's own entry, after the login

        server.setPassword("pw2", for: "alice")
        await #expect(throws: AuthenticationError.storedCredentialRejected(space: space, username: "alice", erased: true)) {
            _ = try await KeystoreAuthenticator(store: store, prompt: nil).perform(HTTPRequest(url: url)) { server.respond($0) }
        }
        #expect(try vault.keys() == ["password"])
        #expect(try vault.getString("password") == "my-own-password")
    }

    @Test(arguments: ["credential/primary", "credential.space"])
    func malformedRecordedSpaceIsAnErrorNotNoPrimary(record: String) throws {
        let directory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: directory)
        try vault.update { changes in
            try changes.put("alice", forKey: "username")
            try changes.put("pw", forKey: "password")
            try changes.put("not a space", forKey: record)
        }
        let store = VaultCredentialStore(store: vault, primarySpace: Self.primary)
        #expect(throws: AuthenticationError.malformedStoredSpace(entry: record)) { try store.primary() }
        #expect(throws: AuthenticationError.malformedStoredSpace(entry: record)) {
            try store.store(Credential(username: "bob", password: "x"), for: Self.other)
        }
        #expect(try vault.getString("password") == "pw")  // nothing overwritten
    }

    /// What device registration does: the new server's credential becomes primary, together with the caller's
    /// entries, in one write; the previous primary's credential stays under its own keys.
    @Test func stagingAsPrimaryRecordsThePrimaryInTheCallersUpdate() throws {
        let directory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: directory)
        let store = VaultCredentialStore(store: vault)
        try store.store(Credential(username: "bob", password: "git-pw"), for: Self.other)  // the first: primary
        #expect(try store.primary() == Self.other)
        let before = try #require(vault.generation)
        var changes = SecureKeyValueStore.Changes()
        try store.stage(Credential(username: "alice", password: "ms-pw"), for: Self.primary, asPrimary: true, into: &changes)
        try changes.put("connection-id", forKey: "appcid")
        try vault.write(changes)
        #expect(vault.generation == before + 1)
        #expect(try store.primary() == Self.primary)
        #expect(try store.primaryUsername() == "alice")
        #expect(password(of: try store.credential(for: Self.other)) == "git-pw")
        #expect(try vault.getString(Self.otherPrefix + "username") == "bob")
        #expect(try vault.getString("appcid") == "connection-id")
    }

    /// What `vault logout` and the git helper's erase do: every key of the space (the expiry too); the 404 purge
    /// removes only the primary credential, and only for its own server.
    @Test func stagedRemovalAndPurge() throws {
        let directory = TemporaryDirectory(prefix: "vaultauth-tests")
        let vault = try makeTestVault(in: directory)
        try vault.put("connection-id", forKey: "appcid")
        let store = VaultCredentialStore(store: vault)
        try store.store(Credential(username: "alice", password: "pw1"), for: Self.primary)
        var changes = SecureKeyValueStore.Changes()
        try store.stage(Credential(username: "bob", password: "pw2"), for: Self.other, asPrimary: false, into: &changes)
        try store.setExpiry("1900000000", for: Self.other, into: &changes)
        try vault.write(changes)
        #expect(try store.expiry(for: Self.other) == "1900000000")

        try store.removeCredentials(of: [Self.other])
        #expect(try Set(vault.keys()) == ["appcid", Self.primaryPrefix + "username", Self.primaryPrefix + "password", "credential/primary"])

        var other = SecureKeyValueStore.Changes()
        #expect(try !store.stagePurgeOfPrimary(ifItBelongsTo: URL(string: "https://git.example.com:8443/")!, into: &other))
        var purge = SecureKeyValueStore.Changes()
        #expect(try store.stagePurgeOfPrimary(ifItBelongsTo: URL(string: "https://hcpms-p1trial.example.com/app")!, into: &purge))
        try vault.write(purge)
        #expect(try Set(vault.keys()) == ["appcid"])
    }
}

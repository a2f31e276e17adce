import Foundation
import Testing
import VaultCore
@testable import VaultAuth

@Suite("VaultCredentialStore key layout")
struct VaultCredentialStoreTests {
    static let primary = ProtectionSpace(origin: Origin(scheme: "https", host: "hcpms-p1trial.example.com", port: 443), realm: "SAP")
    static let other = ProtectionSpace(origin: Origin(scheme: "https", host: "git.example.com", port: 8443), realm: "Git Realm/1")

    @Test func firstStoredSpaceUsesTheSeedKeys() throws {
        let directory = try TemporaryDirectory()
        let vault = try makeTestVault(in: directory)
        let store = VaultCredentialStore(store: vault)
        try store.store(Credential(username: "alice", password: "pw1"), for: Self.primary)
        try store.store(Credential(username: "bob", password: "pw2"), for: Self.other)

        // What the device-registration flow reads.
        #expect(try vault.getString("username") == "alice")
        #expect(try vault.getString("password") == "pw1")
        #expect(try vault.getString("credential.space") == "https://hcpms-p1trial.example.com:443/SAP")
        #expect(try Set(vault.keys()) == [
            "username", "password", "credential.space",
            "credential/https://git.example.com:8443/Git%20Realm%2F1/username",
            "credential/https://git.example.com:8443/Git%20Realm%2F1/password",
        ])
        #expect(try store.credential(for: Self.other)?.username == "bob")
        #expect(password(of: try store.credential(for: Self.primary)) == "pw1")
        #expect(try store.storedSpaces() == [Self.other, Self.primary].sorted { $0.key < $1.key })

        // Survives closing and reopening the vault.
        vault.close()
        let reopened = try makeTestVault(in: directory)
        #expect(password(of: try VaultCredentialStore(store: reopened).credential(for: Self.other)) == "pw2")
    }

    @Test func replacingAndRemovingThePrimaryKeepsOtherEntries() throws {
        let directory = try TemporaryDirectory()
        let vault = try makeTestVault(in: directory)
        try vault.put("connection-id", forKey: "appcid")
        let store = VaultCredentialStore(store: vault)
        try store.store(Credential(username: "alice", password: "old"), for: Self.primary)
        try store.store(Credential(username: "alice", password: "new"), for: Self.primary)
        #expect(try vault.getString("password") == "new")
        try store.removeCredential(for: Self.primary)
        #expect(try Set(vault.keys()) == ["appcid"])
        #expect(try store.credential(for: Self.primary) == nil)
        try store.removeCredential(for: Self.primary)  // no error when absent
        try store.removeCredential(for: Self.other)
    }

    @Test func storingIsOneAtomicUpdate() throws {
        let directory = try TemporaryDirectory()
        let vault = try makeTestVault(in: directory)
        let store = VaultCredentialStore(store: vault)
        let before = try #require(vault.generation)
        try store.store(Credential(username: "alice", password: "pw"), for: Self.primary)
        #expect(vault.generation == before + 1)  // username, password and credential.space in one write
        try store.store(Credential(username: "bob", password: "pw"), for: Self.other)
        #expect(vault.generation == before + 2)
        try store.removeCredential(for: Self.primary)
        #expect(vault.generation == before + 3)
    }

    @Test func seedWrittenVaultIsReadOnlyForTheConfiguredPrimarySpace() throws {
        let directory = try TemporaryDirectory()
        let vault = try makeTestVault(in: directory)
        try vault.put("alice", forKey: "username")
        try vault.put("seed-pw", forKey: "password")
        // Unscoped credentials are sent nowhere without a configured primary space.
        let unscoped = VaultCredentialStore(store: vault)
        #expect(try unscoped.credential(for: Self.primary) == nil)
        #expect(try unscoped.storedSpaces().isEmpty)
        // A new space does not overwrite them.
        try unscoped.store(Credential(username: "bob", password: "x"), for: Self.other)
        #expect(try vault.getString("password") == "seed-pw")

        let scoped = VaultCredentialStore(store: vault, primarySpace: Self.primary)
        #expect(password(of: try scoped.credential(for: Self.primary)) == "seed-pw")
        #expect(try scoped.credential(for: Self.other)?.username == "bob")
        try scoped.store(Credential(username: "alice", password: "fresh"), for: Self.primary)
        #expect(try vault.getString("credential.space") == Self.primary.key)
        #expect(try vault.getString("password") == "fresh")
    }

    @Test func authenticatorOnTheVaultStoresAfterAcceptanceAndErasesStale() async throws {
        let directory = try TemporaryDirectory()
        let vault = try makeTestVault(in: directory)
        let store = VaultCredentialStore(store: vault)
        let url = URL(string: "https://hcpms-p1trial.example.com/app")!
        let space = ProtectionSpace(url: url, realm: "fake")!
        let server = FakeServer(users: ["alice": "pw1"])
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "pw1")])
        _ = try await KeystoreAuthenticator(store: store, prompt: prompt).perform(HTTPRequest(url: url)) { server.respond($0) }
        #expect(try vault.getString("username") == "alice")
        #expect(try vault.getString("credential.space") == space.key)

        server.setPassword("pw2", for: "alice")
        await #expect(throws: AuthenticationError.storedCredentialRejected(space: space, username: "alice", erased: true)) {
            _ = try await KeystoreAuthenticator(store: store, prompt: nil).perform(HTTPRequest(url: url)) { server.respond($0) }
        }
        #expect(try vault.keys().isEmpty)
    }

    @Test func malformedRecordedSpaceIsAnErrorNotNoPrimary() throws {
        let directory = try TemporaryDirectory()
        let vault = try makeTestVault(in: directory)
        try vault.update { changes in
            try changes.put("alice", forKey: "username")
            try changes.put("pw", forKey: "password")
            try changes.put("not a space", forKey: "credential.space")
        }
        let store = VaultCredentialStore(store: vault, primarySpace: Self.primary)
        #expect(throws: AuthenticationError.malformedStoredSpace(entry: "credential.space")) { try store.primary() }
        #expect(throws: AuthenticationError.malformedStoredSpace(entry: "credential.space")) {
            try store.credential(for: Self.primary)
        }
        #expect(throws: AuthenticationError.malformedStoredSpace(entry: "credential.space")) {
            try store.store(Credential(username: "bob", password: "x"), for: Self.other)
        }
        #expect(try vault.getString("password") == "pw")  // nothing overwritten
    }

    /// What device registration does: the new server's credential becomes primary and the previous primary moves
    /// to its own keys, together with the caller's entries, in one write.
    @Test func stagingAsPrimaryMovesThePreviousPrimaryInTheCallersUpdate() throws {
        let directory = try TemporaryDirectory()
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
        #expect(try vault.getString("username") == "alice")
        #expect(password(of: try store.credential(for: Self.other)) == "git-pw")
        #expect(try vault.getString("credential/\(Self.other.key)/username") == "bob")
        #expect(try vault.getString("appcid") == "connection-id")
    }

    /// What `vault logout` and the git helper's erase do: every key of the space (the expiry too), and the
    /// primary keys when it is the primary space; the 404 purge removes only the primary keys.
    @Test func stagedRemovalAndPurge() throws {
        let directory = try TemporaryDirectory()
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
        #expect(try Set(vault.keys()) == ["appcid", "username", "password", "credential.space"])

        var purge = SecureKeyValueStore.Changes()
        store.stagePurgeOfPrimary(into: &purge)
        try vault.write(purge)
        #expect(try Set(vault.keys()) == ["appcid"])
    }
}

import Synchronization
import VaultAuth

/// Reads stored credentials from the vault, but keeps a credential the server accepted in memory, so that the
/// registration can store it together with the `appcid` in one update. Erasing a rejected stored credential
/// goes to the vault (the authenticator's rule).
final class StagingCredentialStore: CredentialStoring {
    struct Entry: Sendable {
        let space: ProtectionSpace
        let credential: Credential
    }

    private struct State {
        var staged: Entry?  // accepted, typed by the user
        var lastRead: Entry?  // the stored one handed out (and so sent)
    }

    private let base: VaultCredentialStore
    private let state = Mutex(State())

    init(base: VaultCredentialStore) {
        self.base = base
    }

    /// The credential the request went out with last: the accepted typed one, else the stored one.
    var acceptedCredential: Entry? { state.withLock { $0.staged ?? $0.lastRead } }

    func credential(for space: ProtectionSpace) throws -> Credential? {
        if let staged = state.withLock({ $0.staged }), staged.space == space { return staged.credential }
        let credential = try base.credential(for: space)
        if let credential { state.withLock { $0.lastRead = Entry(space: space, credential: credential) } }
        return credential
    }

    func store(_ credential: Credential, for space: ProtectionSpace) throws {
        state.withLock { $0.staged = Entry(space: space, credential: credential) }
    }

    func removeCredential(for space: ProtectionSpace) throws {
        state.withLock { state in
            if state.lastRead?.space == space { state.lastRead = nil }
            if state.staged?.space == space { state.staged = nil }
        }
        try base.removeCredential(for: space)
    }

    func storedSpaces() throws -> [ProtectionSpace] {
        try base.storedSpaces()
    }
}

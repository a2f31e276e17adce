import Synchronization
import VaultCredentials

/// A ``VaultCredentials/CredentialStoring`` in process memory that counts calls, so tests can check exactly what an
/// authenticator did (as `HummingbirdTesting` ships Hummingbird's test doubles beside, not inside, the library).
public final class InMemoryCredentialStore: CredentialStoring {
    private struct State {
        var entries: [ProtectionSpace: Credential]
        var storeCount = 0
        var removeCount = 0
        var lookupCount = 0
    }

    private let state: Mutex<State>

    public init(_ initial: [ProtectionSpace: Credential] = [:]) {
        state = Mutex(State(entries: initial))
    }

    public func credential(for space: ProtectionSpace) throws -> Credential? {
        state.withLock { state in
            state.lookupCount += 1
            return state.entries[space]
        }
    }

    public func store(_ credential: Credential, for space: ProtectionSpace) throws {
        state.withLock { state in
            state.storeCount += 1
            state.entries[space] = credential
        }
    }

    public func removeCredential(for space: ProtectionSpace) throws {
        state.withLock { state in
            state.removeCount += 1
            state.entries[space] = nil
        }
    }

    public func storedSpaces() throws -> [ProtectionSpace] {
        state.withLock { state in state.entries.keys.sorted { $0.key < $1.key } }
    }

    /// How many times ``store(_:for:)`` was called.
    public var storeCount: Int { state.withLock { $0.storeCount } }
    /// How many times ``removeCredential(for:)`` was called.
    public var removeCount: Int { state.withLock { $0.removeCount } }
    /// How many times ``credential(for:)`` was called.
    public var lookupCount: Int { state.withLock { $0.lookupCount } }
}

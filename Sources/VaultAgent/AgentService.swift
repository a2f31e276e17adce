import VaultAge
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The agent's answers: one request in, one answer out (docs/AGENT.md, "Wire protocol"), on the vaults of a
/// ``KeyRing``. No socket: ``AgentListener`` reads the frames and sends what this returns, and the tests call it
/// directly.
final class AgentService: Sendable {
    /// What the service needs besides its key ring.
    struct Configuration: Sendable {
        /// The socket `status` names.
        var socketPath: String
        /// Whether an `unlock` whose flag asks for the test KDF gets it: only in an agent whose own environment
        /// has the test switch (the command line decides), never because a frame says so.
        var allowsInsecureKDFForTesting = false
        /// Where the vaults opened here keep their rollback records (`nil`: none).
        var rollbackProtection: RollbackProtection?
        /// How an error answer presents a failure to a client that does not know its case.
        var present: AgentServer.Present = { AgentFailure(describing: $0) }
        /// The time a merge of git's files is stamped with.
        var wallClock: any WallClock = SystemWallClock()

        init(socketPath: String) {
            self.socketPath = socketPath
        }
    }

    let ring: KeyRing
    let configuration: Configuration
    private let log: @Sendable (String) -> Void

    /// The longest idle and hard timeouts an unlock may ask for: a year.
    static let longestTimeoutSeconds: UInt64 = 366 * 86_400
    /// The longest file-lock wait an unlock may ask for, as `VAULT_LOCK_TIMEOUT`: an hour.
    static let longestLockTimeoutMilliseconds: UInt64 = 3_600_000

    init(ring: KeyRing, configuration: Configuration, log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.ring = ring
        self.configuration = configuration
        self.log = log
    }

    /// The answer to `request`, and whether the connection ends after it: a request of another protocol version
    /// gets a bare error in its terms (a status byte it cannot mistake for success, and our version) and no more.
    func answer(_ request: AgentWire.Message) -> (reply: AgentWire.Writer, endsConnection: Bool) {
        guard request.version == AgentWire.version else { return (AgentWire.Writer(kind: AgentStatus.error.rawValue), true) }
        return (respond(to: request).encode(), false)
    }

    /// The typed answer to the frame `message`: the wire is read here once, into a typed request (AgentRequest),
    /// and written once, from a typed response (AgentResponse); nothing below picks or writes fields.
    func respond(to message: AgentWire.Message) -> AgentResponse {
        do {
            return try respond(to: try AgentRequest(message))
        } catch AgentError.protocolError(let what) {
            // Here, what breaks the protocol is the request (the decoders say "protocol" on both sides).
            return failure(AgentError.badRequest(what))
        } catch {
            return failure(error)
        }
    }

    /// The answer to `request`.
    func respond(to request: AgentRequest) throws -> AgentResponse {
        do {
            switch request {
            case .status: return .status(status())
            case .unlock(let path, let unlock):
                try self.unlock(path, unlock)
                return .done
            case .lock(let path): return .existed(ring.lock(path))
            case .lockAll: return .count(ring.lockAll())
            case .mergeFiles(let ours, let theirs, let labels): return try mergeFiles(ours: ours, theirs: theirs, labels: labels)
            case .describeFile(let bytes, let label): return try describeFile(bytes, label: label)
            case .vault(let path, let request):
                // Every answer about a vault says whether it is held here: `locked` when not, so a client needs no
                // probe before its request.
                guard let store = ring.vault(at: path, touch: request.isActivity) else { return .locked }
                do {
                    return try perform(request, on: store)
                } catch VaultError.keyChanged {
                    // The passphrase changed elsewhere: the key held here is retired, so the vault is locked
                    // and the client asks for the new passphrase as for any locked vault.
                    _ = ring.lock(path, reason: "re-keyed elsewhere, locked")
                    return .locked
                }
            }
        } catch VaultError.notOpen {
            return .locked
        }
    }

    private func perform(_ request: AgentRequest.VaultRequest, on store: any KeyValueVault) throws -> AgentResponse {
        switch request {
        case .probe:
            // A passphrase change elsewhere retired the key held here (keyChanged: locked now, so the client takes
            // the passphrase path at once). Other failures of the file are the operation's to report.
            do { try store.reload() } catch let error as VaultError {
                if case .keyChanged = error { throw error }
            } catch {}
            return .done
        case .get(let name):
            try store.reload()
            return .value(try store.getBytes(name))
        case .list:
            try store.reload()
            return .listing(try store.listing().map { ($0.name, AgentResponse.Attributes($0.attributes)) })
        case .names:
            try store.reload()
            return .names(try store.keys())
        case .apply(.document(let changes)):
            // Every format version: a version-1 vault takes the changes its format can hold.
            try store.apply(changes)
            return .done
        case .apply(.formatOne(let changes)):
            // Only from a caller in this process (the wire always carries document changes).
            try store.write(changes)
            return .done
        case .remove(let name):
            return .existed(try store.remove(name))
        case .passwd(let passphrase):
            try store.changePassphrase(to: passphrase, parameters: nil)
            return .done
        case .entries(let names):
            try store.reload()
            return .entries(try store.entries(names).map { entry in entry.map { ($0.value, AgentResponse.Attributes($0.attributes)) } })
        case .records, .merge, .deleted, .search:
            return try performOnDocument(request, on: store)
        case .recipients(let recipients):
            return try perform(recipients, on: store)
        }
    }

    private func unlock(_ path: String, _ request: AgentRequest.Unlock) throws {
        let idleSeconds = request.idleSeconds, maxSeconds = request.maxSeconds
        guard (1...Self.longestTimeoutSeconds).contains(idleSeconds), (1...Self.longestTimeoutSeconds).contains(maxSeconds) else {
            throw AgentError.badRequest("idle and max must be 1 second to 366 days")
        }
        let idle = Double(idleSeconds), max = Double(maxSeconds)
        // The test KDF only for an agent whose own environment has the test switch: a frame's flag alone must
        // never let a production agent open a vault with parameters the CLI refuses.
        let testing = request.insecureKDFForTesting && configuration.allowsInsecureKDFForTesting
        var options = testing ? SecureKeyValueStore.Options.insecureForTesting : SecureKeyValueStore.Options()
        if let milliseconds = request.lockTimeoutMilliseconds {
            guard milliseconds <= Self.longestLockTimeoutMilliseconds else {
                throw AgentError.badRequest("a lock timeout of more than an hour")
            }
            options.lockTimeoutSeconds = Double(milliseconds) / 1000
        }
        options.rollbackProtection = configuration.rollbackProtection
        var kept: [any AgeStanzaIdentity] = []
        if let keptIdentities = request.keptIdentities {
            // The identities themselves (`vault unlock --identity`), one `AGE-SECRET-KEY-1…` (or, in an agent that
            // runs from vault-net, `AGE-SECRET-KEY-PQ-1…`) a line.
            let list: [any AgeStanzaIdentity]
            do throws(AgeError) {
                list = try AgeKeys.parseIdentityFile(keptIdentities)
            } catch .invalidIdentityLine(_, .unsupportedKeyType) {
                throw AgentError.badRequest("this agent cannot keep post-quantum identities (it runs from vault, not vault-net)")
            } catch {
                throw AgentError.badRequest("malformed identities")
            }
            ring.keep(list, idleSeconds: idle, maxSeconds: max, options: options)
            kept = list
        }
        // Either format version (VaultOpener): version 1's store, or version 2's document.
        let store: any KeyValueVault
        switch request.key {
        case .dataKey(let dataKey):
            guard dataKey.count == 32 else { throw AgentError.badRequest("a data key of \(dataKey.count) bytes") }
            store = try VaultOpener.open(path: path, options: options) { _ in .dataKey(dataKey) }
        case .passphrase(let passphrase):
            store = try VaultOpener.open(path: path, passphrase: passphrase, options: options)
        }
        // A merge (a sync through the agent) follows another copy's key change with the identities kept.
        if !kept.isEmpty { (store as? DocumentVault)?.setOtherKey(VaultRecipientStanza.followingKey(kept)) }
        ring.hold(store, at: path, idleSeconds: idle, maxSeconds: max)
        log("unlocked \(path) (idle \(Int(idle)) s, max \(Int(max)) s)")
    }

    private func status() -> AgentClient.Status {
        AgentClient.Status(
            pid: Int(getpid()), socketPath: configuration.socketPath,
            vaults: ring.status().map { .init(path: $0.path, idleSecondsLeft: Int($0.idleSecondsLeft), maxSecondsLeft: Int($0.maxSecondsLeft)) },
            // The identities it can keep (`vault unlock --identity`), by age stanza type: `mlkem768x25519` only when
            // it runs from vault-net (VaultAgePQ installed).
            identityTypes: AgeKeys.identityStanzaTypes)
    }

    /// An error answer: the presentation (`code`, `exit_code`, `message`, `hint`) and, for the library's own
    /// errors, the ``VaultError`` case and its arguments (``AgentErrorWire``).
    private func failure(_ error: any Error) -> AgentResponse {
        .failure(AgentResponse.Failure(
            presented: configuration.present(error),
            errorCase: (error as? VaultError).map { AgentErrorWire.encode($0) }))
    }
}

import Synchronization
import VaultSSH

/// The private keys the ssh-agent has parsed, per vault, entry and the entry's version (docs/SSH-AGENT.md, "What is
/// in memory"): a key is parsed on its first signature after an unlock and kept, its secret parts in guarded memory
/// (``SSHPrivateKey``), until its vault stops being held (any lock: ``KeyRing/onRelease(_:)`` calls ``drop(vault:)``)
/// or its entry changes or goes (``retain(_:)``, at each request that lists the keys).
package final class SSHKeyCache: Sendable {
    private struct Slot {
        let revision: SSHEntry.Revision
        let key: SSHPrivateKey
    }

    private struct State {
        /// Vault path → entry name → its parsed key.
        var vaults: [String: [String: Slot]] = [:]
        /// Bumped each time a vault is dropped: a parse that began before may not be kept after it.
        var generations: [String: UInt64] = [:]
        var parses = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// Where each vault's drops stand now; taken before a request looks the vaults up, handed to ``key(for:since:)``.
    package struct Mark: Sendable {
        fileprivate let generations: [String: UInt64]
    }

    package func mark() -> Mark { Mark(generations: state.withLock { $0.generations }) }

    /// The private key of `entry` (of the vault at its `vaultPath`): the one parsed before for this version of the
    /// entry, else parsed now and kept. `nil` when its vault was dropped (locked) since `mark`: nothing is kept then.
    package func key(for entry: SSHEntry, since mark: Mark) throws(SSHError) -> SSHPrivateKey? {
        let path = entry.vaultPath ?? ""
        let before = mark.generations[path] ?? 0
        let cached = state.withLock { state -> SSHPrivateKey?? in
            guard (state.generations[path] ?? 0) == before else { return .some(nil) }
            guard let slot = state.vaults[path]?[entry.name], slot.revision == entry.revision else { return nil }
            return .some(slot.key)
        }
        if let cached { return cached }
        let key = try entry.privateKey()
        return state.withLock { state -> SSHPrivateKey? in
            guard (state.generations[path] ?? 0) == before else { return nil }
            state.parses += 1
            state.vaults[path, default: [:]][entry.name] = Slot(revision: entry.revision, key: key)
            return key
        }
    }

    /// Drops every key of the vault at `path` (it is no longer held): their guarded regions are zeroed and freed.
    package func drop(vault path: String) {
        state.withLock { state in
            state.generations[path, default: 0] += 1
            state.vaults[path] = nil
        }
    }

    /// Drops the keys of entries not in `entries` as they are now (changed: another version; removed; or of a
    /// vault no longer listed).
    package func retain(_ entries: [SSHEntry]) {
        var current: [String: [String: SSHEntry.Revision]] = [:]
        for entry in entries { current[entry.vaultPath ?? "", default: [:]][entry.name] = entry.revision }
        state.withLock { state in
            for (path, slots) in state.vaults {
                let kept = slots.filter { current[path]?[$0.key] == $0.value.revision }
                state.vaults[path] = kept.isEmpty ? nil : kept
            }
        }
    }

    /// How many parsed keys are kept (tests: empty after a lock).
    package var count: Int { state.withLock { $0.vaults.values.reduce(0) { $0 + $1.count } } }

    /// How many parses were kept since the agent started (tests: one per key over many signatures).
    package var parses: Int { state.withLock { $0.parses } }
}

import Synchronization
import VaultAge
import VaultCore

/// What the agent holds: the open vaults, each with its idle and hard timeouts, and the age identities kept by
/// `vault unlock --identity`. Knows nothing of sockets or requests; its time is an ``AgentClock``'s.
///
/// - A vault locks `idle` seconds after the last activity on it and `max` seconds after it was unlocked, whichever
///   comes first; locking closes its store, which zeroes the key.
/// - What counts as activity is the caller's to say (``vault(at:touch:)``): the agent's status, its probe and
///   shell completion are not.
/// - Kept identities open, on demand, every vault that has a stanza for them, with their timeouts, until their
///   own limit or any lock.
package final class KeyRing: Sendable {
    package let clock: any AgentClock
    private let log: @Sendable (String) -> Void
    private let vaults = Mutex<[String: Held]>([:])
    private let identities = Mutex<Kept?>(nil)
    /// When something was last held, locked, kept or forgotten (or the ring made).
    private let changedAt: Mutex<Double>
    /// Told each vault's path when it stops being held (``onRelease(_:)``).
    private let releaseHandlers = Mutex<[@Sendable (String) -> Void]>([])

    private struct Held: Sendable {
        let store: any KeyValueVault
        let idleSeconds: Double
        let maxSeconds: Double
        let unlockedAt: Double
        var lastUse: Double

        /// When it locks unless used before.
        var expiry: Double { Swift.min(lastUse + idleSeconds, unlockedAt + maxSeconds) }

        func expired(at now: Double) -> Bool {
            now - lastUse >= idleSeconds || now - unlockedAt >= maxSeconds
        }
    }

    /// Identities kept until `until`, which open vaults with these timeouts and store options.
    private struct Kept: Sendable {
        let list: [any AgeStanzaIdentity]
        let idleSeconds: Double
        let maxSeconds: Double
        let until: Double
        let options: SecureKeyValueStore.Options
    }

    /// What ``status()`` says of one vault.
    struct Entry: Equatable, Sendable {
        let path: String
        let idleSecondsLeft: UInt64
        let maxSecondsLeft: UInt64
    }

    /// - Parameter log: one line per event (unlock, lock, expiry); never a secret.
    package init(clock: any AgentClock = BootClock(), log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.clock = clock
        self.log = log
        changedAt = Mutex(clock.now)
    }

    /// When the ring last changed: with nothing held, since when it has held nothing.
    package var lastChange: Double { changedAt.withLock { $0 } }

    /// Notes a change made at `time` (now by default: an expiry is dated when it was due, not when it was found).
    private func changed(at time: Double? = nil) {
        let time = time ?? clock.now
        changedAt.withLock { $0 = Swift.max($0, time) }
    }

    /// Calls `handler` with a vault's path each time that vault stops being held, right after its store is closed:
    /// locked by a request, by the ssh-agent's lock, by its idle or hard timeout (found by any request or the sweep),
    /// re-keyed elsewhere, replaced by a new unlock, or every vault at once. What keeps something derived from a
    /// vault (the ssh-agent's parsed keys) drops it then.
    package func onRelease(_ handler: @escaping @Sendable (String) -> Void) {
        releaseHandlers.withLock { $0.append(handler) }
    }

    /// Closes `store`, no longer held at `path`, and tells the release handlers.
    private func release(_ store: any KeyValueVault, at path: String) {
        store.close()
        for handler in releaseHandlers.withLock({ $0 }) { handler(path) }
    }

    /// Holds `store` as the vault at `path` from now on (a store held there before is closed).
    package func hold(_ store: any KeyValueVault, at path: String, idleSeconds: Double, maxSeconds: Double) {
        let now = clock.now
        let replaced = vaults.withLock {
            $0.updateValue(Held(store: store, idleSeconds: idleSeconds, maxSeconds: maxSeconds, unlockedAt: now, lastUse: now), forKey: path)
        }
        if let replaced { release(replaced.store, at: path) }
        changed()
    }

    /// Keeps `list` for `maxSeconds` (or until any lock): from now on a vault asked for by path that one of them
    /// opens is opened with `options` and held with these timeouts.
    func keep(_ list: [any AgeStanzaIdentity], idleSeconds: Double, maxSeconds: Double, options: SecureKeyValueStore.Options) {
        let kept = Kept(list: list, idleSeconds: idleSeconds, maxSeconds: maxSeconds, until: clock.now + maxSeconds, options: options)
        identities.withLock { $0 = kept }
        changed()
        log("keeping \(list.count) identit\(list.count == 1 ? "y" : "ies") (max \(Int(maxSeconds)) s)")
    }

    /// The open store of `path`, unless it is not held or has expired (then it is locked now); `touch` counts the
    /// request as activity. A vault not held is opened with a kept identity when one opens it.
    package func vault(at path: String, touch: Bool) -> (any KeyValueVault)? {
        let now = clock.now
        var expired: Held?
        let store: (any KeyValueVault)? = vaults.withLock { vaults in
            guard var vault = vaults[path] else { return nil }
            if vault.expired(at: now) {
                vaults[path] = nil
                expired = vault
                return nil
            }
            if touch {
                vault.lastUse = now
                vaults[path] = vault
            }
            return vault.store
        }
        if let expired {
            release(expired.store, at: path)
            changed(at: expired.expiry)
            log("locked \(path) (timeout)")
        }
        return store ?? openWithIdentity(path)
    }

    /// The vault at `path` opened with a kept identity, when one has a stanza in it: held from now on as after an
    /// unlock, until the identities' own limit at the latest. `nil` when none is kept (or they expired), or none
    /// opens it.
    private func openWithIdentity(_ path: String) -> (any KeyValueVault)? {
        let now = clock.now
        guard let kept = keptIdentities(at: now) else { return nil }
        guard let header = try? VaultOpener.header(path: path, options: kept.options),
              let dataKey = try? VaultRecipientStanza.dataKey(of: header, identities: kept.list, label: path),
              let store = try? VaultOpener.open(path: path, options: kept.options, key: { _ in .unwrapped(dataKey) })
        else { return nil }
        // A merge (a sync through the agent) follows another copy's key change with the same identities.
        (store as? DocumentVault)?.setOtherKey(VaultRecipientStanza.followingKey(kept.list))
        hold(store, at: path, idleSeconds: kept.idleSeconds, maxSeconds: Swift.min(kept.maxSeconds, kept.until - now))
        log("unlocked \(path) with a kept identity")
        return store
    }

    /// The version-2 vaults held (not expired), by path.
    package func documentVaults() -> [DocumentVault] {
        sweep()
        return vaults.withLock { vaults in vaults.keys.sorted().compactMap { vaults[$0]?.store as? DocumentVault } }
    }

    /// Locks every vault whose idle or hard timeout has passed, and forgets identities past their limit.
    package func sweep() {
        let now = clock.now
        let expired = vaults.withLock { vaults in
            let gone = vaults.filter { $0.value.expired(at: now) }
            for path in gone.keys { vaults[path] = nil }
            return gone
        }
        for (path, vault) in expired.sorted(by: { $0.key < $1.key }) {
            release(vault.store, at: path)
            log("locked \(path) (timeout)")
        }
        if let due = expired.values.map(\.expiry).max() { changed(at: due) }
        _ = keptIdentities(at: now)
    }

    /// The identities kept, unless their limit has passed (then they are forgotten now).
    private func keptIdentities(at now: Double) -> Kept? {
        var expiredAt: Double?
        let kept = identities.withLock { kept -> Kept? in
            if let current = kept, now >= current.until {
                kept = nil
                expiredAt = current.until
            }
            return kept
        }
        if let expiredAt {
            changed(at: expiredAt)
            log("forgot the kept identities (timeout)")
        }
        return kept
    }

    /// Locks the vault at `path`; whether it was held. Kept identities are forgotten too (they would open it again
    /// at the next request).
    func lock(_ path: String, reason: String = "locked") -> Bool {
        if identities.withLock({ kept in defer { kept = nil }; return kept != nil }) {
            changed()
            log("forgot the kept identities")
        }
        guard let vault = vaults.withLock({ $0.removeValue(forKey: path) }) else { return false }
        release(vault.store, at: path)
        changed()
        log("\(reason) \(path)")
        return true
    }

    /// Locks every vault and forgets the identities; how many vaults there were.
    package func lockAll() -> Int {
        identities.withLock { $0 = nil }
        let all = vaults.withLock { vaults in
            defer { vaults.removeAll() }
            return vaults
        }
        for (path, vault) in all.sorted(by: { $0.key < $1.key }) {
            release(vault.store, at: path)
            log("locked \(path)")
        }
        changed()
        return all.count
    }

    /// The vaults held, sorted by path, with the whole seconds left of each timeout (expired ones locked first).
    func status() -> [Entry] {
        sweep()
        let now = clock.now
        return vaults.withLock { $0.sorted { $0.key < $1.key } }.map { path, vault in
            Entry(path: path,
                  idleSecondsLeft: UInt64(Swift.max(0, (vault.idleSeconds - (now - vault.lastUse)).rounded(.down))),
                  maxSecondsLeft: UInt64(Swift.max(0, (vault.maxSeconds - (now - vault.unlockedAt)).rounded(.down))))
        }
    }

    /// Whether nothing is held: no vault unlocked, no identity kept (past their timeouts they count as gone).
    package var holdsNothing: Bool {
        sweep()
        return vaults.withLock { $0.isEmpty } && identities.withLock { $0 == nil }
    }
}

import CVaultSystem
import FoundationEssentials
import Synchronization
import VaultAge
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The agent: keeps the keys of unlocked vaults in this process and answers requests for their entries on a
/// Unix socket, so that no command asks for a passphrase until the vault locks again (docs/AGENT.md).
///
/// - Keys live only here, in the open ``SecureKeyValueStore``s (guarded memory); they never cross the socket.
///   The passphrase is dropped once the data key is unwrapped.
/// - Only our own user may connect (SO_PEERCRED); the socket's directory is ours and writable by no one else.
/// - A vault locks after `idle` seconds without an operation on its secrets, and `max` seconds after it was
///   unlocked, on `CLOCK_BOOTTIME` (which keeps counting through suspend); its key is zeroed then.
/// - Writes go through the store, with the same lock, re-read and atomic replace as any other writer; reads
///   re-read the file first, so what others wrote around the agent is seen.
public final class AgentServer: Sendable {
    /// How the agent's command line presents a failure to the client: code, exit code, message, hint.
    public typealias Describe = @Sendable (any Error) -> (code: String, exitCode: Int32, message: String, hint: String?)

    public let socketPath: String
    private let describe: Describe
    private let log: @Sendable (String) -> Void
    private let unlocked = Mutex<[String: Unlocked]>([:])
    /// The age identities kept by `vault unlock --identity` (until `until`, boot time), which open on demand every
    /// vault shared with them, with those timeouts and that KDF policy; forgotten by any lock.
    private let identities = Mutex<(list: [AgeIdentity], idle: Double, max: Double, until: Double, testing: Bool)?>(nil)
    private let stopPipe: (read: Int32, write: Int32)
    /// The connections being served, by descriptor, with the time of their last request.
    private let connections = Mutex<[Int32: Double]>([:])
    /// Bytes held for frames still arriving, over all connections.
    private let frameBudget = AgentWire.FrameBudget(byteCount: AgentServer.unreadFrameByteLimit)

    /// The most connections served at once; past it, the one idle longest is closed.
    public static let connectionLimit = 512
    /// The most bytes the agent holds for frames not yet complete, over all connections.
    public static let unreadFrameByteLimit = 320 << 20
    /// The longest idle and hard timeouts an unlock may ask for: a year. (The CLI checks its own options; this
    /// is the agent's own check of what reaches it.)
    public static let longestTimeoutSeconds: UInt64 = 366 * 86_400
    /// The longest file-lock wait an unlock may ask for, as `VAULT_LOCK_TIMEOUT`: an hour.
    public static let longestLockTimeoutMilliseconds: UInt64 = 3_600_000

    private struct Unlocked: Sendable {
        let store: any KeyValueVault
        let idleSeconds: Double
        let maxSeconds: Double
        let unlockedAt: Double
        var lastUse: Double

        func expired(at now: Double) -> Bool {
            now - lastUse >= idleSeconds || now - unlockedAt >= maxSeconds
        }
    }

    /// - Parameters:
    ///   - describe: turns a failure into what the client shows (the CLI's presentation of errors).
    ///   - log: one line per event (unlock, lock, expiry, refused peer); never a secret.
    public init(socketPath: String = AgentSocket.defaultPath, describe: @escaping Describe,
                log: @escaping @Sendable (String) -> Void) throws {
        self.socketPath = socketPath
        self.describe = describe
        self.log = log
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0, fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0 else { throw VaultError.io(operation: "cannot create a pipe", path: "", errno: errno) }
        stopPipe = (fds[0], fds[1])
    }

    /// Asks ``run()`` to return (one `write` to a pipe: safe from any thread).
    public func stop() {
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
    }

    /// Listens and serves until ``stop()``; then forgets every key and removes the socket.
    ///
    /// - Throws: ``VaultError/unsafePermissions(path:reason:hint:)`` for an unsafe socket directory;
    ///   ``AgentError/cannotStart(socket:reason:)`` when another agent already listens there.
    public func run() throws {
        try AgentSocket.checkDirectory(of: socketPath, create: true)
        // Nothing of the caller's working directory is held (a USB stick the unlock ran on must unmount).
        _ = chdir("/")
        // One descriptor per client: the hard limit, not the soft 1,024 a login session starts with.
        let descriptorLimit = vault_raise_open_files_limit()
        let listening: Int32?
        do {
            listening = try AgentSocket.connect(to: socketPath, timeoutSeconds: 1)
        } catch {
            // Something listens there but did not let us in within the second (an agent that is stopped, its
            // backlog full) or is not ours: its socket is never taken over (two agents would hold keys, and the
            // first one's exit would remove the second one's socket).
            throw AgentError.cannotStart(socket: socketPath, reason: "another agent listens there but does not answer (\(error))")
        }
        if let listening {
            close(listening)
            throw AgentError.cannotStart(socket: socketPath, reason: "another agent is running")
        }
        // A stale socket of an agent that was killed is removed; anything else at that path (a typo in
        // VAULT_AGENT_SOCK naming a key file) is never touched.
        try AgentSocket.checkReplaceable(socketPath)
        unlink(socketPath)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw VaultError.io(operation: "cannot create socket", path: socketPath, errno: errno) }
        defer { close(listener) }
        var address = try AgentSocket.socketAddress(socketPath)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw VaultError.io(operation: "cannot bind", path: socketPath, errno: errno) }
        // The socket this agent made: the only one it will ever remove, and the one it must still be reachable by.
        var made = stat()
        guard lstat(socketPath, &made) == 0 else { throw VaultError.io(operation: "cannot bind", path: socketPath, errno: errno) }
        let own = (device: made.st_dev, inode: made.st_ino)
        func socketIsOurs() -> Bool {
            var now = stat()
            return lstat(socketPath, &now) == 0 && now.st_dev == own.device && now.st_ino == own.inode
        }
        defer { if socketIsOurs() { unlink(socketPath) } }
        guard chmod(socketPath, 0o600) == 0, listen(listener, 64) == 0 else {
            throw VaultError.io(operation: "cannot listen on", path: socketPath, errno: errno)
        }
        log("listening on \(socketPath) (pid \(getpid()), \(descriptorLimit) descriptors)")
        var polled = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)]
        var lastSocketCheck = Posix.monotonicSeconds()
        while true {
            let ready = poll(&polled, 2, 250)
            sweep()
            // An agent whose socket was removed or replaced (its directory deleted at logout, another agent
            // started in its place) can never be reached again: it ends, and forgets its keys.
            let now = Posix.monotonicSeconds()
            if now - lastSocketCheck >= 1 {
                lastSocketCheck = now
                if !socketIsOurs() {
                    log("the socket \(socketPath) no longer leads here; stopping")
                    break
                }
            }
            if ready <= 0 { continue }
            if polled[1].revents != 0 { break }
            if polled[0].revents & Int16(POLLIN) != 0 {
                let connection = accept(listener, nil, nil)
                if connection >= 0 {
                    _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
                    admit(connection)
                } else if errno == EMFILE || errno == ENFILE {
                    // Out of descriptors: make room by closing the longest-idle client, and wait a little
                    // rather than spin on a listener that stays readable.
                    dropLongestIdle()
                    usleep(50_000)
                }
            }
        }
        let count = lockAll()
        log("stopping; forgot \(count) key(s)")
    }

    // MARK: Connections

    /// Serves `fd` on a thread of its own; past ``connectionLimit``, the client idle longest is let go first.
    private func admit(_ fd: Int32) {
        let count = connections.withLock { connections in
            connections[fd] = Posix.monotonicSeconds()
            return connections.count
        }
        if count > Self.connectionLimit { dropLongestIdle(sparing: fd) }
        serveInBackground(fd)
    }

    /// Shuts down the connection idle longest (its thread then sees the end of the stream and closes it).
    private func dropLongestIdle(sparing spared: Int32 = -1) {
        let idlest = connections.withLock { connections in
            connections.filter { $0.key != spared }.min { $0.value < $1.value }?.key
        }
        if let idlest {
            shutdown(idlest, Int32(SHUT_RDWR))
            log("closed the connection idle longest (too many clients)")
        }
    }

    private func serveInBackground(_ fd: Int32) {
        startDetachedThread { [self] in
            defer {
                connections.withLock { _ = $0.removeValue(forKey: fd) }
                close(fd)
            }
            var uid: UInt32 = 0
            guard vault_peer_uid(fd, &uid) == 0, uid == geteuid() else {
                log("refused a connection from uid \(uid)")
                return
            }
            AgentSocket.setTimeout(fd, seconds: 60)
            serve(fd)
        }
    }

    private func serve(_ fd: Int32) {
        while true {
            let request: AgentWire.Message
            do {
                guard let message = try AgentWire.receive(on: fd, budget: frameBudget) else { return }
                request = message
                connections.withLock { $0[fd] = Posix.monotonicSeconds() }
            } catch {
                return
            }
            guard request.version == AgentWire.version else {
                // Answer in the client's terms: a status byte it cannot mistake for success, and our version.
                let writer = AgentWire.Writer(kind: AgentStatus.error.rawValue)
                try? AgentWire.send(writer, on: fd)
                return
            }
            let response = handle(request)
            do { try AgentWire.send(response, on: fd) } catch { return }
        }
    }

    private func handle(_ request: AgentWire.Message) -> AgentWire.Writer {
        guard let operation = AgentOperation(rawValue: request.kind) else {
            return failure(AgentError.protocolError("unknown operation \(request.kind)"))
        }
        do {
            switch operation {
            case .status: return status()
            case .unlock: return try unlock(request)
            case .lock:
                let path = try text(request, .path)
                let reply = AgentWire.Writer(kind: AgentStatus.ok.rawValue)
                reply.field(.bool, lock(path, reason: "locked"))
                return reply
            case .lockAll:
                let reply = AgentWire.Writer(kind: AgentStatus.ok.rawValue)
                reply.field(.count, UInt64(lockAll()))
                return reply
            case .probe:
                let path = try text(request, .path)
                guard let store = store(for: path, touch: false) else { return locked() }
                // A passphrase change elsewhere retired the key held here: locked now, so the client takes the
                // passphrase path at once. (Other failures of the file are the operation's to report.)
                do { try store.reload() } catch VaultError.keyChanged {
                    _ = lock(path, reason: "re-keyed elsewhere, locked")
                    return locked()
                } catch {}
                return AgentWire.Writer(kind: AgentStatus.ok.rawValue)
            case .mergeFiles: return try mergeFiles(request)
            case .describeFile: return try describeFile(request)
            case .get, .list, .names, .write, .remove, .passwd, .records, .apply, .entries, .merge:
                let path = try text(request, .path)
                // Names asked with the flag set (shell completion, on every Tab) are not an activity.
                let touch = !(operation == .names && request.bool(.flags))
                guard let store = store(for: path, touch: touch) else { return locked() }
                do {
                    return try perform(operation, request, on: store)
                } catch VaultError.keyChanged {
                    // The passphrase changed elsewhere: the key held here is retired, so the vault is locked
                    // and the client asks for the new passphrase as for any locked vault.
                    _ = lock(path, reason: "re-keyed elsewhere, locked")
                    return locked()
                }
            }
        } catch VaultError.notOpen {
            return locked()
        } catch {
            return failure(error)
        }
    }

    private func perform(_ operation: AgentOperation, _ request: AgentWire.Message, on store: any KeyValueVault) throws -> AgentWire.Writer {
        let reply = AgentWire.Writer(kind: AgentStatus.ok.rawValue)
        switch operation {
        case .get:
            try store.reload()
            if let value = try store.getBytes(try text(request, .name)) { reply.field(.value, value) }
        case .list:
            try store.reload()
            let names = try store.keys()
            reply.reserve(names.reduce(0) { $0 + AgentWire.Writer.fieldSize($1.utf8.count) + 3 * AgentWire.Writer.fieldSize(8) })
            for name in names {
                guard let attributes = try store.attributes(forKey: name) else { continue }
                reply.field(.name, name)
                reply.field(.created, Int64((attributes.created.timeIntervalSince1970 * 1000).rounded()))
                reply.field(.modified, Int64((attributes.modified.timeIntervalSince1970 * 1000).rounded()))
                reply.field(.size, UInt64(attributes.byteCount))
            }
        case .names:
            try store.reload()
            let names = try store.keys()
            reply.reserve(names.reduce(0) { $0 + AgentWire.Writer.fieldSize($1.utf8.count) })
            for name in names { reply.field(.name, name) }
        case .write:
            try store.write(try AgentWire.changes(from: request))
        case .remove:
            reply.field(.bool, try store.remove(try text(request, .name)))
        case .passwd:
            try store.changePassphrase(to: try required(request.secret(.passphrase)), parameters: nil)
        case .records:
            let which: EntryVersions
            if request.bool(.flags) { which = .all }
            else if let number = request.number(.version) { which = .version(Int(clamping: number)) }
            else { which = .current }
            guard let document = store as? any DocumentEntries else {
                throw VaultError.needsVersion2(path: store.path)
            }
            try store.reload()
            if let records = try document.records(of: try text(request, .name), which) { AgentWire.encode(records, into: reply) }
        case .entries:
            try store.reload()
            let names = try request.fields.filter { $0.tag == AgentWire.Tag.name.rawValue }.map { field in
                guard let name = request.string(field.range) else { throw VaultError.invalidEntryName(reason: "the name is not valid UTF-8") }
                return name
            }
            for entry in try store.entries(names) {
                reply.field(.bool, entry != nil)
                guard let (value, attributes) = entry else { continue }
                reply.field(.created, Int64((attributes.created.timeIntervalSince1970 * 1000).rounded()))
                reply.field(.modified, Int64((attributes.modified.timeIntervalSince1970 * 1000).rounded()))
                reply.field(.size, UInt64(attributes.byteCount))
                if let value { reply.field(.value, value) }
            }
        case .merge:
            guard let document = store as? any DocumentEntries else { throw VaultError.needsVersion2(path: store.path) }
            guard let other = request.first(.value) else { throw AgentError.protocolError("a request without a required field") }
            let bytes = request.payload.withUnsafeBytes { Array($0[other]) }
            let report = try document.merge(
                bytes, label: try text(request, .source), dryRun: request.bool(.flags), otherPassphrase: request.secret(.passphrase))
            AgentWire.encode(report, into: reply)
        case .apply:
            guard let document = store as? any DocumentEntries else {
                throw VaultError.needsVersion2(path: store.path)
            }
            try document.apply(try AgentWire.documentChanges(from: request))
        default:
            throw AgentError.protocolError("not an operation on a vault")
        }
        return reply
    }

    /// The unlocked version-2 vault whose id the file `bytes` carries (whatever its path), or `nil`.
    private func vault(holding bytes: [UInt8], label: String) throws -> DocumentVault? {
        guard DocumentHeader.isVersion2(bytes) else { throw VaultError.needsVersion2(path: label) }
        // Only its id is read here (no KDF runs): any parameters do.
        let wanted = try DocumentHeader.parse(bytes, label: label, policy: .insecureForTesting).vaultID
        let candidates = unlocked.withLock { vaults in vaults.keys.sorted().compactMap { vaults[$0]?.store as? DocumentVault } }
        // Reloaded when it can be (a passphrase changed since), else as last opened: git rewrites a vault in its work tree
        // to older commits (a rebase checks out the upstream first), which the rollback record refuses to open; the
        // files git hands over are merged with the key held, and the vault's own file is neither read nor written.
        // A key that no longer opens the file (a passphrase changed since) is no key to merge with: that vault
        // counts as locked, and the driver says to unlock it.
        guard let vault = candidates.first(where: { candidate in
            do {
                try candidate.reload()
            } catch VaultError.keyChanged {
                return false
            } catch {}
            return candidate.vaultID == wanted
        }) else { return nil }
        _ = store(for: vault.path, touch: true)
        return vault
    }

    /// git's textconv: what a file of a vault unlocked here holds, never a value.
    private func describeFile(_ request: AgentWire.Message) throws -> AgentWire.Writer {
        guard let range = request.first(.value) else { throw AgentError.protocolError("a request without a required field") }
        let bytes = request.payload.withUnsafeBytes { Array($0[range]) }
        let label = request.string(.source) ?? "file"
        guard let vault = try vault(holding: bytes, label: label) else { return locked() }
        let reply = AgentWire.Writer(kind: AgentStatus.ok.rawValue)
        for line in try vault.describeFile(bytes, label: label) { reply.field(.message, line) }
        return reply
    }

    /// git's merge driver: two files of a vault unlocked here (by vault id, whatever its path), merged with its key.
    private func mergeFiles(_ request: AgentWire.Message) throws -> AgentWire.Writer {
        let files = request.fields.filter { $0.tag == AgentWire.Tag.value.rawValue }.map { field in
            request.payload.withUnsafeBytes { Array($0[field.range]) }
        }
        let labels = request.strings(.source)
        guard files.count == 2, labels.count == 2 else { throw AgentError.protocolError("a merge of two files needs two files") }
        guard let vault = try vault(holding: files[0], label: labels[0]) else { return locked() }
        let (merged, report) = try vault.mergeFiles(ours: files[0], theirs: files[1], labels: (labels[0], labels[1]), now: SystemWallClock().milliseconds())
        let reply = AgentWire.Writer(kind: AgentStatus.ok.rawValue)
        merged.withUnsafeBytes { reply.field(.value, $0) }
        AgentWire.encode(report, into: reply)
        return reply
    }

    private func unlock(_ request: AgentWire.Message) throws -> AgentWire.Writer {
        let path = try text(request, .path)
        // A passphrase, or a data key the client unwrapped with an age identity (version 2 only).
        let dataKey = request.secret(.dataKey)
        let passphrase = dataKey == nil ? try required(request.secret(.passphrase)) : nil
        let idleSeconds = try required(request.number(.idleSeconds))
        let maxSeconds = try required(request.number(.maxSeconds))
        guard (1...Self.longestTimeoutSeconds).contains(idleSeconds), (1...Self.longestTimeoutSeconds).contains(maxSeconds) else {
            throw AgentError.protocolError("idle and max must be 1 second to 366 days")
        }
        let idle = Double(idleSeconds), max = Double(maxSeconds)
        // The test KDF only for an agent whose own environment has the test switch: a frame's flag alone must
        // never let a production agent open a vault with parameters the CLI refuses.
        let testing = request.bool(.flags) && Posix.environment("VAULT_TESTING_INSECURE_KDF") == "1"
        var options = testing ? SecureKeyValueStore.Options.insecureForTesting : SecureKeyValueStore.Options()
        if let milliseconds = request.number(.lockTimeoutMilliseconds) {
            guard milliseconds <= Self.longestLockTimeoutMilliseconds else {
                throw AgentError.protocolError("a lock timeout of more than an hour")
            }
            options.lockTimeoutSeconds = Double(milliseconds) / 1000
        }
        options.rollbackProtection = .standard
        // Either format version (VaultOpener): version 1's store, or version 2's document.
        if let kept = request.secret(.value) {
            // The identities themselves (`vault unlock --identity`), one `AGE-SECRET-KEY-1…` a line.
            guard let list = try? AgeIdentity.parseIdentityFile(kept) else { throw AgentError.protocolError("malformed identities") }
            let until = Posix.bootTimeSeconds() + max
            identities.withLock { $0 = (list, idle, max, until, testing) }
            log("keeping \(list.count) identit\(list.count == 1 ? "y" : "ies") (max \(Int(max)) s)")
        }
        let store: any KeyValueVault
        if let dataKey {
            guard dataKey.count == 32 else { throw AgentError.protocolError("a data key of \(dataKey.count) bytes") }
            store = try VaultOpener.open(path: path, options: options) { _ in .dataKey(dataKey) }
        } else {
            store = try VaultOpener.open(path: path, passphrase: passphrase!, options: options)
        }
        let now = Posix.bootTimeSeconds()
        let replaced = unlocked.withLock { $0.updateValue(Unlocked(store: store, idleSeconds: idle, maxSeconds: max, unlockedAt: now, lastUse: now), forKey: path) }
        replaced?.store.close()
        log("unlocked \(path) (idle \(Int(idle)) s, max \(Int(max)) s)")
        return AgentWire.Writer(kind: AgentStatus.ok.rawValue)
    }

    private func status() -> AgentWire.Writer {
        let now = Posix.bootTimeSeconds()
        sweep()
        let reply = AgentWire.Writer(kind: AgentStatus.ok.rawValue)
        reply.field(.pid, UInt64(getpid()))
        reply.field(.socket, socketPath)
        let entries = unlocked.withLock { $0.sorted { $0.key < $1.key } }
        for (path, vault) in entries {
            reply.field(.path, path)
            reply.field(.idleLeft, UInt64(Swift.max(0, (vault.idleSeconds - (now - vault.lastUse)).rounded(.down))))
            reply.field(.maxLeft, UInt64(Swift.max(0, (vault.maxSeconds - (now - vault.unlockedAt)).rounded(.down))))
        }
        return reply
    }

    // MARK: Keys

    /// The open store of `path`, unless it is not unlocked or has expired (then it is locked now); `touch`
    /// counts the request as activity.
    private func store(for path: String, touch: Bool) -> (any KeyValueVault)? {
        let now = Posix.bootTimeSeconds()
        var expired: (any KeyValueVault)?
        let store: (any KeyValueVault)? = unlocked.withLock { vaults in
            guard var vault = vaults[path] else { return nil }
            if vault.expired(at: now) {
                vaults[path] = nil
                expired = vault.store
                return nil
            }
            if touch {
                vault.lastUse = now
                vaults[path] = vault
            }
            return vault.store
        }
        if let expired {
            expired.close()
            log("locked \(path) (timeout)")
        }
        return store ?? openWithIdentity(path)
    }

    /// The vault at `path` opened with an identity kept here (`vault unlock --identity`), when one has a stanza in it:
    /// held from now on as after an unlock. `nil` when none is kept (or it expired), or none opens it.
    private func openWithIdentity(_ path: String) -> (any KeyValueVault)? {
        let now = Posix.bootTimeSeconds()
        guard let held = identities.withLock({ kept -> (list: [AgeIdentity], idle: Double, max: Double, until: Double, testing: Bool)? in
            if let current = kept, now >= current.until { kept = nil }
            return kept
        }) else { return nil }
        var options = held.testing ? SecureKeyValueStore.Options.insecureForTesting : SecureKeyValueStore.Options()
        options.rollbackProtection = .standard
        guard let header = try? VaultOpener.header(path: path, options: options),
              let dataKey = try? VaultRecipientStanza.dataKey(of: header, identities: held.list, label: path),
              let store = try? VaultOpener.open(path: path, options: options, key: { _ in .unwrapped(dataKey) })
        else { return nil }
        let max = Swift.min(held.max, held.until - now)
        let replaced = unlocked.withLock {
            $0.updateValue(Unlocked(store: store, idleSeconds: held.idle, maxSeconds: max, unlockedAt: now, lastUse: now), forKey: path)
        }
        replaced?.store.close()
        log("unlocked \(path) with a kept identity")
        return store
    }

    /// Locks every vault whose idle or hard timeout has passed.
    private func sweep() {
        let now = Posix.bootTimeSeconds()
        let expired = unlocked.withLock { vaults in
            let gone = vaults.filter { $0.value.expired(at: now) }
            for path in gone.keys { vaults[path] = nil }
            return gone
        }
        for (path, vault) in expired {
            vault.store.close()
            log("locked \(path) (timeout)")
        }
    }

    private func lock(_ path: String, reason: String) -> Bool {
        // A kept identity would open the vault again at the next request: any lock forgets it.
        if identities.withLock({ kept in defer { kept = nil }; return kept != nil }) { log("forgot the kept identities") }
        guard let vault = unlocked.withLock({ $0.removeValue(forKey: path) }) else { return false }
        vault.store.close()
        log("\(reason) \(path)")
        return true
    }

    private func lockAll() -> Int {
        identities.withLock { $0 = nil }
        let all = unlocked.withLock { vaults in
            defer { vaults.removeAll() }
            return vaults
        }
        for (path, vault) in all {
            vault.store.close()
            log("locked \(path)")
        }
        return all.count
    }

    // MARK: Answers

    private func locked() -> AgentWire.Writer { AgentWire.Writer(kind: AgentStatus.locked.rawValue) }

    private func failure(_ error: any Error) -> AgentWire.Writer {
        let (code, exitCode, message, hint) = describe(error)
        let reply = AgentWire.Writer(kind: AgentStatus.error.rawValue)
        reply.field(.code, code)
        reply.field(.exitCode, UInt64(UInt32(bitPattern: exitCode)))
        reply.field(.message, message)
        if let hint { reply.field(.hint, hint) }
        if let error = error as? VaultError {
            let (name, arguments) = AgentErrorWire.encode(error)
            reply.field(.errorCase, name)
            for argument in arguments { reply.field(.argument, argument) }
        }
        return reply
    }

    /// A text field that must be there and be valid UTF-8 (a name with invalid bytes is refused, never made
    /// into another name by U+FFFD).
    private func text(_ request: AgentWire.Message, _ tag: AgentWire.Tag) throws -> String {
        guard let range = request.first(tag) else { throw AgentError.protocolError("a request without a required field") }
        guard let text = request.string(range) else { throw VaultError.invalidEntryName(reason: "the name is not valid UTF-8") }
        return text
    }

    private func required<T>(_ value: T?) throws -> T {
        guard let value else { throw AgentError.protocolError("a request without a required field") }
        return value
    }
}

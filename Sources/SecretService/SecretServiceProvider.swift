import FoundationEssentials
import Glibc
import VaultCore

/// `org.freedesktop.secrets` on the session bus (Secret Service API 0.2, docs/SECRET-SERVICE.md), served from the
/// vaults the agent holds: the objects, their methods and properties, sessions, prompts and signals. One thread: a
/// call is answered before the next is read, and a prompt's wait is a look at the agent between calls.
public final class SecretServiceProvider {
    static let root = "/org/freedesktop/secrets"
    static let service = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"
    static let sessionInterface = "org.freedesktop.Secret.Session"
    static let promptInterface = "org.freedesktop.Secret.Prompt"
    static let properties = "org.freedesktop.DBus.Properties"

    let bus: DBusConnection
    let store: SecretStore
    /// Whether `plain` sessions are offered (the bus is this user's own).
    let plainAllowed: Bool
    let log: (String) -> Void
    var sessions: [String: SecretSession] = [:]
    var prompts: [String: Prompt] = [:]
    /// The collections whose vaults the agent held at the last look (``watchAgent(now:)``).
    var unlocked: Set<String> = []
    /// What clients were last told of each collection (``publishChanges()``).
    var shown: [String: Shown] = [:]
    private var lastLook = 0.0
    private var counter = 0
    private var nameLost = false

    /// What asks for a passphrase when a prompt runs (`nil`: nothing; a prompt waits for `vault unlock`).
    let passphraseProgram: PassphraseProgram?
    /// Unlocks a vault (its path) in the agent with a passphrase; throws ``VaultError/wrongPassphrase(path:)`` for a
    /// wrong one.
    let unlockVault: (String, SecureBytes) throws -> Void

    /// An `Unlock` waiting for its vaults: `vault unlock` elsewhere, or the passphrase program once it runs.
    struct Prompt {
        let owner: String
        let collections: [SecretCollection]
        let objects: [String]
        var started = false
        /// The passphrase program asking now, for `asking`; `attempt` of 3.
        var question: PassphraseQuestion?
        var asking: SecretCollection?
        var attempt = 0
    }

    /// Connects to the session bus and owns `org.freedesktop.secrets` (taking it over with `replace`), serving the
    /// vaults at `vaultPaths` (the first is the `default` collection) through the agent at `socketPath`. A prompt
    /// asks with `passphraseProgram` when there is one and unlocks with `unlockVault`.
    public init(
        vaultPaths: [String], socketPath: String, replace: Bool, passphraseProgram: PassphraseProgram? = nil,
        unlockVault: @escaping (String, SecureBytes) throws -> Void = { _, _ in }, log: @escaping (String) -> Void
    ) throws(SecretServiceError) {
        bus = try DBusConnection()
        store = SecretStore(vaultPaths: vaultPaths, socketPath: socketPath)
        plainAllowed = bus.isThisUsersOwnBus
        self.passphraseProgram = passphraseProgram
        self.unlockVault = unlockVault
        self.log = log
        let context = Unmanaged.passUnretained(self).toOpaque()
        try bus.serve(below: Self.root, context: context) { message, context, _ in
            guard let message, let context else { return 0 }
            return Unmanaged<SecretServiceProvider>.fromOpaque(context).takeUnretainedValue().handle(DBusReader(message))
        }
        try bus.watchBus("NameLost", context: context) { message, context, _ in
            guard let message, let context else { return 0 }
            let provider = Unmanaged<SecretServiceProvider>.fromOpaque(context).takeUnretainedValue()
            if (try? DBusReader(message).string()) == "org.freedesktop.secrets" { provider.nameLost = true }
            return 0
        }
        // A client that leaves (most never call Close) takes its sessions and prompts with it.
        try bus.watchBus("NameOwnerChanged", context: context) { message, context, _ in
            guard let message, let context else { return 0 }
            let reader = DBusReader(message)
            guard let name = try? reader.string(), (try? reader.string()) != nil, (try? reader.string()) == "", name.hasPrefix(":") else { return 0 }
            Unmanaged<SecretServiceProvider>.fromOpaque(context).takeUnretainedValue().forget(client: name)
            return 0
        }
        try bus.requestName("org.freedesktop.secrets", replace: replace)
        watchAgent(now: true)
        log("serving org.freedesktop.secrets: " + store.collections.map { "\($0.path) (\($0.vaultPath))" }.joined(separator: ", "))
    }

    /// Serves until the bus connection ends or another provider takes the name (`--replace`); `shouldStop` is
    /// asked between calls (a signal handler's flag).
    public func run(until shouldStop: () -> Bool) throws(SecretServiceError) {
        defer {
            for prompt in prompts.values { prompt.question?.cancel() }
        }
        while !shouldStop() {
            // A passphrase program's answer is looked at between calls: more often while one runs.
            try bus.step(waitingAtMost: prompts.values.contains { $0.question != nil } ? 50_000 : 200_000)
            if nameLost {
                log("another provider took org.freedesktop.secrets; stopping")
                return
            }
            watchAgent()
            hearAnswers()
        }
    }

    /// Looks at the agent (twice a second, or `now`): a collection whose vault was unlocked or locked since the
    /// last look (`vault unlock` or `vault lock` anywhere, a timeout) gets its index refreshed from the unlocked
    /// vault, and the prompts waiting for it complete.
    func watchAgent(now: Bool = false) {
        let time = Posix.monotonicSeconds()
        guard now || time - lastLook >= 0.5 else { return }
        lastLook = time
        let current = store.unlockedCollections()
        for collection in store.collections where current.contains(collection.id) != unlocked.contains(collection.id) {
            let isUnlocked = current.contains(collection.id)
            if isUnlocked { _ = try? store.items(in: collection, matching: []) }
            log("\(collection.path) \(isUnlocked ? "unlocked" : "locked")")
        }
        unlocked = current
        completePrompts()
        publishChanges()
    }

    /// Drops what the client `name` (a unique bus name) opened.
    func forget(client name: String) {
        sessions = sessions.filter { $0.value.owner != name }
        for (path, prompt) in prompts where prompt.owner == name {
            prompt.question?.cancel()
            prompts[path] = nil
        }
    }

    func nextPath(_ kind: String) -> String {
        counter += 1
        return "\(Self.root)/\(kind)/\(counter)"
    }

    // MARK: Dispatch

    /// Answers one method call; 1 when answered, 0 for what is not this provider's (sd-bus answers that).
    func handle(_ call: DBusReader) -> Int32 {
        defer { publishChanges() }
        let path = call.path, interface = call.interface, member = call.member
        if ["CreateItem", "SetSecret", "Set"].contains(member) { call.markSensitive() }
        do {
            if interface == "org.freedesktop.DBus.Introspectable" {
                guard member == "Introspect", let xml = introspection(of: path) else { return 0 }
                try DBusConnection.reply(to: call.message) { try $0.string(xml) }
                return 1
            }
            if interface == Self.properties {
                try handleProperties(call)
                return 1
            }
            if path == Self.root {
                guard interface == Self.service || interface.isEmpty else { throw SecretServiceError.unknownMethod("no \(interface) here") }
                try handleService(call)
            } else if let collection = store.collection(at: path) {
                guard interface == Self.collectionInterface || interface.isEmpty else { throw SecretServiceError.unknownMethod("no \(interface) here") }
                try handleCollection(call, collection)
            } else if store.itemAddress(path) != nil {
                guard interface == Self.itemInterface || interface.isEmpty else { throw SecretServiceError.unknownMethod("no \(interface) here") }
                try handleItem(call)
            } else if path.hasPrefix(Self.root + "/session/") {
                guard member == "Close", let session = sessions[path], session.owner == call.sender else {
                    throw SecretServiceError.noSuchObject("no such session: \(path)")
                }
                sessions[path] = nil
                try DBusConnection.reply(to: call.message) { _ in }
            } else if path.hasPrefix(Self.root + "/prompt/") {
                try handlePrompt(call)
            } else {
                return 0
            }
        } catch let error as SecretServiceError {
            if case .failed = error { log("\(member) on \(path): \(error)") }
            DBusConnection.reply(to: call.message, error: error)
        } catch {
            DBusConnection.reply(to: call.message, error: .failed("\(error)"))
        }
        return 1
    }

    static func requireSignature(_ call: DBusReader, _ signature: String) throws(SecretServiceError) {
        guard call.hasSignature(signature) else {
            throw .invalidArguments("\(call.member) takes (\(signature))")
        }
    }

    // MARK: Service

    private func handleService(_ call: DBusReader) throws(SecretServiceError) {
        switch call.member {
        case "OpenSession":
            try Self.requireSignature(call, "sv")
            let algorithm = try call.string()
            let path = nextPath("session")
            switch algorithm {
            case "plain":
                guard plainAllowed else {
                    throw .notSupported("plain sessions are offered only on a bus of this user's own; use \(SecretSession.dhAlgorithm)")
                }
                try call.skip("v")
                sessions[path] = SecretSession(path: path, owner: call.sender, kind: .plain)
                try DBusConnection.reply(to: call.message) { reply in
                    try reply.variant("s") { try reply.string("") }
                    try reply.string(path, "o")
                }
            case SecretSession.dhAlgorithm:
                guard try call.variantContents() == "ay" else { throw .invalidArguments("the DH input is a byte array") }
                try call.enter("v", "ay")
                let peer = try call.bytes { Array($0) }
                let (key, publicValue) = try SecretSession.agree(peer: peer)
                sessions[path] = SecretSession(path: path, owner: call.sender, kind: .aes(key))
                log("session \(path): \(SecretSession.dhAlgorithm)")
                try DBusConnection.reply(to: call.message) { reply in
                    try reply.variant("ay") { try reply.bytes(publicValue) }
                    try reply.string(path, "o")
                }
            default:
                throw .notSupported("the algorithm '\(algorithm)' is not offered (plain, \(SecretSession.dhAlgorithm))")
            }
        case "SearchItems":
            try Self.requireSignature(call, "a{ss}")
            let attributes = try call.stringDictionary(limit: SecretStore.maximumAttributes)
            var open: [String] = [], locked: [String] = []
            for collection in store.collections {
                do {
                    open += try store.items(in: collection, matching: attributes).map(\.path)
                } catch .isLocked {
                    // Its entry names are encrypted: the items seen while it was unlocked (docs/SECRET-SERVICE.md).
                    locked += store.indexed(in: collection, matching: attributes).map(\.path)
                }
            }
            try DBusConnection.reply(to: call.message) { [open] reply in
                try reply.objectPaths(open)
                try reply.objectPaths(locked)
            }
        case "GetSecrets":
            try Self.requireSignature(call, "aoo")
            let paths = try call.objectPaths()
            let session = try self.session(try call.string("o"), caller: call.sender)
            var secrets: [(String, [UInt8], [UInt8], String)] = []
            for path in paths {
                let item: SecretItem, secret: SecureBytes
                do {
                    (item, secret) = try store.itemWithSecret(at: path)
                } catch .noSuchObject {
                    continue
                }
                let encoded = try session.encode(secret)
                secrets.append((path, encoded.parameters, encoded.value, item.contentType))
            }
            defer { for index in secrets.indices { secrets[index].2.wipe() } }
            try DBusConnection.reply(to: call.message, sensitive: true) { reply in
                try reply.open("a", "{o(oayays)}")
                for (path, parameters, value, contentType) in secrets {
                    try reply.open("e", "o(oayays)")
                    try reply.string(path, "o")
                    try Self.writeSecret(reply, session: session.path, parameters: parameters, value: value, contentType: contentType)
                    try reply.close()
                }
                try reply.close()
            }
        case "Unlock":
            try Self.requireSignature(call, "ao")
            try unlock(call, try call.objectPaths())
        case "Lock":
            try Self.requireSignature(call, "ao")
            let objects = try call.objectPaths()
            for collection in try collections(of: objects) { try store.lock(collection) }
            try DBusConnection.reply(to: call.message) { reply in
                try reply.objectPaths(objects)
                try reply.string("/", "o")
            }
            watchAgent(now: true)
        case "ReadAlias":
            try Self.requireSignature(call, "s")
            let name = try call.string()
            let path = name == "default" ? store.collections.first?.path ?? "/" : "/"
            try DBusConnection.reply(to: call.message) { try $0.string(path, "o") }
        case "SetAlias":
            try Self.requireSignature(call, "so")
            let name = try call.string(), target = try call.string("o")
            guard name == "default", target == store.collections.first?.path else {
                throw .notSupported("aliases are fixed: 'default' is the first vault given to 'vault secret-service' (\(store.collections.first?.vaultPath ?? "none"))")
            }
            try DBusConnection.reply(to: call.message) { _ in }
        case "CreateCollection":
            // A collection is a vault, with its own passphrase or recipients: made on purpose, not by a client's call.
            throw .notSupported("a collection is a vault: make one with 'vault init --vault PATH' and serve it with 'vault secret-service --vault PATH'")
        default:
            throw .unknownMethod("\(Self.service) has no method \(call.member)")
        }
    }

    static func writeSecret(_ reply: DBusWriter, session: String, parameters: [UInt8], value: [UInt8], contentType: String) throws(SecretServiceError) {
        try reply.open("r", "oayays")
        try reply.string(session, "o")
        try reply.bytes(parameters)
        try reply.bytes(value)
        try reply.string(contentType)
        try reply.close()
    }

    /// The session at `path`, which must be `caller`'s.
    func session(_ path: String, caller: String) throws(SecretServiceError) -> SecretSession {
        guard let session = sessions[path], session.owner == caller else { throw .noSession("no such session: \(path)") }
        return session
    }

    /// The collections `objects` (collections and items) belong to, each once.
    func collections(of objects: [String]) throws(SecretServiceError) -> [SecretCollection] {
        var found: [SecretCollection] = []
        for object in objects {
            guard let collection = store.collection(at: object) ?? store.itemAddress(object)?.0 else {
                throw .noSuchObject("no such object: \(object)")
            }
            if !found.contains(collection) { found.append(collection) }
        }
        return found
    }
}

extension [UInt8] {
    /// Overwrites the bytes (a secret's copy, once sent).
    mutating func wipe() {
        withUnsafeMutableBytes { bytes in
            for index in bytes.indices { bytes[index] = 0 }
        }
    }
}

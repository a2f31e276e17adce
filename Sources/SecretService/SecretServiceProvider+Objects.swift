import FoundationEssentials
import Glibc
import VaultCore

/// Collections, items, prompts and properties.
extension SecretServiceProvider {
    // MARK: Collection

    func handleCollection(_ call: DBusReader, _ collection: SecretCollection) throws(SecretServiceError) {
        switch call.member {
        case "SearchItems":
            try Self.requireSignature(call, "a{ss}")
            let attributes = try call.stringDictionary(limit: SecretStore.maximumAttributes)
            let paths = try store.itemsOrIndexed(in: collection, matching: attributes).map(\.path)
            try DBusConnection.reply(to: call.message) { try $0.objectPaths(paths) }
        case "CreateItem":
            try Self.requireSignature(call, "a{sv}(oayays)b")
            var label = "", attributes: [(String, String)] = []
            try call.enter("a", "{sv}")
            while !call.atEnd {
                try call.enter("e", "sv")
                let key = try call.string()
                switch (key, try call.variantContents()) {
                case ("org.freedesktop.Secret.Item.Label", "s"):
                    try call.enter("v", "s")
                    label = try call.string()
                    try call.exit()
                case ("org.freedesktop.Secret.Item.Attributes", "a{ss}"):
                    try call.enter("v", "a{ss}")
                    attributes = try call.stringDictionary(limit: SecretStore.maximumAttributes)
                    try call.exit()
                default:
                    try call.skip("v")
                }
                try call.exit()
            }
            try call.exit()
            let (secret, contentType) = try readSecret(call)
            let replace = try call.bool()
            let (path, created) = try store.create(
                in: collection, label: label, attributes: attributes, secret: secret, contentType: contentType, replace: replace)
            try DBusConnection.reply(to: call.message) { reply in
                try reply.string(path, "o")
                try reply.string("/", "o")
            }
            emit(created ? "ItemCreated" : "ItemChanged", item: path, in: collection)
        case "Delete":
            throw .notSupported("a collection is a vault: it is not deleted over D-Bus")
        default:
            throw .unknownMethod("\(Self.collectionInterface) has no method \(call.member)")
        }
    }

    /// The `(oayays)` secret of `call`, decoded in its session (which must be the caller's).
    func readSecret(_ call: DBusReader) throws(SecretServiceError) -> (SecureBytes, String) {
        try call.enter("r", "oayays")
        let session = try self.session(try call.string("o"), caller: call.sender)
        let parameters = try call.bytes { Array($0) }
        let secret = try call.bytes { value throws(SecretServiceError) in
            guard value.count <= SecretStore.maximumSecretBytes + 16 else {
                throw SecretServiceError.invalidArguments("the secret is larger than \(SecretStore.maximumSecretBytes) bytes")
            }
            let decoded: Result<SecureBytes, SecretServiceError> = parameters.withUnsafeBytes { p in
                Result { () throws(SecretServiceError) in try session.decode(parameters: p, value: value) }
            }
            return try decoded.get()
        }
        let contentType = try call.string()
        try call.exit()
        return (secret, contentType)
    }

    func emit(_ signal: String, item: String, in collection: SecretCollection) {
        do {
            try bus.emit(path: collection.path, interface: Self.collectionInterface, member: signal) { try $0.string(item, "o") }
        } catch {
            // A signal that cannot be sent changes nothing that was written.
        }
    }

    // MARK: Item

    func handleItem(_ call: DBusReader) throws(SecretServiceError) {
        if call.member == "GetSecret" {
            try Self.requireSignature(call, "o")
            let session = try self.session(try call.string("o"), caller: call.sender)
            let (item, secret) = try store.itemWithSecret(at: call.path)
            var encoded = try session.encode(secret)
            defer { encoded.value.wipe() }
            try DBusConnection.reply(to: call.message, sensitive: true) { reply in
                try Self.writeSecret(reply, session: session.path, parameters: encoded.parameters, value: encoded.value, contentType: item.contentType)
            }
            return
        }
        let item = try store.item(at: call.path)
        switch call.member {
        case "SetSecret":
            try Self.requireSignature(call, "(oayays)")
            let (secret, contentType) = try readSecret(call)
            try store.setSecret(item, secret, contentType: contentType)
            try DBusConnection.reply(to: call.message) { _ in }
            emit("ItemChanged", item: item.path, in: item.collection)
        case "Delete":
            try store.delete(item)
            try DBusConnection.reply(to: call.message) { try $0.string("/", "o") }
            emit("ItemDeleted", item: item.path, in: item.collection)
        default:
            throw .unknownMethod("\(Self.itemInterface) has no method \(call.member)")
        }
    }

    // MARK: Prompts

    /// `Unlock`: what is unlocked already, and a prompt for the rest that completes when `vault unlock` opens
    /// their vaults in the agent (from any terminal).
    func unlock(_ call: DBusReader, _ objects: [String]) throws(SecretServiceError) {
        var unlocked: [String] = [], waiting: [String] = [], locked: [SecretCollection] = []
        for object in objects {
            let collection = try collections(of: [object])[0]
            if store.isLocked(collection) {
                waiting.append(object)
                if !locked.contains(collection) { locked.append(collection) }
            } else {
                unlocked.append(object)
            }
        }
        var prompt = "/"
        if !waiting.isEmpty {
            prompt = nextPath("prompt")
            prompts[prompt] = Prompt(owner: call.sender, collections: locked, objects: waiting)
            log("prompt \(prompt): waiting for 'vault unlock' of " + locked.map(\.vaultPath).joined(separator: ", "))
        }
        try DBusConnection.reply(to: call.message) { [prompt] reply in
            try reply.objectPaths(unlocked)
            try reply.string(prompt, "o")
        }
    }

    func handlePrompt(_ call: DBusReader) throws(SecretServiceError) {
        guard let prompt = prompts[call.path], prompt.owner == call.sender else {
            throw .noSuchObject("no such prompt: \(call.path)")
        }
        switch call.member {
        case "Prompt":
            guard !prompt.started else { throw .failed("the prompt \(call.path) runs already") }
            prompts[call.path]?.started = true
            try DBusConnection.reply(to: call.message) { _ in }
            watchAgent(now: true)
            ask(call.path)
        case "Dismiss":
            try DBusConnection.reply(to: call.message) { _ in }
            dismiss(call.path)
        default:
            throw .unknownMethod("\(Self.promptInterface) has no method \(call.member)")
        }
    }

    /// Completes every started prompt whose vaults the agent held at the last look (a passphrase program still
    /// asking is ended: `vault unlock` elsewhere answered first).
    func completePrompts() {
        for (path, prompt) in prompts where prompt.started && prompt.collections.allSatisfy({ unlocked.contains($0.id) }) {
            prompt.question?.cancel()
            prompts[path] = nil
            completed(path, dismissed: false, objects: prompt.objects)
        }
    }

    /// Ends the prompt at `path` unanswered: `Completed(true, [])`, its passphrase program ended.
    func dismiss(_ path: String) {
        guard let prompt = prompts.removeValue(forKey: path) else { return }
        prompt.question?.cancel()
        completed(path, dismissed: true, objects: [])
    }

    /// Starts the passphrase program for the first vault of the prompt at `path` that is still locked (`error`:
    /// why it asks again), when one is configured; without one the prompt waits for `vault unlock`.
    func ask(_ path: String, again error: String? = nil) {
        guard let program = passphraseProgram, var prompt = prompts[path], prompt.started, prompt.question == nil,
              let collection = prompt.collections.first(where: { !unlocked.contains($0.id) }) else { return }
        if prompt.asking != collection { prompt.attempt = 0 }
        prompt.asking = collection
        prompt.attempt += 1
        let description = "A program asks, through the Secret Service, to unlock the vault '\(collection.vaultPath)'. Its passphrase"
        do {
            prompt.question = try PassphraseQuestion(program, description: description, error: error)
            prompts[path] = prompt
            log("prompt \(path): asking with \(program.name) for \(collection.vaultPath) (try \(prompt.attempt) of 3)")
        } catch {
            log("prompt \(path): \(error)")
            dismiss(path)
        }
    }

    /// Looks at the passphrase programs' answers: a passphrase unlocks its vault in the agent (the prompt then
    /// completes, or asks for its next vault); a wrong one asks again, three tries in all, as `vault unlock` does;
    /// a cancel dismisses the prompt.
    func hearAnswers() {
        for path in prompts.keys.sorted() {
            guard let prompt = prompts[path], let question = prompt.question, let collection = prompt.asking else { continue }
            switch question.poll() {
            case .running:
                continue
            case .cancelled(let reason):
                log("prompt \(path): \(reason); dismissed")
                dismiss(path)
            case .passphrase(let passphrase):
                prompts[path]?.question = nil
                do {
                    try unlockVault(collection.vaultPath, passphrase)
                    log("prompt \(path): unlocked \(collection.vaultPath)")
                    watchAgent(now: true)
                    ask(path)
                } catch VaultError.wrongPassphrase(_) where prompt.attempt < 3 {
                    ask(path, again: "wrong passphrase; try \(prompt.attempt + 1) of 3")
                } catch {
                    log("prompt \(path): cannot unlock \(collection.vaultPath): \(error); dismissed")
                    dismiss(path)
                }
            }
        }
    }

    private func completed(_ path: String, dismissed: Bool, objects: [String]) {
        try? bus.emit(path: path, interface: Self.promptInterface, member: "Completed") { signal in
            try signal.bool(dismissed)
            try signal.variant("ao") { try signal.objectPaths(objects) }
        }
    }

    // MARK: Properties

    func handleProperties(_ call: DBusReader) throws(SecretServiceError) {
        switch call.member {
        case "Get":
            try Self.requireSignature(call, "ss")
            let interface = try call.string(), name = try call.string()
            let all = try properties(of: call.path, interface: interface)
            guard let property = all.first(where: { $0.name == name }) else {
                throw .invalidArguments("no property \(interface).\(name)")
            }
            try DBusConnection.reply(to: call.message) { reply in
                try reply.variant(property.signature) { try property.write(reply) }
            }
        case "GetAll":
            try Self.requireSignature(call, "s")
            let all = try properties(of: call.path, interface: try call.string())
            try DBusConnection.reply(to: call.message) { try Self.write(all, to: $0) }
        case "Set":
            try Self.requireSignature(call, "ssv")
            let interface = try call.string(), name = try call.string()
            if interface == Self.collectionInterface, let collection = store.collection(at: call.path) {
                guard name == "Label", try call.variantContents() == "s" else {
                    throw .notSupported("a collection's settable property is Label (s)")
                }
                try call.enter("v", "s")
                try store.setLabel(of: collection, try call.string())
                try DBusConnection.reply(to: call.message) { _ in }
                return
            }
            guard interface == Self.itemInterface, store.itemAddress(call.path) != nil else {
                throw .notSupported("only a collection's Label and an item's Label and Attributes can be set")
            }
            let item = try store.item(at: call.path)
            switch (name, try call.variantContents()) {
            case ("Label", "s"):
                try call.enter("v", "s")
                try store.setLabel(item, try call.string())
            case ("Attributes", "a{ss}"):
                try call.enter("v", "a{ss}")
                try store.setAttributes(item, try call.stringDictionary(limit: SecretStore.maximumAttributes))
            default:
                throw .invalidArguments("an item's settable properties are Label (s) and Attributes (a{ss})")
            }
            try DBusConnection.reply(to: call.message) { _ in }
            emit("ItemChanged", item: item.path, in: item.collection)
        default:
            throw .unknownMethod("\(Self.properties) has no method \(call.member)")
        }
    }

    struct Property {
        let name: String
        let signature: String
        let write: (DBusWriter) throws -> Void
    }

    /// `properties` as an `a{sv}`.
    static func write(_ properties: [Property], to writer: DBusWriter) throws(SecretServiceError) {
        try writer.open("a", "{sv}")
        for property in properties {
            try writer.open("e", "sv")
            try writer.string(property.name)
            try writer.variant(property.signature) { try property.write(writer) }
            try writer.close()
        }
        try writer.close()
    }

    /// The properties of the object at `path` for `interface` (empty: all of its interface's).
    func properties(of path: String, interface: String) throws(SecretServiceError) -> [Property] {
        func check(_ expected: String) throws(SecretServiceError) {
            guard interface.isEmpty || interface == expected else { throw .invalidArguments("\(path) has no interface \(interface)") }
        }
        func text(_ name: String, _ value: String) -> Property { Property(name: name, signature: "s") { try $0.string(value) } }
        func flag(_ name: String, _ value: Bool) -> Property { Property(name: name, signature: "b") { try $0.bool(value) } }
        func time(_ name: String, _ value: UInt64) -> Property { Property(name: name, signature: "t") { try $0.uint64(value) } }
        if path == Self.root {
            try check(Self.service)
            let paths = store.collections.map(\.path)
            return [Property(name: "Collections", signature: "ao") { try $0.objectPaths(paths) }]
        }
        if let collection = store.collection(at: path) {
            try check(Self.collectionInterface)
            let locked = store.isLocked(collection)
            let items = ((try? store.itemsOrIndexed(in: collection, matching: [])) ?? []).map(\.path)
            var info = stat()
            let modified = stat(collection.vaultPath, &info) == 0 ? UInt64(max(0, info.st_mtim.tv_sec)) : 0
            return [
                Property(name: "Items", signature: "ao") { try $0.objectPaths(items) }, text("Label", store.label(of: collection)),
                flag("Locked", locked), time("Created", modified), time("Modified", modified),
            ]
        }
        if let (collection, _) = store.itemAddress(path) {
            try check(Self.itemInterface)
            let item: SecretItem, locked = store.isLocked(collection)
            if locked {
                // As the index holds it (seen while unlocked); an item it does not know shows only that it is locked.
                guard let indexed = store.indexedItem(at: path) else { return [flag("Locked", true)] }
                item = indexed
            } else {
                item = try store.item(at: path)
            }
            return [
                flag("Locked", locked), Property(name: "Attributes", signature: "a{ss}") { try $0.stringDictionary(item.attributes) },
                text("Label", item.label), time("Created", item.created), time("Modified", item.modified),
            ]
        }
        if sessions[path] != nil || prompts[path] != nil { return [] }
        throw .noSuchObject("no such object: \(path)")
    }
}

import VaultCore

/// A request to the agent, typed (docs/AGENT.md, "Wire protocol"): what the fields of a request payload mean,
/// decoded (``init(_:)``) and encoded (``encode()``) here only, as rbw's `protocol.rs` types its `Action`. The
/// service switches over these cases and the client builds them; neither picks fields by hand.
enum AgentRequest {
    /// What is unlocked, with the time left (not an activity).
    case status
    /// Open a vault and keep its key.
    case unlock(path: String, Unlock)
    /// Forget a vault's key.
    case lock(path: String)
    /// Forget every key.
    case lockAll
    /// Merge two files of an unlocked vault found by their vault id (git's merge driver).
    case mergeFiles(ours: [UInt8], theirs: [UInt8], labels: (String, String))
    /// What a file of an unlocked vault holds, found by its vault id (git's textconv).
    case describeFile([UInt8], label: String)
    /// An operation on the vault at `path`, which the agent must hold: every answer to one is `locked` when it
    /// does not, so the client needs no probe before it (a `get` is one round trip).
    case vault(path: String, VaultRequest)

    /// The operations on a vault the agent holds.
    enum VaultRequest {
        /// Whether the agent holds the vault (not an activity).
        case probe
        case get(name: String)
        case list
        /// Names only; `withoutActivity`: shell completion, which extends no idle timeout.
        case names(withoutActivity: Bool)
        case remove(name: String)
        case passwd(SecureBytes)
        case records(name: String, EntryVersions)
        case apply(ChangeBatch)
        case entries(names: [String])
        case merge(Merge)
        case deleted
        /// The entries named `prefix…` whose non-secret fields include every one of `required`.
        case search(prefix: String, required: [(field: String, value: [UInt8])])
        case recipients(Recipients)

        /// Whether the request is an activity (extends the vault's idle timeout).
        var isActivity: Bool {
            switch self {
            case .probe: return false
            case .names(let withoutActivity): return !withoutActivity
            default: return true
            }
        }
    }

    /// A batch of changes: every write, of either format version, is an `apply` on the wire.
    enum ChangeBatch {
        case document([DocumentChange])
        /// A batch of format version 1's terms (``KeyValueVault/write(_:)``): on the wire the document changes
        /// ``VaultChanges/documentChanges()`` makes of it, streamed from its one guarded region (no region per value);
        /// the agent decodes them as ``document(_:)``.
        case formatOne(VaultChanges)
    }

    /// An unlock's key and terms.
    struct Unlock {
        enum Key {
            case passphrase(SecureBytes)
            /// A data key the client unwrapped with an age identity (format version 2 and later).
            case dataKey(SecureBytes)
        }

        var key: Key
        /// The identities to keep (`vault unlock --identity`), one a line.
        var keptIdentities: SecureBytes?
        var idleSeconds: UInt64
        var maxSeconds: UInt64
        /// The test KDF, honoured only by an agent whose own environment allows it.
        var insecureKDFForTesting: Bool
        var lockTimeoutMilliseconds: UInt64?
    }

    /// What `vault recipients` asks of a vault the agent holds.
    enum Recipients {
        case list
        /// X25519 recipients (`age1…`) to wrap the data key for; `label` for the one given.
        case add([String], label: String?)
        /// The recipient to remove (the key rotated); `passphrase` the vault's, for its new passphrase stanza.
        case remove(String, passphrase: SecureBytes?)
    }

    /// A merge of another copy of the vault.
    struct Merge {
        /// How errors name the other copy.
        var label: String
        /// Its file's bytes (ciphertext).
        var file: [UInt8]
        var dryRun: Bool
        var otherPassphrase: SecureBytes?
        var acceptDeletions: Bool
        /// Answer the file the merge wrote too (`code` keep-file).
        var keepFile = false
    }

    /// The operation byte of the payload.
    var operation: AgentOperation {
        switch self {
        case .status: return .status
        case .unlock: return .unlock
        case .lock: return .lock
        case .lockAll: return .lockAll
        case .mergeFiles: return .mergeFiles
        case .describeFile: return .describeFile
        case .vault(_, let request):
            switch request {
            case .probe: return .probe
            case .get: return .get
            case .list: return .list
            case .names: return .names
            case .remove: return .remove
            case .passwd: return .passwd
            case .records: return .records
            case .apply: return .apply
            case .entries: return .entries
            case .merge: return .merge
            case .deleted: return .deleted
            case .search: return .search
            case .recipients: return .recipients
            }
        }
    }

    /// The same request with its vault's path `transform`ed (the client sends the canonical path).
    func mappingPath(_ transform: (String) -> String) -> AgentRequest {
        switch self {
        case .unlock(let path, let unlock): return .unlock(path: transform(path), unlock)
        case .lock(let path): return .lock(path: transform(path))
        case .vault(let path, let request): return .vault(path: transform(path), request)
        case .status, .lockAll, .mergeFiles, .describeFile: return self
        }
    }

    /// The vault's path the request names, if any.
    var path: String? {
        switch self {
        case .unlock(let path, _), .lock(let path), .vault(let path, _): return path
        case .status, .lockAll, .mergeFiles, .describeFile: return nil
        }
    }

    // MARK: Decoding

    /// The request `message` carries (of this protocol version).
    ///
    /// - Throws: ``AgentError/badRequest(_:)`` for an unknown operation or a missing field,
    ///   ``AgentError/protocolError(_:)`` for a malformed batch, ``VaultError/invalidEntryName(reason:)`` for a
    ///   text field that is not UTF-8 (never made into another name by U+FFFD).
    init(_ message: AgentWire.Message) throws {
        guard let operation = AgentOperation(rawValue: message.kind) else {
            throw AgentError.badRequest("unknown operation \(message.kind)")
        }
        func text(_ tag: AgentWire.Tag) throws -> String {
            guard let range = message.first(tag) else { throw AgentError.badRequest("a request without a required field") }
            guard let text = message.string(range) else { throw VaultError.invalidEntryName(reason: "the name is not valid UTF-8") }
            return text
        }
        func required<T>(_ value: T?) throws -> T {
            guard let value else { throw AgentError.badRequest("a request without a required field") }
            return value
        }
        func bytes(_ range: Range<Int>) -> [UInt8] { message.payload.withUnsafeBytes { Array($0[range]) } }
        switch operation {
        case .retiredWrite:
            // Protocol version 4's write: every write is an `apply` now, whatever the vault's format version.
            throw AgentError.badRequest("operation \(message.kind) (version 4's write) is retired: writes are `apply`")
        case .status: self = .status
        case .lockAll: self = .lockAll
        case .lock: self = .lock(path: try text(.path))
        case .unlock:
            let path = try text(.path)
            let key: Unlock.Key
            if let dataKey = message.secret(.dataKey) { key = .dataKey(dataKey) } else { key = .passphrase(try required(message.secret(.passphrase))) }
            self = .unlock(path: path, Unlock(
                key: key, keptIdentities: message.secret(.value), idleSeconds: try required(message.number(.idleSeconds)),
                maxSeconds: try required(message.number(.maxSeconds)), insecureKDFForTesting: message.bool(.flags),
                lockTimeoutMilliseconds: message.number(.lockTimeoutMilliseconds)))
        case .mergeFiles:
            let files = message.fields.filter { $0.tag == AgentWire.Tag.value.rawValue }.map { bytes($0.range) }
            let labels = message.strings(.source)
            guard files.count == 2, labels.count == 2 else { throw AgentError.badRequest("a merge of two files needs two files") }
            self = .mergeFiles(ours: files[0], theirs: files[1], labels: (labels[0], labels[1]))
        case .describeFile:
            self = .describeFile(bytes(try required(message.first(.value))), label: message.string(.source) ?? "file")
        case .probe, .get, .list, .names, .remove, .passwd, .records, .apply, .entries, .merge, .deleted, .search, .recipients:
            let path = try text(.path)
            let request: VaultRequest
            switch operation {
            case .probe: request = .probe
            case .get: request = .get(name: try text(.name))
            case .list: request = .list
            case .names: request = .names(withoutActivity: message.bool(.flags))
            case .remove: request = .remove(name: try text(.name))
            case .passwd: request = .passwd(try required(message.secret(.passphrase)))
            case .records:
                let which: EntryVersions
                if message.bool(.flags) { which = .all }
                else if let number = message.number(.version) { which = .version(Int(clamping: number)) }
                else { which = .current }
                request = .records(name: try text(.name), which)
            case .apply: request = .apply(.document(try AgentWire.documentChanges(from: message)))
            case .entries:
                request = .entries(names: try message.fields.filter { $0.tag == AgentWire.Tag.name.rawValue }.map { field in
                    guard let name = message.string(field.range) else { throw VaultError.invalidEntryName(reason: "the name is not valid UTF-8") }
                    return name
                })
            case .merge:
                let file = bytes(try required(message.first(.value)))
                request = .merge(Merge(
                    label: try text(.source), file: file, dryRun: message.bool(.flags),
                    otherPassphrase: message.secret(.passphrase), acceptDeletions: message.strings(.code).contains("accept-deletions"),
                    keepFile: message.strings(.code).contains("keep-file")))
            case .deleted: request = .deleted
            case .search:
                var required: [(field: String, value: [UInt8])] = []
                var field: String?
                for item in message.fields {
                    switch AgentWire.Tag(rawValue: item.tag) {
                    case .field:
                        guard field == nil, let text = message.string(item.range) else {
                            throw AgentError.badRequest("a search with a malformed field")
                        }
                        field = text
                    case .value:
                        guard let name = field else { throw AgentError.badRequest("a search value without its field") }
                        required.append((name, bytes(item.range)))
                        field = nil
                    default: break
                    }
                }
                guard field == nil else { throw AgentError.badRequest("a search field without its value") }
                request = .search(prefix: try text(.name), required: required)
            case .recipients:
                switch try text(.code) {
                case "list": request = .recipients(.list)
                case "add": request = .recipients(.add(message.strings(.source), label: message.string(.name)))
                case "remove": request = .recipients(.remove(try text(.source), passphrase: message.secret(.passphrase)))
                default: throw AgentError.badRequest("unknown recipients operation")
                }
            default: throw AgentError.badRequest("unknown operation \(message.kind)")
            }
            self = .vault(path: path, request)
        }
    }

    // MARK: Encoding

    /// The request's payload, as a client sends it (``init(_:)``'s inverse).
    func encode() throws -> AgentWire.Writer {
        let writer = AgentWire.Writer(kind: operation.rawValue)
        if let path { writer.field(.path, path) }
        switch self {
        case .status, .lockAll, .lock: break
        case .unlock(_, let unlock):
            if let kept = unlock.keptIdentities { writer.field(.value, kept) }
            switch unlock.key {
            case .passphrase(let passphrase): writer.field(.passphrase, passphrase)
            case .dataKey(let dataKey): writer.field(.dataKey, dataKey)
            }
            writer.field(.idleSeconds, unlock.idleSeconds)
            writer.field(.maxSeconds, unlock.maxSeconds)
            writer.field(.flags, unlock.insecureKDFForTesting)
            if let milliseconds = unlock.lockTimeoutMilliseconds { writer.field(.lockTimeoutMilliseconds, milliseconds) }
        case .mergeFiles(let ours, let theirs, let labels):
            ours.withUnsafeBytes { writer.field(.value, $0) }
            theirs.withUnsafeBytes { writer.field(.value, $0) }
            writer.field(.source, labels.0)
            writer.field(.source, labels.1)
        case .describeFile(let bytes, let label):
            bytes.withUnsafeBytes { writer.field(.value, $0) }
            writer.field(.source, label)
        case .vault(_, let request):
            switch request {
            case .probe, .list, .deleted: break
            case .search(let prefix, let required):
                writer.field(.name, prefix)
                for (field, value) in required {
                    writer.field(.field, field)
                    value.withUnsafeBytes { writer.field(.value, $0) }
                }
            case .get(let name), .remove(let name): writer.field(.name, name)
            case .recipients(.list): writer.field(.code, "list")
            case .recipients(.add(let recipients, let label)):
                writer.field(.code, "add")
                for recipient in recipients { writer.field(.source, recipient) }
                if let label { writer.field(.name, label) }
            case .recipients(.remove(let recipient, let passphrase)):
                writer.field(.code, "remove")
                writer.field(.source, recipient)
                if let passphrase { writer.field(.passphrase, passphrase) }
            case .names(let withoutActivity): if withoutActivity { writer.field(.flags, true) }
            case .passwd(let passphrase): writer.field(.passphrase, passphrase)
            case .records(let name, let which):
                writer.field(.name, name)
                switch which {
                case .current: break
                case .version(let number): writer.field(.version, UInt64(max(0, number)))
                case .all: writer.field(.flags, true)
                }
            case .apply(.document(let changes)): AgentWire.encode(changes, into: writer)
            case .apply(.formatOne(let changes)): try AgentWire.encode(changes, into: writer)
            case .entries(let names): for name in names { writer.field(.name, name) }
            case .merge(let merge):
                writer.field(.source, merge.label)
                merge.file.withUnsafeBytes { writer.field(.value, $0) }
                writer.field(.flags, merge.dryRun)
                if merge.acceptDeletions { writer.field(.code, "accept-deletions") }
                if merge.keepFile { writer.field(.code, "keep-file") }
                merge.otherPassphrase?.withUnsafeBytes { writer.field(.passphrase, $0) }
            }
        }
        return writer
    }
}

import Synchronization
import VaultSodium

/// What a document's batch of changes can do (``VaultDocument/apply(_:replica:clock:)``). Every change to an
/// entry makes one new version of it per batch; the version it replaces goes into its history.
public enum DocumentChange: Sendable {
    /// Sets field `field` of entry `entry` to `value`, making the entry when it does not exist. `secret`: whether
    /// the field is shown masked; `nil` keeps the field's flag, or for a new field takes the well-known default
    /// (``VaultDocument/isSecretByDefault(_:)``).
    case setField(entry: String, field: String, value: SecureBytes, secret: Bool? = nil)
    /// Removes field `field` of `entry` (nothing when it has no such field).
    case removeField(entry: String, field: String)
    /// Deletes `entry`, leaving a tombstone with its id (`ifPresent`: nothing when there is no such entry).
    case delete(entry: String, ifPresent: Bool = false)
    /// Renames `from` to `to`, keeping the id; `to` must be free unless `replacing` (then it is deleted first).
    case rename(from: String, to: String, replacing: Bool = false)
    /// Copies `from` to `to` under a new id, fields only; `to` must be free unless `replacing` (then it is
    /// deleted first).
    case copy(from: String, to: String, replacing: Bool = false)
    /// Makes version `version` of `entry`'s history (1 is the newest earlier version) current again, as a new
    /// version.
    case restore(entry: String, version: Int)
    /// Brings back the version a deletion kept of the entry last named `entry` (a change made on one copy before a
    /// deletion on another, which the deletion won at a merge: ``VaultDocument/deleted``), as a new version under
    /// its id, so that every copy takes it back at its next merge. `entry` must be free.
    case restoreDeleted(entry: String)
    /// Changes nothing; fails the whole batch unless `entry` exists (`exists`) or does not, at this point of it.
    case require(entry: String, exists: Bool)
    /// Changes nothing; fails the whole batch unless `entry` exists and has field `field` (`exists`), or unless it
    /// has no such field (it may not exist at all), at this point of it.
    case requireField(entry: String, field: String, exists: Bool)
    /// Deletes every entry, leaving a tombstone for each.
    case deleteAll
    /// Makes entry `entry`, which must not exist, whole: `current` its fields (in order) and `history` its earlier
    /// versions, newest first, each with the time another program (or an export of a vault) recorded for it, and
    /// `created` (milliseconds since the epoch; `nil`: unknown). What `vault import` writes, so that an entry keeps
    /// its history and its times. The fields' values are ranges of `values`, which every insert of a batch may share:
    /// an import of thousands of entries then holds one guarded region, not one per value (each guarded region is
    /// several memory mappings, and a process has at most 65,530 of them).
    ///
    /// The versions are stamped by this batch's replica at their own times, each strictly earlier than the next
    /// newer one and none later than the batch (an unknown or later time takes the newer version's stamp less one
    /// tick); `created` is at most the current version's. History beyond the caps is dropped, oldest first; a
    /// version that would fall before the epoch is dropped too.
    case insert(entry: String, current: DocumentVersion, history: [DocumentVersion] = [], created: UInt64? = nil, values: SecureBytes)
}

/// A field given by its place in a shared region of values (``DocumentChange/insert(entry:current:history:created:values:)``).
public struct DocumentField: Sendable {
    public var name: String
    public var isSecret: Bool
    /// The value's bytes in the insert's `values`.
    public var value: Range<Int>

    public init(name: String, isSecret: Bool, value: Range<Int>) {
        self.name = name
        self.isSecret = isSecret
        self.value = value
    }
}

/// A version of an entry given whole (``DocumentChange/insert(entry:current:history:created:values:)``): its fields
/// in order, when it was made (milliseconds since the epoch, `nil` when unknown), and whether a merge marked it a
/// conflict (history only).
public struct DocumentVersion: Sendable {
    public var fields: [DocumentField]
    public var modified: UInt64?
    public var conflict: Bool

    public init(fields: [DocumentField], modified: UInt64? = nil, conflict: Bool = false) {
        self.fields = fields
        self.modified = modified
        self.conflict = conflict
    }
}

/// A vault as a document, on bytes only: no path, no lock, no clock read except through an injected
/// ``WallClock``. It parses and checks a version-2 header without a key, unlocks it with a key source, opens the
/// body into entries, applies batches of changes and seals bytes (docs/FORMAT.md, "Version 3, the current format").
/// Merge code, the store and the agent all use it.
///
/// Values live in one libsodium-guarded region per document (never one allocation per field); a reader gets a
/// copy in its own guarded memory (``value(of:in:)``).
// Unchecked: its `var`s (entries, deletions, stanzas, the arena) change only in ``apply(_:replica:clock:)``, a
// merge or an upgrade, on a document its writer loaded for that write and holds alone (DocumentStore's write runs
// under the vault's lock); a document handed to readers (a store's cache, the agent's) is not changed afterwards.
// The caches readers fill lazily (sorted names, the encoded body) are behind their own `Mutex`.
public final class VaultDocument: @unchecked Sendable {
    /// The history kept per entry: the last 10 earlier versions, at most 64 KiB of them, oldest dropped first.
    public static let maximumHistoryVersions = 10
    public static let maximumHistoryByteCount = 64 << 10
    /// A field's name: 1 to 255 bytes of UTF-8 without control characters.
    public static let maximumFieldNameByteCount = 255
    /// The fields an entry may have.
    public static let maximumFieldCount = 1024

    /// The fields shown masked unless one asks: `password` and `otp` (an `otpauth://` URI).
    public static func isSecretByDefault(_ field: String) -> Bool { field == "password" || field == "otp" }

    /// A field: a name, where its value is in ``values``, and whether it is secret.
    struct Field: Sendable {
        let name: String
        var value: Range<Int>
        var isSecret: Bool
        /// The name's code in the file (``DocumentBody/code(of:)``: 1 to 5 well-known, 0 spelled out), found once.
        let code: UInt8

        init(name: String, value: Range<Int>, isSecret: Bool, code: UInt8? = nil) {
            self.name = name
            self.value = value
            self.isSecret = isSecret
            self.code = code ?? DocumentBody.code(of: name)
        }
    }

    /// An earlier version of an entry.
    struct Version: Sendable {
        var fields: [Field]
        var modified: HybridTimestamp
        var conflict: Bool
    }

    /// An entry: a value type whose parts live in one reference, copied on the first change of a shared one.
    /// Documents are copied on every write (a held one is never changed) and sealed in id order: a copy of an
    /// entry is then one retain, not one per part (at 10,000 entries the copies were a fifth of a put's time).
    struct Entry: Sendable {
        // Unchecked: shared parts are never changed (``unique`` copies them first, copy-on-write), so a `Parts`
        // another value or thread can see is only read.
        private final class Parts: @unchecked Sendable {
            var id: DocumentID
            var name: String
            var fields: [Field]
            var created: HybridTimestamp
            var modified: HybridTimestamp
            var history: [Version]

            init(id: DocumentID, name: String, fields: [Field], created: HybridTimestamp, modified: HybridTimestamp, history: [Version]) {
                (self.id, self.name, self.fields, self.created, self.modified, self.history) = (id, name, fields, created, modified, history)
            }

            func copy() -> Parts { Parts(id: id, name: name, fields: fields, created: created, modified: modified, history: history) }
        }

        private var parts: Parts

        init(id: DocumentID, name: String, fields: [Field], created: HybridTimestamp, modified: HybridTimestamp, history: [Version]) {
            parts = Parts(id: id, name: name, fields: fields, created: created, modified: modified, history: history)
        }

        /// The parts, this value's own before a change (another value may share them).
        private var unique: Parts {
            mutating get {
                if !isKnownUniquelyReferenced(&parts) { parts = parts.copy() }
                return parts
            }
        }

        var id: DocumentID {
            get { parts.id }
            set { unique.id = newValue }
        }
        var name: String {
            get { parts.name }
            set { unique.name = newValue }
        }
        var fields: [Field] {
            get { parts.fields }
            _modify { yield &unique.fields }
        }
        var created: HybridTimestamp {
            get { parts.created }
            set { unique.created = newValue }
        }
        var modified: HybridTimestamp {
            get { parts.modified }
            set { unique.modified = newValue }
        }
        /// Newest first.
        var history: [Version] {
            get { parts.history }
            _modify { yield &unique.history }
        }

        /// The identity of the parts: the same for two values that share them (nothing changed since one was
        /// copied from the other; a change to shared parts makes new ones).
        var identity: ObjectIdentifier { ObjectIdentifier(parts) }

        /// Whether `other` is this very version with the same history (the same clocks and marks; a version's clock
        /// names its content), under the same name: two copies that hold it merge to it.
        func isSameVersion(as other: Entry) -> Bool {
            if parts === other.parts { return true }
            return modified == other.modified && created == other.created && name == other.name
                && history.count == other.history.count
                && zip(history, other.history).allSatisfy { $0.modified == $1.modified && $0.conflict == $1.conflict }
        }
    }

    /// The live entries, by id.
    typealias Entries = IDTable<Entry>

    /// The vault's id: 16 random bytes fixed for its life.
    public let vaultID: DocumentID
    /// One more on every seal.
    public internal(set) var generation: UInt64
    /// The id of the data key (a new key, e.g. after a passphrase change, has a new one).
    public internal(set) var dataKeyID: DocumentID
    /// Each replica's latest timestamp, so that a replica never issues one twice (a restart, a wall clock that
    /// went back).
    public internal(set) var replicas: [ReplicaID: HybridTimestamp]
    /// The ids of deleted entries, with when and by which replica.
    public internal(set) var tombstones: [DocumentID: HybridTimestamp]
    /// The format version the document is written in: 2, or 3, which also stores ``seen``, ``dropped`` and
    /// ``deletions`` (docs/FORMAT.md, "The replica table", "Tombstones"). A document keeps its file's version; a merge
    /// takes the higher.
    public internal(set) var formatVersion: UInt16
    /// Version 3: each replica's table as it was when that replica last wrote (replica → packed time); none for a
    /// replica whose view is not known (``settle(replica:now:)``).
    public internal(set) var seen: [ReplicaID: [ReplicaID: UInt64]]
    /// Version 3, the tombstone horizon: per replica, the latest packed time of its deletions whose tombstones were
    /// dropped (here or in a copy this one descends from); none when none was.
    public internal(set) var dropped: [ReplicaID: UInt64]
    /// Version 3: what each tombstone deleted, and a concurrent version it won over (by tombstone id; a tombstone
    /// without one deleted the version stamped like itself and keeps nothing: ``deletion(of:)``).
    var deletions: [DocumentID: Deletion]
    /// The key stanzas of the header, as they will be written again (those of unknown types included; the
    /// replicas' names are in ``replicaNames``, sealed anew by each seal).
    var stanzas: [KeyStanza]
    /// The names people know replicas by (``ReplicaName``), from the header's `replica_names` stanza.
    public internal(set) var replicaNames: [ReplicaID: ReplicaName] = [:]
    /// The labels people know recipients by (``RecipientLabel``), from the header's `recipient_labels` stanza, by
    /// recipient (`age1…`); a seal writes only those of the header's recipients (``sealedRecipientLabels``).
    public internal(set) var recipientLabels: [String: RecipientLabel] = [:]
    /// The live entries by id (a table whose copy costs one shard: ``IDTable``).
    var entries: Entries {
        didSet { changed = nil }
    }
    /// The entries changed since ``encoded`` was made, each with the identity its parts had then (`nil`: it had
    /// none): what a seal encodes anew, every other entry's bytes copied. `nil`: not known (a seal compares every
    /// entry with ``encoded``). Any change of ``entries`` but ``apply(_:replica:clock:)``'s forgets it.
    var changed: [DocumentID: ObjectIdentifier?]?
    var idsByName: [String: DocumentID] {
        didSet { sortedNames.withLock { $0 = nil } }
    }
    /// ``names``, sorted once per change of the names (a list through the agent asks for them on every request).
    let sortedNames = Mutex<[String]?>(nil)
    /// Where every field value is (removed ones stay until the next open: a seal writes only what is used). A merge's
    /// result may share it with the copy it was merged from (``merge(_:_:now:)``): a document appends to it only as
    /// its one holder (``ownValues()``).
    private(set) var values: GuardedArena
    /// How errors name the vault (a path, a remote): the document itself does no I/O.
    public let label: String
    /// The plaintext this document was last sealed into, and where each entry is in it (what the next seal of a
    /// copy reuses: ``DocumentBody/Encoded``).
    let encoded = Mutex<DocumentBody.Encoded?>(nil)
    /// The bytes of ``values`` when it last held only live values (opened, merged or compacted by ``copied(reserving:)``).
    var compactedByteCount: Int

    /// The arena another document had when this one's values began as a copy of it (the first `count` bytes): the
    /// entries this document shares with it have their values at the same places (a copy opened against ours for a
    /// merge: ``DocumentBody/parse(_:binding:header:label:reference:)``).
    struct ArenaBasis {
        /// Weak: a document that outlives the other's arena keeps no memory of it (and then holds none of its values).
        weak var arena: GuardedArena?
        let count: Int
        /// Its ``GuardedArena/generation`` then: a region a write replaced is zeroed and taken by a later copy (the
        /// same arena, other bytes), which it tells apart.
        let generation: Int
    }
    /// `nil`: this document's values are its own.
    var basis: ArenaBasis?

    /// Makes ``values`` this document's alone before it appends to it (a copy, at the same places, while another
    /// document shares it: a change to one must not change the other, nor move its region under a reader).
    func ownValues() {
        if !isKnownUniquelyReferenced(&values) { values = values.copy(reserving: 64 << 10) }
    }

    /// Whether every value of `other` is at its place in this document's arena too (this one began as a copy of its
    /// arena, as it is now).
    func holdsValues(of other: VaultDocument) -> Bool {
        basis.map { $0.arena === other.values && $0.count == other.values.count && $0.generation == other.values.generation } ?? false
    }

    init(
        vaultID: DocumentID, generation: UInt64, dataKeyID: DocumentID, stanzas: [KeyStanza],
        replicas: [ReplicaID: HybridTimestamp] = [:], tombstones: [DocumentID: HybridTimestamp] = [:],
        entries: Entries = [:], idsByName: [String: DocumentID]? = nil, values: GuardedArena = GuardedArena(),
        label: String, formatVersion: UInt16 = DocumentFormat.currentVersion, sync: SyncState = SyncState()
    ) {
        self.vaultID = vaultID
        self.generation = generation
        self.dataKeyID = dataKeyID
        self.stanzas = stanzas
        self.replicas = replicas
        self.tombstones = tombstones
        self.formatVersion = formatVersion
        self.seen = sync.seen
        self.dropped = sync.dropped
        self.deletions = sync.deletions
        self.entries = entries
        self.values = values
        self.label = label
        self.compactedByteCount = values.count
        if let idsByName {
            self.idsByName = idsByName
        } else {
            var byName: [String: DocumentID] = [:]
            for (id, entry) in entries { byName[entry.name] = id }
            self.idsByName = byName
        }
    }

    /// A copy to change (a held document is never changed: readers may be using it): the same entries, their
    /// values in a guarded region of their own, with room for `extra` more bytes: `spare`'s (an empty arena nobody
    /// else holds, ``RegionPool``) when it has the room, else a new one with room for more (an eighth, at least
    /// 64 KiB), so that the region of the document this copy replaces can take the copy after it.
    ///
    /// The region is copied as it is (every range stays valid: no entry is rebuilt) while the values left behind
    /// by overwrites and deletions are at most as many bytes as the live ones (plus 64 KiB); beyond that the copy
    /// takes only the live values (every entry rebuilt), so a held document never grows without bound.
    func copied(reserving extra: Int = 0, recycling spare: GuardedArena? = nil) -> VaultDocument {
        if values.count <= 2 * compactedByteCount + (64 << 10) {
            let copy = VaultDocument(
                vaultID: vaultID, generation: generation, dataKeyID: dataKeyID, stanzas: stanzas, replicas: replicas,
                tombstones: tombstones, entries: entries, idsByName: idsByName,
                values: values.copy(reserving: extra, recycling: spare, slack: Self.slack(values.count)),
                label: label, formatVersion: formatVersion, sync: syncState)
            copy.compactedByteCount = compactedByteCount
            copy.replicaNames = replicaNames
            copy.recipientLabels = recipientLabels
            copy.sortedNames.withLock { $0 = sortedNames.withLock { $0 } }
            copy.encoded.withLock { $0 = encoded.withLock { $0 } }
            copy.changed = changed
            return copy
        }
        // Only the values in use (overwritten and deleted ones are left behind, and freed with this document).
        let used = entries.values.reduce(0) { total, entry in
            total + entry.fields.reduce(0) { $0 + $1.value.count } + entry.history.reduce(0) { $0 + $1.fields.reduce(0) { $0 + $1.value.count } }
        } + deletions.values.reduce(0) { $0 + ($1.kept?.version.fields.reduce(0) { $0 + $1.value.count } ?? 0) }
        let arena = GuardedArena.empty(room: used + extra, recycling: spare, slack: Self.slack(used))
        let copy = VaultDocument(
            vaultID: vaultID, generation: generation, dataKeyID: dataKeyID, stanzas: stanzas, replicas: replicas,
            tombstones: tombstones, entries: entries.mapValues { moved($0, into: arena) }, idsByName: idsByName,
            values: arena, label: label, formatVersion: formatVersion, sync: syncState(movedInto: arena))
        copy.replicaNames = replicaNames
        copy.recipientLabels = recipientLabels
        copy.sortedNames.withLock { $0 = sortedNames.withLock { $0 } }
        return copy
    }

    /// The room a new region of a copy leaves beyond what it holds (`byteCount`), for the copies after it.
    static func slack(_ byteCount: Int) -> Int { max(64 << 10, byteCount / 8) }

    /// `entry` (of this document) with its values and its history's copied into `arena` (as it is when `arena` is
    /// this document's).
    func moved(_ entry: Entry, into arena: GuardedArena) -> Entry {
        guard arena !== values else { return entry }
        var entry = entry
        entry.fields = moved(fields: entry.fields, into: arena)
        entry.history = entry.history.map { Version(fields: moved(fields: $0.fields, into: arena), modified: $0.modified, conflict: $0.conflict) }
        return entry
    }
}

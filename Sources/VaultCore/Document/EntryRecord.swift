/// Which versions of an entry to read: the current one, one by number (0 the current, 1 the newest earlier one,
/// as `vault get --version` and `vault history` number them), or all of them.
public enum EntryVersions: Sendable, Equatable {
    case current
    case version(Int)
    case all
}

/// One version of an entry with its fields' values, in guarded memory: what `show`, `history` and
/// `get --field` read, from a document here or through the agent.
public struct EntryRecord: Sendable {
    /// A field: its name, whether it is shown masked, and its value.
    public struct Field: Sendable {
        public let name: String
        public let isSecret: Bool
        public let value: SecureBytes

        public init(name: String, isSecret: Bool, value: SecureBytes) {
            self.name = name
            self.isSecret = isSecret
            self.value = value
        }
    }

    public let id: DocumentID
    public let name: String
    /// 0 for the current version, N for the Nth earlier one (1 the newest).
    public let version: Int
    public let created: HybridTimestamp
    /// When this version was made (and by which replica).
    public let modified: HybridTimestamp
    /// Whether a merge kept this version as the loser of a conflict.
    public let conflict: Bool
    /// The fields, in the entry's order.
    public let fields: [Field]

    public init(
        id: DocumentID, name: String, version: Int, created: HybridTimestamp, modified: HybridTimestamp, conflict: Bool,
        fields: [Field]
    ) {
        self.id = id
        self.name = name
        self.version = version
        self.created = created
        self.modified = modified
        self.conflict = conflict
        self.fields = fields
    }

    /// The field named `name`, or `nil`.
    public func field(_ name: String) -> Field? { fields.first { $0.name == name } }
}

/// A vault whose entries have fields, earlier versions and ids (format version 2), wherever its key is: the
/// document opened here (``DocumentVault``) or through the agent. A version-1 vault is a ``KeyValueVault`` only;
/// the agent answers for one with ``VaultError/needsVersion2(path:)``.
public protocol DocumentEntries: KeyValueVault {
    /// The versions `which` of entry `name`, newest first, with their values; `nil` when there is no such entry.
    ///
    /// - Throws: ``VaultError/noSuchVersion(key:version:)``, ``VaultError/needsVersion2(path:)``.
    func records(of name: String, _ which: EntryVersions) throws -> [EntryRecord]?
    /// Applies `changes` in one atomic, durable write (``VaultDocument/apply(_:replica:clock:)``).
    func apply(_ changes: [DocumentChange]) throws
    /// Merges another copy of this vault, the bytes of its file (`label` names it in errors), into this one
    /// (``DocumentStore/merge(_:label:dryRun:otherPassphrase:attempts:)``); with `dryRun` nothing is
    /// written. A copy sealed with another data key (a passphrase change on one side) needs `otherPassphrase`.
    /// A merge that would delete more than 10 entries and more than a tenth of the vault is refused
    /// (``VaultError/massDeletion(path:names:)``, nothing written) unless `acceptDeletions`.
    func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?, acceptDeletions: Bool) throws -> MergeReport
    /// The deleted entries that keep a change a deletion won over (format version 3: ``VaultDocument/deleted``),
    /// what `vault restore NAME --deleted` brings back.
    func deletedEntries() throws -> [VaultDocument.DeletedEntry]
}

extension DocumentEntries {
    /// Merges another copy of this vault sealed with this vault's data key.
    public func merge(_ other: [UInt8], label: String, dryRun: Bool) throws -> MergeReport {
        try merge(other, label: label, dryRun: dryRun, otherPassphrase: nil, acceptDeletions: false)
    }

    /// Merges another copy, refusing a mass deletion (``merge(_:label:dryRun:otherPassphrase:acceptDeletions:)``).
    public func merge(_ other: [UInt8], label: String, dryRun: Bool, otherPassphrase: SecureBytes?) throws -> MergeReport {
        try merge(other, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: false)
    }

    /// The current version of entry `name`, or `nil`.
    public func record(of name: String) throws -> EntryRecord? { try records(of: name, .current)?.first }
}

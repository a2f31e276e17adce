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
    /// The name of the replica that made this version (``ReplicaName``), or `nil` when it has none (a vault written
    /// before replicas had names: show ``modified``'s replica id).
    public let modifiedBy: String?
    /// Whether a merge kept this version as the loser of a conflict.
    public let conflict: Bool
    /// The fields, in the entry's order.
    public let fields: [Field]

    public init(
        id: DocumentID, name: String, version: Int, created: HybridTimestamp, modified: HybridTimestamp, conflict: Bool,
        fields: [Field], modifiedBy: String? = nil
    ) {
        self.id = id
        self.name = name
        self.version = version
        self.created = created
        self.modified = modified
        self.conflict = conflict
        self.fields = fields
        self.modifiedBy = modifiedBy
    }

    /// Who made this version, for a person: the replica's name, else its id.
    public var author: String { modifiedBy ?? "replica \(modified.replica)" }

    /// The field named `name`, or `nil`.
    public func field(_ name: String) -> Field? { fields.first { $0.name == name } }
}

/// What a merge did, seen from the document merged into ("ours"): names as they are after the merge.
public struct MergeReport: Sendable, Equatable {
    /// Entries that ours did not have.
    public var added: [String] = []
    /// Entries of ours that the other side changed later (a conflict is not counted here too: ``conflicts``).
    public var updated: [String] = []
    /// Entries of ours that the other side deleted after their last change.
    public var deleted: [String] = []
    /// Entries ours had deleted that the other side changed after the deletion.
    public var resurrected: [String] = []
    /// Entries changed on both sides: the later change won, the other is in the entry's history marked `conflict`.
    /// Also an entry whose version in ours, made by this replica, the other copy keeps only as a `conflict` version
    /// (it lost at a merge made elsewhere: a fast-forward brings that), or a concurrent change that the other copy
    /// keeps so. Each entry is counted once: a conflict is not also ``updated``.
    public var conflicts: [String] = []
    /// Entries whose version in ours lost to a later, concurrent one: ours's change is in the entry's history,
    /// marked `conflict`, as version ``LostEdit/version`` (`vault history NAME` numbers it so). It lost in this merge,
    /// or (ours's version made by this replica) at a merge made elsewhere that the other copy holds.
    public var lostEdits: [LostEdit] = []
    /// Entries changed on both sides whose version in ours won: the other side's change is in the entry's history,
    /// marked `conflict`, as version ``WonConflict/version``. It won in this merge, or (ours's version made by this
    /// replica) at a merge made elsewhere that the other copy holds.
    public var wonConflicts: [WonConflict] = []
    /// Entries renamed because two ids ended up with one name: (the name they had, the name they have now).
    public var renamed: [Renamed] = []
    /// Entries of ours the other side renamed (`vault mv`), a merge's `~` name among them: (the name ours had, the
    /// name now, who renamed it). Not also ``updated``.
    public var moved: [Moved] = []
    /// Entries of ours that had a merge's `~` name and have their name again (`from`, the `~` name, `to`): the entry
    /// that held the name is gone (deleted, or renamed). Also ``updated`` when changed too.
    public var namedBack: [NamedBack] = []
    /// Entries deleted on one side after the other side changed them (concurrently): the deletion won, and the
    /// change is kept with it (``VaultDocument/deleted``; `vault restore --deleted NAME` brings it back).
    public var keptDeleted: [String] = []
    /// Who changed and who deleted the ``resurrected`` entries (the change came after the deletion) and the
    /// ``keptDeleted`` ones (the change lost to a later deletion), in name order.
    public var cameBack: [Attribution] = []
    public var keptDeletions: [Attribution] = []
    /// Replicas whose clock is more than ``VaultDocument/maximumClockLead`` ahead of now: their entries are kept,
    /// their clock is not adopted for this replica's next changes.
    public var replicasAhead: [ReplicaID] = []
    /// Whether the vault was written: the entries above, or only what a person does not see (tombstones, replica
    /// clocks, histories, a merge's name suffix dropped). A dry run writes nothing.
    public var written = false
    /// Whether the other copy lacks something of the result (an entry, a version, a deletion, a clock): a sync
    /// sends the result back only then.
    public var otherLacks = false
    /// The other copy's key change, followed (its key links from ours): the vault has that copy's data key and key
    /// stanzas now, and why they changed; `nil` when both had the same key.
    public var followedKey: KeyChangeReason?

    /// An entry that gave up its name to another one created first (said at the merge that renamed it only).
    public struct Renamed: Sendable, Equatable {
        /// The name both had, and the one it has now (`<name>~<first 8 hex digits of its id>`).
        public let from: String
        public let to: String
        /// The replica that created the renamed entry, and its name (``ReplicaName``) when it has one.
        public let owner: ReplicaID
        public var ownerName: String?
        /// The replica that created the entry that kept the name (first), and its name.
        public let keeper: ReplicaID
        public var keeperName: String?
        /// Whether the merging replica created the renamed entry (its own entry is under another name now), and
        /// whether it created the one that kept the name.
        public let yours: Bool
        public let keptByYou: Bool
        /// Whether the renamed entry was last changed after the one that kept the name: a reader of `from` gets the
        /// older value now.
        public let renamedIsNewer: Bool

        public init(
            from: String, to: String, owner: ReplicaID, ownerName: String? = nil, keeper: ReplicaID, keeperName: String? = nil,
            yours: Bool, keptByYou: Bool, renamedIsNewer: Bool
        ) {
            (self.from, self.to, self.owner, self.ownerName, self.keeper, self.keeperName) = (from, to, owner, ownerName, keeper, keeperName)
            (self.yours, self.keptByYou, self.renamedIsNewer) = (yours, keptByYou, renamedIsNewer)
        }

        /// The owner for a person: its name, else `replica <id>`.
        public var ownerDescription: String { ownerName ?? "replica \(owner)" }
        /// The keeper for a person: its name, else `replica <id>`.
        public var keeperDescription: String { keeperName ?? "replica \(keeper)" }
    }

    /// An entry whose change in ours lost to a later one (``lostEdits``).
    public struct LostEdit: Sendable, Equatable {
        /// The entry's name after the merge.
        public let name: String
        /// The replica whose change won, and its name (``ReplicaName``) when it has one.
        public let winner: ReplicaID
        public let winnerName: String?
        /// The replica that made ours's change (the one that lost).
        public let loser: ReplicaID
        /// Ours's change's number in the entry's history after the merge (1 the newest earlier version).
        public let version: Int

        public init(name: String, winner: ReplicaID, winnerName: String?, loser: ReplicaID, version: Int) {
            self.name = name
            self.winner = winner
            self.winnerName = winnerName
            self.loser = loser
            self.version = version
        }

        /// The winner for a person: its name, else `replica <id>`.
        public var winnerDescription: String { winnerName ?? "replica \(winner)" }
    }

    /// An entry whose change in ours won over a concurrent one of the other side (``wonConflicts``).
    public struct WonConflict: Sendable, Equatable {
        /// The entry's name after the merge.
        public let name: String
        /// The replica whose change lost, and its name (``ReplicaName``) when it has one.
        public let loser: ReplicaID
        public let loserName: String?
        /// The lost change's number in the entry's history after the merge (1 the newest earlier version).
        public let version: Int

        public init(name: String, loser: ReplicaID, loserName: String?, version: Int) {
            self.name = name
            self.loser = loser
            self.loserName = loserName
            self.version = version
        }

        /// The loser for a person: its name, else `replica <id>`.
        public var loserDescription: String { loserName ?? "replica \(loser)" }
    }

    /// An entry of ours renamed on the other side (``moved``).
    public struct Moved: Sendable, Equatable {
        public let from: String
        public let to: String
        /// The replica whose change renamed it, and its name when it has one.
        public let by: ReplicaID
        public var byName: String?

        public init(from: String, to: String, by: ReplicaID, byName: String? = nil) {
            (self.from, self.to, self.by, self.byName) = (from, to, by, byName)
        }

        /// The renamer for a person: its name, else `replica <id>`.
        public var byDescription: String { byName ?? "replica \(by)" }
    }

    /// An entry changed on one side and deleted on the other (``cameBack``, ``keptDeletions``): who did which.
    public struct NamedBack: Sendable, Equatable {
        public let from: String
        public let to: String

        public init(from: String, to: String) { (self.from, self.to) = (from, to) }
    }

    public struct Attribution: Sendable, Equatable {
        /// The entry's name after the merge (a deleted entry's: the name its kept change has).
        public let name: String
        /// The replica whose change it is, and its name (``ReplicaName``) when it has one.
        public let changer: ReplicaID
        public var changerName: String?
        /// The replica that deleted it (nil: not known, a deletion forgotten since) and its name.
        public let deleter: ReplicaID?
        public var deleterName: String?
        /// Whether the merging replica made the change, the deletion.
        public let changedByYou: Bool
        public let deletedByYou: Bool

        public init(
            name: String, changer: ReplicaID, changerName: String? = nil, deleter: ReplicaID?, deleterName: String? = nil,
            changedByYou: Bool, deletedByYou: Bool
        ) {
            (self.name, self.changer, self.changerName, self.deleter, self.deleterName) = (name, changer, changerName, deleter, deleterName)
            (self.changedByYou, self.deletedByYou) = (changedByYou, deletedByYou)
        }

        /// The changer for a person: its name, else `replica <id>`.
        public var changerDescription: String { changerName ?? "replica \(changer)" }
        /// The deleter for a person: its name, else `replica <id>` (nil: not known).
        public var deleterDescription: String? { deleterName ?? deleter.map { "replica \($0)" } }
    }

    public init() {}

    /// Whether the merge deletes many of ours's `count` entries at once: more than 10, and more than a tenth of them
    /// (what a merge or sync does only when asked: ``VaultError/massDeletion(path:names:)``).
    public func isMassDeletion(outOf count: Int) -> Bool { deleted.count > 10 && deleted.count * 10 > count }

    /// Whether the merge changed nothing of ours.
    public var isEmpty: Bool {
        added.isEmpty && updated.isEmpty && deleted.isEmpty && resurrected.isEmpty && conflicts.isEmpty && renamed.isEmpty && moved.isEmpty
            && namedBack.isEmpty && keptDeleted.isEmpty
    }
}

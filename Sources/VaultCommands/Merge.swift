import ArgumentParser
import FoundationEssentials
import Glibc
import VaultAge
import VaultCore
import VaultSyncCore
import VaultTerminal

/// `vault merge OTHER`: another copy of the same vault (a USB stick, a backup, Syncthing's `*.sync-conflict-*`
/// file) merged into this one, entry by entry (``VaultDocument/merge(_:_:now:)``), never asking anything while
/// merging; through the agent too.
package struct Merge: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Merge another copy of this vault into it, entry by entry, and say what changed.",
        discussion: """
            Per entry the later change wins (hybrid logical clocks, not file times); a change made on both sides keeps the other one in the entry's history, marked conflict ('vault history NAME'), and is counted once, as a conflict (not also updated): its line says whose change lost, yours ('your change to NAME lost to a later one from ...') or theirs ('conflict: NAME: your change won over ...'s'); a deletion wins over an older change, and a change made after a deletion brings the entry back. Two entries that end up with one name: the one created first keeps it (on every machine alike), the other gets '~' and the start of its id; the merge that does it says so once, whose entry it was ('your NAME is now NAME~…: … created NAME first'), and when the renamed one holds the newer value ('vault mv' renames either); once the one that kept the name is gone, the other has it again ('NAME~… is NAME again'). Merging the same copy again changes nothing. Another vault (another vault id) is refused with nothing written, and so is (exit 6) a copy with a clock more than a day ahead of this machine's and the vault's (clock_ahead: 'vault repair --clocks' on the machine that wrote it) or one that claims changes this machine never made (untrusted_copy). A merge that would delete more than 10 entries and more than a tenth of the vault asks on a terminal, else needs --accept-deletions (exit 1, mass_deletion, naming them). Format version 2 on both sides.
            """)

    @Argument(help: ArgumentHelp("The other copy's file.", valueName: "other"), completion: .file())
    var other: String

    @Flag(help: "Say what the merge would change, and write nothing.")
    var dryRun = false

    @Flag(help: "Merge even when the other copy deletes more than 10 entries and more than a tenth of the vault (asked on a terminal).")
    var acceptDeletions = false

    @OptionGroup var otherPassphrase: SecretSourceOptions<OtherPassphraseSecret>

    /// The most bytes read of the other copy: a vault holds at most 1 GiB of plaintext, plus its header.
    static let largestFile = VaultFileShape.largestFile

    @OptionGroup var options: VaultOptions

    package func run() throws {
        try reportingErrors(json: options.json) {
            try checkNameArgumentIsUTF8(other)
            // Read before the vault is opened: a missing or unreadable file asks for no passphrase.
            let bytes = try Self.read(other)
            // With an identity, the other copy's key may come from its x25519 stanza (a removal made elsewhere).
            let identities = try options.identityPath.map { try loadIdentities($0, passphraseFrom: options) } ?? []
            let report: MergeReport
            let consent = DeletionConsent(accepted: acceptDeletions)
            var entryCount = 0  // before a dry run: whether the merge would need --accept-deletions
            do {
                report = try withVault(options) { vault in
                    if dryRun, !acceptDeletions { entryCount = try vault.keys().count }
                    return try OtherCopyPassphrase(otherPassphrase, json: options.json).merging(label: other) { passphrase in
                        try consent.merging(label: other) {
                            try merge(bytes, into: vault, identities: identities, otherPassphrase: passphrase, acceptDeletions: $0)
                        }
                    }
                }
            } catch VaultError.missingOwnWrites(let path) where !options.acceptRollback {
                // Two copies written on this machine: this one lacks what was written to the other, which is what
                // the merge brings in. Opened as it is (as with --accept-rollback), here, with the passphrase.
                var lenient = options
                lenient.acceptRollback = true
                report = try withVault(lenient) { vault in
                    try OtherCopyPassphrase(otherPassphrase, json: options.json).merging(label: other) { passphrase in
                        try consent.merging(label: other) {
                            try merge(bytes, into: vault, identities: identities, otherPassphrase: passphrase, acceptDeletions: $0)
                        }
                    }
                }
                if !options.json {
                    writeToStderr("vault: note: '\(TerminalText.escaped(path))' lacked changes made here (to another copy): merged as it was\n")
                }
            }
            if options.json {
                try writeJSON(report.json.merging([
                    "other": other, "dry_run": dryRun, "changed": !report.isEmpty, "written": report.written,
                    "replicas_ahead": report.replicasAhead.map(\.description),
                ] as [String: Any]) { $1 })
                return
            }
            try writeToStdout(Self.describe(report, other: other, into: options.resolvedPath, dryRun: dryRun))
            if dryRun, !acceptDeletions, report.isMassDeletion(outOf: entryCount) {
                writeToStderr("vault: note: the merge would delete \(report.deleted.count) of \(entryCount) entries: it asks on a terminal, else needs --accept-deletions\n")
            }
            for replica in report.replicasAhead {
                writeToStderr("vault: warning: replica \(replica)'s clock is more than a day ahead of this machine's; its entries are kept, its clock is not followed\n")
            }
        }
    }

    /// The report for a person: one summary line, then one line per entry.
    package static func describe(_ report: MergeReport, other: String, into vault: String, dryRun: Bool) -> String {
        func count(_ n: Int, _ word: String) -> String { "\(n) \(word)" + (n == 1 || word.hasSuffix("ed") ? "" : "s") }
        let verb = dryRun ? "would merge" : "merged"
        guard !report.isEmpty else {
            if report.written {
                return "merged '\(TerminalText.escaped(other))' into '\(TerminalText.escaped(vault))': no entry changed (deletions, clocks or histories brought up to date)\n"
            }
            return "'\(TerminalText.escaped(other))' holds nothing new for '\(TerminalText.escaped(vault))'\n"
        }
        var text = "\(verb) '\(TerminalText.escaped(other))' into '\(TerminalText.escaped(vault))': "
            + [count(report.added.count, "added"), count(report.updated.count, "updated"), count(report.deleted.count, "deleted"),
               count(report.resurrected.count, "resurrected"), count(report.conflicts.count, "conflict")].joined(separator: ", ")
            + (report.renamed.isEmpty && report.moved.isEmpty && report.namedBack.isEmpty ? ""
                : ", " + count(report.renamed.count + report.moved.count + report.namedBack.count, "renamed")) + "\n"
        let cameBack = Dictionary(report.cameBack.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for (word, names) in [("added", report.added), ("updated", report.updated), ("deleted", report.deleted),
                              ("resurrected", report.resurrected)] {
            for name in names {
                text += "  \(word): \(TerminalText.escaped(name))"
                if word == "resurrected", let by = cameBack[name] {
                    // Who changed it after whose deletion.
                    let changer = by.changedByYou ? "you" : TerminalText.escaped(by.changerDescription)
                    let deletion = by.deletedByYou ? "your deletion" : by.deleterDescription.map { TerminalText.escaped($0) + "'s deletion" } ?? "its deletion"
                    text += " came back: \(changer) changed it after \(deletion)"
                }
                text += "\n"
            }
        }
        for moved in report.moved {
            text += "  renamed: \(TerminalText.escaped(moved.from)) -> \(TerminalText.escaped(moved.to)) (by \(TerminalText.escaped(moved.byDescription)))\n"
        }
        text += conflictLines(report)
        text += renameLines(report)
        let keptBy = Dictionary(report.keptDeletions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for name in report.keptDeleted {
            let shown = TerminalText.escaped(name)
            guard let by = keptBy[name] else {
                text += "  kept: \(shown) (changed before a deletion it lost to; 'vault restore --deleted NAME' brings the change back)\n"
                continue
            }
            // Whose change lost to whose later deletion, and that the deletion keeps it.
            let change = by.changedByYou ? "your change" : TerminalText.escaped(by.changerDescription) + "'s change"
            let deletion = by.deletedByYou ? "your later deletion" : by.deleterDescription.map { TerminalText.escaped($0) + "'s later deletion" } ?? "a later deletion"
            text += "  kept: \(shown): \(change) lost to \(deletion), which keeps it ('vault restore --deleted \(shown)' brings it back)\n"
        }
        return text
    }

    /// One line per conflict (``MergeReport/conflicts``), in name order: an entry whose change here lost to a later
    /// one (``MergeReport/lostEdits``) says who won and where the lost change is; one whose change here won
    /// (``MergeReport/wonConflicts``) says whose change lost and where it is.
    package static func conflictLines(_ report: MergeReport) -> String {
        let lost = Dictionary(report.lostEdits.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let won = Dictionary(report.wonConflicts.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        return report.conflicts.map { conflict in
            let name = TerminalText.escaped(conflict)
            if let lost = lost[conflict] {
                return "  your change to \(name) lost to a later one from \(TerminalText.escaped(lost.winnerDescription)); "
                    + "'vault history \(name)' shows it as version \(lost.version)\n"
            }
            if let won = won[conflict] {
                return "  conflict: \(name): your change won over \(TerminalText.escaped(won.loserDescription))'s (kept as version \(won.version))\n"
            }
            return "  conflict: \(name)\n"
        }.joined()
    }

    /// One line per entry renamed because another one created first has its name (``MergeReport/renamed``): whose
    /// entry it is (yours, or its creator's), its name now, who created the one that kept the name, and, when the
    /// renamed one was changed last, that the name now reads the older value; then one per entry that has its name
    /// again (``MergeReport/namedBack``).
    package static func renameLines(_ report: MergeReport) -> String {
        report.renamed.map { renamed in
            let from = TerminalText.escaped(renamed.from), to = TerminalText.escaped(renamed.to)
            let owner = renamed.yours ? "your" : TerminalText.escaped(renamed.ownerDescription) + "'s"
            let keeper = renamed.keptByYou ? "you" : TerminalText.escaped(renamed.keeperDescription)
            let older = renamed.renamedIsNewer ? ", so \(from) now reads an older value than \(to)" : ""
            return "  renamed: \(owner) \(from) is now \(to): \(keeper) created \(from) first\(older) ('vault mv' to rename)\n"
        }.joined() + report.namedBack.map { named in
            let to = TerminalText.escaped(named.to)
            return "  renamed: \(TerminalText.escaped(named.from)) is \(to) again: the entry that had the name \(to) is gone\n"
        }.joined()
    }

    /// The other copy's bytes (its permissions are not ours to police: it is ciphertext, maybe on a USB stick).
    /// Merges `bytes` into `vault`; with `identities`, a copy under another data key opens with the first of them
    /// that has a stanza there (before `otherPassphrase` is tried). Through the agent, only the passphrase.
    func merge(
        _ bytes: [UInt8], into vault: any KeyValueVault, identities: [any AgeStanzaIdentity], otherPassphrase: SecureBytes?, acceptDeletions: Bool
    ) throws -> MergeReport {
        guard !identities.isEmpty, let local = vault as? DocumentVault else {
            return try vault.requiringFields().merge(
                bytes, label: other, dryRun: dryRun, otherPassphrase: otherPassphrase, acceptDeletions: acceptDeletions)
        }
        let label = other, key = VaultRecipientStanza.followingKey(identities)
        return try local.merge(
            bytes, label: label, dryRun: dryRun, otherPassphrase: otherPassphrase, otherKey: { try key($0, label) },
            acceptDeletions: acceptDeletions)
    }

    /// The bytes of another copy, read only while they can be a vault (``GitVaultFile/read(_:)``).
    static func read(_ path: String) throws -> [UInt8] { try GitVaultFile.read(path) }
}

/// The passphrase of another copy of a vault sealed with another data key (its passphrase was changed on one side):
/// from `--other-passphrase-fd`/`-file` (read once, however many merges a sync makes), else asked on the terminal
/// the first time a merge needs it.
package final class OtherCopyPassphrase {
    private let source: SecretSourceOptions<OtherPassphraseSecret>
    private var known: SecureBytes?
    private var sourceRead = false
    /// Under `--json` a key followed without asking is said by the report's `followed_key`, not on stderr.
    private let json: Bool

    package init(_ source: SecretSourceOptions<OtherPassphraseSecret>, json: Bool = false) { (self.source, self.json) = (source, json) }

    /// What the vault has now (or, a dry run, would have) of the other copy.
    private static func has(_ what: String, _ report: MergeReport) -> String {
        report.written ? "this vault now has \(what)" : "merging it would give this vault \(what)"
    }

    /// Runs `merge` without another passphrase; when the other copy turns out to be sealed with another key
    /// (``VaultError/otherKey(path:reason:)``), runs it again with that copy's passphrase: from the options, else asked
    /// on the terminal (saying why the key differs, as its key links tell). No passphrase to be had: the error, whose
    /// hint names the options.
    package func merging(label: String, _ merge: (SecureBytes?) throws -> MergeReport) throws -> MergeReport {
        do {
            let report = try merge(nil)
            // Followed with what was held (an identity, or the passphrase's key when a removal kept the passphrase):
            // said, as when a passphrase is asked.
            if let reason = report.followedKey, !json {
                let why = switch reason {
                case .recipientRemoval: "a recipient was removed there, which rotates the key"
                case .passphraseChange: "its passphrase was changed"
                case .other: "its key was changed"
                }
                let now = switch reason {
                case .recipientRemoval: "that copy's key (the passphrase stays as it was)"
                case .passphraseChange: "that copy's passphrase and key"
                case .other: "that copy's key"
                }
                writeToStderr("vault: note: '\(TerminalText.escaped(label))' has another key (\(why)): \(Self.has(now, report))\n")
            }
            return report
        } catch VaultError.otherKey(let path, let reason) {
            if !sourceRead {
                known = try source.read()
                sourceRead = true
            }
            let removal = reason == .recipientRemoval
            if known == nil {
                do {
                    let why = removal ? "another key (a recipient was removed on one side)" : "another passphrase (changed on one side)"
                    known = try VaultOptions.promptTwiceIfNeeded(prompt: "'\(TerminalText.escaped(label))' has \(why); its passphrase: ", confirm: false)
                } catch CLIError.noPassphraseSource {
                    throw VaultError.otherKey(path: path, reason: reason)
                }
            }
            let report = try merge(known)
            let why = removal ? "a recipient was removed there" : "its passphrase was changed"
            writeToStderr("vault: note: '\(TerminalText.escaped(label))' has another key (\(why)): \(Self.has("that copy's passphrase and key", report))\n")
            return report
        }
    }
}

/// `--accept-deletions`, or the question on a terminal, for a merge that would delete more than 10 entries and more
/// than a tenth of the vault at once (``VaultError/massDeletion(path:names:)``): what such a merge needs. Elsewhere
/// (no terminal, git's merge driver) the merge is refused, naming the entries, and nothing is written.
package final class DeletionConsent {
    /// `--accept-deletions`: consent to any deletion, in every attempt.
    package let accepted: Bool
    /// The names a "yes" on the terminal was given for: a later attempt of the same sync (another writer moved the
    /// remote: an S3 412, a git push rejected) that deletes only these is merged without asking again; one that deletes
    /// any other name is asked about again (refused where nothing can ask).
    package private(set) var approved: Set<String> = []
    /// Asks whether `names` may be deleted by merging `label` (throws the mass deletion where nothing can ask); the
    /// terminal by default (``askOnTerminal(_:_:)``).
    private let ask: (_ label: String, _ names: [String]) throws -> Bool

    package init(accepted: Bool, ask: @escaping (_ label: String, _ names: [String]) throws -> Bool = DeletionConsent.askOnTerminal) {
        self.accepted = accepted
        self.ask = ask
    }

    /// Runs `merge` (its argument: whether deletions are accepted); a mass deletion refused is asked about (unless
    /// every name it deletes was consented to already), and merged again, accepting, on yes.
    package func merging(label: String, _ merge: (Bool) throws -> MergeReport) throws -> MergeReport {
        if accepted { return try merge(true) }
        do {
            return try merge(false)
        } catch VaultError.massDeletion(let path, let names) {
            if !approved.isSuperset(of: names) {
                guard try ask(path, names) else {
                    throw CLIError.message("nothing merged: the deletions were not accepted", exitCode: Exit.failure)
                }
                approved.formUnion(names)
            }
            return try merge(true)
        }
    }

    /// The terminal's question; with no terminal, the mass deletion is refused (``VaultError/massDeletion(path:names:)``).
    package static func askOnTerminal(_ label: String, _ names: [String]) throws -> Bool {
        guard isatty(0) == 1, let terminal = Terminal.controlling() else { throw VaultError.massDeletion(path: label, names: names) }
        let shown = names.prefix(20).map { "  \(TerminalText.escaped($0))\n" }.joined() + (names.count > 20 ? "  … and \(names.count - 20) more\n" : "")
        writeToStderr("vault: merging '\(TerminalText.escaped(label))' deletes \(names.count) entries:\n" + shown)
        let answer = try terminal.readLine(prompt: "Delete these \(names.count) entries? [y/N] ")
        let text = answer.map { String(decoding: $0.unprotectedBytes, as: UTF8.self) } ?? ""
        return ["y", "yes"].contains(text.trimmingCharacters(in: .whitespaces).lowercased())
    }
}

extension MergeReport {
    /// ``wonConflicts`` for `--json`: per entry its name, the loser (its name, `null` when it has none, and its
    /// replica id) and the lost change's version number.
    package var wonConflictsJSON: [[String: Any]] {
        wonConflicts.map { ["name": $0.name, "loser": $0.loserName as Any, "loser_replica": $0.loser.description, "version": $0.version] }
    }

    /// ``renamed`` for `--json`: per entry the name it had and has, its creator (`owner`, its name or `null`, and its
    /// replica id), the creator of the one that kept the name (`kept_by`), whether the renamed one is this replica's
    /// (`yours`) and whether it was changed after the one that kept the name (`newer`).
    package var renamedJSON: [[String: Any]] {
        renamed.map {
            ["from": $0.from, "to": $0.to, "owner": $0.ownerName as Any, "owner_replica": $0.owner.description,
             "kept_by": $0.keeperName as Any, "kept_by_replica": $0.keeper.description, "yours": $0.yours, "newer": $0.renamedIsNewer]
        }
    }

    /// ``moved`` for `--json`: per entry the name it had and has, and who renamed it (`by`, its name or `null`, and its
    /// replica id).
    package var movedJSON: [[String: Any]] {
        moved.map { ["from": $0.from, "to": $0.to, "by": $0.byName as Any, "by_replica": $0.by.description] }
    }

    /// What a merge did, for `--json` (`vault merge`'s, `vault sync`'s): the entries by what happened to them, who did
    /// which, and `followed_key`: why the other copy's key was taken (`recipient_removal`, `passphrase_change`,
    /// `other`), `null` when the key stayed.
    package var json: [String: Any] {
        [
            "added": added, "updated": updated, "deleted": deleted, "resurrected": resurrected, "conflicts": conflicts,
            "kept_deleted": keptDeleted, "lost": lostEditsJSON, "won": wonConflictsJSON, "renamed": renamedJSON, "moved": movedJSON,
            "named_back": namedBack.map { ["from": $0.from, "to": $0.to] },
            "resurrected_by": Self.attributionsJSON(cameBack), "kept_deleted_by": Self.attributionsJSON(keptDeletions),
            "followed_key": followedKey.map { reason -> String in
                switch reason {
                case .recipientRemoval: "recipient_removal"
                case .passphraseChange: "passphrase_change"
                case .other: "other"
                }
            } as Any,
        ]
    }

    /// ``cameBack`` or ``keptDeletions`` for `--json`: per entry its name, who changed it (`changed_by`, its name or
    /// `null`, and its replica id) and who deleted it (`deleted_by`, `deleted_by_replica`: `null` when not known).
    package static func attributionsJSON(_ attributions: [Attribution]) -> [[String: Any]] {
        attributions.map {
            ["name": $0.name, "changed_by": $0.changerName as Any, "changed_by_replica": $0.changer.description,
             "deleted_by": $0.deleterName as Any, "deleted_by_replica": $0.deleter?.description as Any]
        }
    }

    /// ``lostEdits`` for `--json`: per entry its name, the winner (its name, `null` when it has none, and its replica
    /// id) and the lost change's version number.
    package var lostEditsJSON: [[String: Any]] {
        lostEdits.map {
            ["name": $0.name, "winner": $0.winnerName as Any, "winner_replica": $0.winner.description,
             "replica": $0.loser.description, "version": $0.version]
        }
    }
}

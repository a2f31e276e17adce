/// Why a file is refused as corrupt: a stable machine code (``code``) and the message text (``description``).
///
/// Every case is found by structure alone (lengths, magic, flags, padding), before or after decryption; none
/// carries a secret.
public enum Corruption: Equatable, Sendable, CustomStringConvertible {
    /// The file is shorter than its fixed parts, or than the header says (`byteCount`: its size).
    case truncated(byteCount: Int)
    /// The file does not start with the vault magic.
    case badMagic
    /// The header sets flags this version does not know.
    case unknownFlags(UInt8)
    /// The file is larger than the format's maximum (``VaultFormat/maximumFileByteCount``); refused before
    /// it is read.
    case tooLarge(byteCount: Int)
    /// The file's size does not match what the header and the body's length allow.
    case sizeMismatch(byteCount: Int)
    /// The decrypted body is shorter than its fixed fields.
    case plaintextTooShort
    /// The body claims more entries than its bytes can hold.
    case entryCountExceedsData(count: Int)
    /// Entry `index` ends before its fields do.
    case entryTruncated(index: Int)
    /// Entry `index` has a name length of 0 or beyond the limit or the data.
    case badNameLength(index: Int)
    /// Entry `index` has a name that is not UTF-8.
    case nameNotUTF8(index: Int)
    /// Entry `index` has a value length beyond the limit or the data.
    case badValueLength(index: Int)
    /// Two entries have the same name (after Unicode normalisation).
    case duplicateName
    /// The padding after the entries is not all zero, or has the wrong length.
    case badPadding
    /// Version 2: the header's own length is out of range or beyond the file.
    case badHeaderLength(Int)
    /// Version 2: key stanza `index` is malformed (its length, or a known type's fields).
    case badStanza(index: Int)
    /// Version 2: no key stanza of a type this version can open with (an identity or a passphrase).
    case noUsableStanza
    /// Version 2: more than 256 key stanzas (``DocumentFormat/maximumStanzaCount``).
    case tooManyStanzas(count: Int)
    /// Version 2: `x25519` stanza `index` names no `age1…` recipient (its length, prefix or characters).
    case badRecipient(index: Int)
    /// Version 2: the age file of `x25519` stanza `index` is not one age-encryption.org/v1 header with exactly one
    /// `X25519` stanza and its MAC, followed by the STREAM payload of a 32-byte plaintext.
    case badAgeFile(index: Int)
    /// Version 2: two `x25519` stanzas for one recipient (`index`: the second).
    case duplicateRecipient(index: Int)
    /// Version 2: the header's MAC does not match although a stanza opened the data key: the header was changed.
    case headerMACMismatch
    /// Version 2: the body does not open under the data key although the header's MAC matched: it was changed.
    case bodyMACMismatch
    /// Version 2: the body opens but is bound to another header (its first 32 bytes).
    case bodyBindingMismatch
    /// Version 2: entry `index` has a name with a control character.
    case badName(index: Int)
    /// Version 2: entry `index` has a malformed field (name, flags or length) or two fields of one name.
    case badField(entry: Int)
    /// Version 2: two entries, or an entry and a tombstone, or two tombstones, have one id.
    case duplicateID
    /// Version 2: a replica table not strictly increasing by replica id, a timestamp naming a replica beyond the
    /// table, or an entry created after it was modified; version 3's seen and dropped times and tombstone stamps
    /// out of their bounds. Which rule: ``ClockRule`` (one code, `bad_clock`, for all).
    case badClock(ClockRule)
    /// Version 2: a variable-length integer (`uvar`) not in its shortest form or beyond 64 bits.
    case badVarint
    /// Version 2: entry `index` has a history beyond its caps or malformed.
    case badHistory(entry: Int)
    /// Version 3: a tombstone's `kept` byte other than 0 or 1.
    case badTombstone
    /// Version 3: `reason` found in the version tombstone `index` keeps (its name, stamp or fields): the code is
    /// `reason`'s, the message names the tombstone rather than an entry.
    indirect case inKeptVersion(tombstone: Int, Corruption)

    /// A stable snake_case code, for programs (JSON, logs): it does not change when the wording does.
    public var code: String {
        switch self {
        case .truncated: return "truncated"
        case .badMagic: return "bad_magic"
        case .unknownFlags: return "unknown_flags"
        case .tooLarge: return "too_large"
        case .sizeMismatch: return "size_mismatch"
        case .plaintextTooShort: return "plaintext_too_short"
        case .entryCountExceedsData: return "entry_count_exceeds_data"
        case .entryTruncated: return "entry_truncated"
        case .badNameLength: return "bad_name_length"
        case .nameNotUTF8: return "name_not_utf8"
        case .badValueLength: return "bad_value_length"
        case .duplicateName: return "duplicate_name"
        case .badPadding: return "bad_padding"
        case .badHeaderLength: return "bad_header_length"
        case .badStanza: return "bad_stanza"
        case .noUsableStanza: return "no_usable_stanza"
        case .tooManyStanzas: return "too_many_stanzas"
        case .badRecipient: return "bad_recipient"
        case .badAgeFile: return "bad_age_file"
        case .duplicateRecipient: return "duplicate_recipient"
        case .headerMACMismatch: return "header_mac_mismatch"
        case .bodyMACMismatch: return "body_mac_mismatch"
        case .bodyBindingMismatch: return "body_binding_mismatch"
        case .badName: return "bad_name"
        case .badField: return "bad_field"
        case .duplicateID: return "duplicate_id"
        case .badClock: return "bad_clock"
        case .inKeptVersion(_, let reason): return reason.code
        case .badHistory: return "bad_history"
        case .badTombstone: return "bad_tombstone"
        case .badVarint: return "bad_varint"
        }
    }

    public var description: String {
        switch self {
        case .truncated(let count): return "truncated (\(count) bytes)"
        case .badMagic: return "not a vault file (bad magic)"
        case .unknownFlags(let flags): return "unknown flags 0x\(String(flags, radix: 16))"
        case .tooLarge(let count): return "larger than a vault can be (\(count) bytes)"
        case .sizeMismatch(let count): return "truncated or extended (\(count) bytes)"
        case .plaintextTooShort: return "plaintext too short"
        case .entryCountExceedsData(let count): return "entry count \(count) exceeds the data"
        case .entryTruncated(let index): return "entry \(index) truncated"
        case .badNameLength(let index): return "entry \(index) has a bad name length"
        case .nameNotUTF8(let index): return "entry \(index) has a name that is not UTF-8"
        case .badValueLength(let index): return "entry \(index) has a bad value length"
        case .duplicateName: return "duplicate entry name"
        case .badPadding: return "bad padding"
        case .badHeaderLength(let count): return "bad header length \(count)"
        case .badStanza(let index): return "key stanza \(index) is malformed"
        case .noUsableStanza: return "no key stanza this version can open"
        case .tooManyStanzas(let count): return "\(count) key stanzas (at most 256)"
        case .badRecipient(let index): return "key stanza \(index) names no age recipient"
        case .badAgeFile(let index): return "key stanza \(index) holds a malformed age file"
        case .duplicateRecipient(let index): return "key stanza \(index) repeats a recipient"
        case .headerMACMismatch: return "the header's MAC does not match (the header was changed)"
        case .bodyMACMismatch: return "the body does not open under the vault's key (it was changed)"
        case .bodyBindingMismatch: return "the body belongs to another header"
        case .badName(let index): return "entry \(index) has a name with a control character"
        case .badField(let index): return "entry \(index) has a malformed field"
        case .duplicateID: return "duplicate entry id"
        case .badClock(let rule): return "malformed clocks: \(rule)"
        case .inKeptVersion(let tombstone, let reason):
            // The inner message names the position an entry would have ("entry N ..."): name the tombstone instead.
            let text = reason.description
            let words = text.split(separator: " ", maxSplits: 2)
            if words.count == 3, words[0] == "entry", Int(words[1]) != nil { return "tombstone \(tombstone)'s kept version \(words[2])" }
            return "tombstone \(tombstone)'s kept version: \(text)"
        case .badHistory(let index): return "entry \(index) has a malformed history"
        case .badTombstone: return "a tombstone is malformed"
        case .badVarint: return "a number not in its shortest form"
        }
    }
}

/// Which clock rule a file broke (docs/FORMAT.md, versions 2 and 3): ``Corruption/badClock(_:)``'s detail, in the
/// message only (the code stays `bad_clock`).
public enum ClockRule: Equatable, Sendable, CustomStringConvertible {
    /// Replica `index` of the table does not have a larger id than the one before it.
    case replicaOrder(index: Int)
    /// Replica `index`'s `dropped` mark is above its own time.
    case droppedAboveTime(index: Int)
    /// Replica `index`'s `seen_count` is above the number of replicas.
    case seenCountAboveTable(index: Int)
    /// Replica `index`'s `seen` list names a replica beyond the table, or not in increasing order.
    case seenIndex(index: Int)
    /// Replica `index` has seen time 0 of a replica.
    case seenTimeZero(index: Int)
    /// Replica `index` has seen a time above the table's time of that replica.
    case seenAboveTable(index: Int)
    /// A stamp of `place` names a replica beyond the table.
    case unknownReplica(place: String)
    /// Entry `index`'s age is above its modified time: it would have been created before the epoch.
    case createdBeforeEpoch(entry: Int)
    /// Tombstone `index` deleted a version (`of`) later than the deletion.
    case deletedVersionAfterDeletion(tombstone: Int)
    /// Tombstone `index` keeps a version not made after the version it deleted and before the deletion.
    case keptOutsideDeletion(tombstone: Int)

    /// The rule's name and its argument (an index, or the place), as strings: the agent's wire carries them.
    public var parts: (name: String, argument: String) {
        switch self {
        case .replicaOrder(let index): return ("replica_order", "\(index)")
        case .droppedAboveTime(let index): return ("dropped_above_time", "\(index)")
        case .seenCountAboveTable(let index): return ("seen_count_above_table", "\(index)")
        case .seenIndex(let index): return ("seen_index", "\(index)")
        case .seenTimeZero(let index): return ("seen_time_zero", "\(index)")
        case .seenAboveTable(let index): return ("seen_above_table", "\(index)")
        case .unknownReplica(let place): return ("unknown_replica", place)
        case .createdBeforeEpoch(let index): return ("created_before_epoch", "\(index)")
        case .deletedVersionAfterDeletion(let index): return ("deleted_version_after_deletion", "\(index)")
        case .keptOutsideDeletion(let index): return ("kept_outside_deletion", "\(index)")
        }
    }

    /// The rule ``parts`` gave.
    public init?(name: String, argument: String) {
        if name == "unknown_replica" { self = .unknownReplica(place: argument); return }
        guard let index = Int(argument) else { return nil }
        let made: [(Int) -> ClockRule] = [
            { .replicaOrder(index: $0) }, { .droppedAboveTime(index: $0) }, { .seenCountAboveTable(index: $0) },
            { .seenIndex(index: $0) }, { .seenTimeZero(index: $0) }, { .seenAboveTable(index: $0) },
            { .createdBeforeEpoch(entry: $0) }, { .deletedVersionAfterDeletion(tombstone: $0) }, { .keptOutsideDeletion(tombstone: $0) },
        ]
        guard let rule = made.lazy.map({ $0(index) }).first(where: { $0.parts.name == name }) else { return nil }
        self = rule
    }

    public var description: String {
        switch self {
        case .replicaOrder(let index): return "replica \(index) of the table is not above the one before it (the table is ordered by replica id)"
        case .droppedAboveTime(let index): return "replica \(index)'s dropped mark is above its time"
        case .seenCountAboveTable(let index): return "replica \(index) has seen more replicas than the table holds"
        case .seenIndex(let index): return "replica \(index)'s seen list names a replica beyond the table or out of order"
        case .seenTimeZero(let index): return "replica \(index) has seen time 0 of a replica"
        case .seenAboveTable(let index): return "replica \(index) has seen a time above the table's time of that replica"
        case .unknownReplica(let place): return "\(place) names a replica beyond the table"
        case .createdBeforeEpoch(let index): return "entry \(index)'s age is above its modified time"
        case .deletedVersionAfterDeletion(let index): return "tombstone \(index) deleted a version later than the deletion"
        case .keptOutsideDeletion(let index): return "tombstone \(index) keeps a version not made between the version deleted and the deletion"
        }
    }
}

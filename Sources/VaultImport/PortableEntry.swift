import Foundation
import VaultCore

/// The values of one import, in one guarded region that grows as a parser reads (``SecretBuffer``): an import of
/// thousands of entries holds one region, not one per value (each guarded region costs several memory mappings, and
/// a process has at most 65,530 of them).
///
/// Parsers read text through Foundation (JSON, XML), which holds ordinary `String` copies of every value until the
/// parse ends: that copy cannot be avoided with these parsers, and is released when the parse returns. Values are
/// copied here as soon as each item is read.
// Unchecked: one parser fills it on one thread; the import then hands it on and it is only read (its values copied
// into the vault), never appended to by two threads at once.
public final class ValueArena: @unchecked Sendable {
    private let buffer = SecretBuffer()

    public init() {}

    /// Appends `text`'s UTF-8 bytes; returns where they are.
    func append(_ text: String) -> Range<Int> {
        var text = text
        return text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// Appends `bytes`; returns where they are.
    func append(_ bytes: UnsafeRawBufferPointer) -> Range<Int> {
        let start = buffer.count
        buffer.append(bytes)
        return start..<buffer.count
    }

    /// A field of text, secret or not.
    public func field(_ name: String, _ text: String, secret: Bool = false) -> PortableField {
        PortableField(name: name, isSecret: secret, values: self, range: append(text))
    }

    /// A field of any bytes.
    public func field(_ name: String, bytes: [UInt8], secret: Bool) -> PortableField {
        PortableField(name: name, isSecret: secret, values: self, range: bytes.withUnsafeBytes { append($0) })
    }

    func withUnsafeBytes<R>(_ range: Range<Int>, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }

    /// Every value, as one ``SecureBytes`` (the ranges of the fields stay valid in it).
    public func sealed() -> SecureBytes { buffer.secureBytes() }
}

/// A field of an entry on its way into a vault: its name, whether it is secret, and where its value is in the
/// import's ``ValueArena``.
public struct PortableField: Sendable {
    public var name: String
    public var isSecret: Bool
    public let values: ValueArena
    public let range: Range<Int>

    /// The value's bytes (the pointer must not escape).
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try values.withUnsafeBytes(range, body)
    }

    /// A copy in ordinary memory: tests only.
    public var unprotectedBytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// Whether the value is `other`'s bytes (in constant time for values of one length).
    public func hasValue(_ other: SecureBytes) -> Bool {
        withUnsafeBytes { mine in
            other.withUnsafeBytes { theirs in
                guard mine.count == theirs.count else { return false }
                var difference: UInt8 = 0
                for index in 0..<mine.count { difference |= mine[index] ^ theirs[index] }
                return difference == 0
            }
        }
    }

    func renamed(_ name: String) -> PortableField { PortableField(name: name, isSecret: isSecret, values: values, range: range) }
}

/// One version of an entry: its fields in order and when it was made (milliseconds since the Unix epoch; `nil` when
/// the source does not say).
public struct PortableVersion: Sendable {
    public var fields: [PortableField]
    public var modified: UInt64?
    /// Whether a merge kept this version as the loser of a conflict (vault's own export only).
    public var conflict: Bool

    public init(fields: [PortableField], modified: UInt64? = nil, conflict: Bool = false) {
        self.fields = fields
        self.modified = modified
        self.conflict = conflict
    }

    /// The field named `name`, or `nil`.
    public func field(_ name: String) -> PortableField? { fields.first { $0.name == name } }

    /// An earlier version as a password history tells it (Bitwarden, 1Password): these fields with `password` (the
    /// old one) in place of the current one, made at `modified`.
    func withPassword(_ password: String, modified: UInt64?, values: ValueArena) -> PortableVersion {
        var version = self
        version.modified = modified
        let field = values.field("password", password, secret: true)
        if let index = version.fields.firstIndex(where: { $0.name == "password" }) {
            version.fields[index] = field
        } else {
            version.fields.insert(field, at: 0)
        }
        return version
    }
}

/// An entry read from another password manager's export (or written to one): its name as path components (folders,
/// groups, vaults, then the title), its current version, its earlier versions newest first, and when it was created.
public struct PortableEntry: Sendable {
    /// The name's components: folders or groups, then the title. Joined with `/` into the vault's name.
    public var path: [String]
    public var current: PortableVersion
    /// Newest first, as a vault keeps them.
    public var history: [PortableVersion]
    /// Milliseconds since the Unix epoch, `nil` when unknown.
    public var created: UInt64?
    /// How a report names the item in the source: `line 12`, `item 3`, a pass file's path (never a value).
    public var origin: String

    public init(path: [String], current: PortableVersion, history: [PortableVersion] = [], created: UInt64? = nil, origin: String) {
        self.path = path
        self.current = current
        self.history = history
        self.created = created
        self.origin = origin
    }
}

/// Something of the source that is not imported, and why (never a value).
public struct SkippedItem: Sendable, Equatable {
    /// The item as the source names it: `line 12`, `item 3 ('Visa')`, `web/site.gpg`.
    public var item: String
    public var reason: String

    public init(item: String, reason: String) {
        self.item = item
        self.reason = reason
    }
}

/// What a parser read from a source: the entries in the source's order, their values, and what it skipped.
public struct ParsedSource: Sendable {
    public var entries: [PortableEntry]
    public var skipped: [SkippedItem]
    public let values: ValueArena

    public init(entries: [PortableEntry] = [], skipped: [SkippedItem] = [], values: ValueArena = ValueArena()) {
        self.entries = entries
        self.skipped = skipped
        self.values = values
    }
}

/// The bounds every import keeps, so that memory stays bounded whatever the input: a source larger than these is
/// refused before it is parsed (``ImportError/tooLarge(what:limit:)``).
public enum ImportLimits {
    /// The largest input file (a CSV, JSON or XML export, or `export.data` inside a 1PUX archive): 64 MiB. A parse
    /// keeps the input and its tree in memory (Foundation's JSON and XML parsers), a few times its size at most.
    public static let maximumInputByteCount = 64 << 20
    /// The most entries one import makes: 100,000 (one atomic write; through the agent, one message).
    public static let maximumEntryCount = 100_000
    /// The largest decrypted file of a pass store: 16 MiB; and all of them together: ``maximumInputByteCount``.
    public static let maximumPassFileByteCount = 16 << 20
    /// The most fields one import changes in entries the vault already has: 10,000. An added entry's values share
    /// one guarded region; a changed field's value is a region of its own, and a process has a bounded number of
    /// them (each is several memory mappings of the 65,530 a process may have).
    public static let maximumChangedFieldCount = 10_000
}

/// The names a source's entries get in the vault.
public enum EntryNaming {
    /// The name of `path` under `prefix`: its components joined with `/`, control characters replaced by spaces,
    /// components of nothing but spaces dropped (other spaces kept: a vault's own names come back as they were); a
    /// title that is empty becomes `untitled`. `prefix` (its own `/` kept) comes first, followed by one `/`.
    public static func name(of path: [String], prefix: String?) -> String {
        var parts = path.map(clean).filter { !isBlank($0) }
        if path.last.map({ isBlank(clean($0)) }) ?? true { parts.append("untitled") }
        var name = parts.joined(separator: "/")
        if let prefix, !prefix.isEmpty { name = (prefix.hasSuffix("/") ? prefix : prefix + "/") + name }
        return name
    }

    static func isBlank(_ text: String) -> Bool { text.trimmingCharacters(in: .whitespaces).isEmpty }

    /// `component` with control characters as spaces (a name holds none).
    static func clean(_ component: String) -> String {
        String(String.UnicodeScalarView(component.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
    }

    /// `names` made unique, in order: the first of a name keeps it, the next ones get ` (2)`, ` (3)`, … (the lowest
    /// number whose name is free: neither taken in the source nor given before).
    public static func unique(_ names: [String]) -> [String] {
        var taken = Set(names)
        var given: Set<String> = []
        return names.map { name in
            if given.insert(name).inserted { return name }
            var number = 2
            while taken.contains("\(name) (\(number))") { number += 1 }
            let renamed = "\(name) (\(number))"
            taken.insert(renamed)
            given.insert(renamed)
            return renamed
        }
    }
}

/// Builds an entry's fields in order, keeping names unique and valid (1 to 255 bytes of UTF-8 without control
/// characters: a second `url` becomes `url (2)`), and leaving out empty values.
struct FieldList {
    private(set) var fields: [PortableField] = []
    let values: ValueArena

    init(_ values: ValueArena) { self.values = values }

    /// Adds `text` as field `name` unless it is empty (after trimming whitespace when `trim`).
    mutating func add(_ name: String, _ text: String?, secret: Bool = false, trim: Bool = false) {
        guard var text else { return }
        if trim { text = text.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard !text.isEmpty else { return }
        add(values.field(name, text, secret: secret))
    }

    mutating func add(_ field: PortableField) {
        var base = EntryNaming.clean(field.name).trimmingCharacters(in: .whitespaces)
        if base.isEmpty { base = "field" }
        while base.utf8.count > 240 { base.removeLast() }
        var name = base
        var number = 2
        while fields.contains(where: { $0.name == name }) {
            name = "\(base) (\(number))"
            number += 1
        }
        fields.append(field.name == name ? field : field.renamed(name))
    }

    func has(_ name: String) -> Bool { fields.contains { $0.name == name } }
}

import ArgumentParser
import Glibc
import VaultCore
import VaultTerminal

/// What `vault run` and `vault inject` put where a value goes: an entry's value (its `password` field), or any field
/// of it.
///
/// On the command line and in `--env-file` lines, `ENTRY` is the entry's value, as it always was, and
/// `vault://ENTRY#FIELD` one field (`vault://ENTRY` alone: its value). Entry names hold slashes, so the field is after
/// the one `#`; a `#` or `%` inside a name is written `%23` or `%25` (and any byte may be written `%XX`), as in a URL's
/// path. In a template: `{{ vault "ENTRY" }}` and `{{ vault "ENTRY" "FIELD" }}`.
struct SecretReference: Hashable, CustomStringConvertible {
    let entry: String
    /// `nil`: the entry's value (what `vault get ENTRY` prints).
    let field: String?

    init(entry: String, field: String? = nil) {
        self.entry = entry
        self.field = field
    }

    static let scheme = "vault://"

    /// `ENTRY`, or `vault://ENTRY[#FIELD]` with `%XX` escapes.
    static func parse(_ text: String) throws -> SecretReference {
        guard text.hasPrefix(scheme) else { return SecretReference(entry: text) }
        let rest = text.dropFirst(scheme.count)
        let parts = rest.split(separator: "#", maxSplits: 2, omittingEmptySubsequences: false)
        let usage = "expected vault://ENTRY or vault://ENTRY#FIELD ('#' and '%' in a name written %23 and %25), got '\(TerminalText.escaped(text))'"
        guard parts.count <= 2, let entry = decoded(parts[0]), !entry.isEmpty else { throw ValidationError(usage) }
        guard parts.count == 2 else { return SecretReference(entry: entry) }
        guard let field = decoded(parts[1]), !field.isEmpty else { throw ValidationError(usage) }
        return SecretReference(entry: entry, field: field)
    }

    /// `text` with its `%XX` escapes decoded; `nil` for a `%` not followed by two hex digits, or bytes that are not UTF-8.
    static func decoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(), isxdigit(Int32(high)) != 0, isxdigit(Int32(low)) != 0,
                  let byte = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// For messages: the entry, and the field when one is named.
    var description: String {
        field.map { "field '\(TerminalText.escaped($0))' of entry '\(TerminalText.escaped(entry))'" } ?? "entry '\(TerminalText.escaped(entry))'"
    }

    /// The value this reference names in `vault`, or `nil` when the entry does not exist.
    ///
    /// - Throws: ``VaultError/noSuchField(key:field:)`` for an entry without the field; `needs_version_2` for a field
    ///   of a version-1 vault.
    func value(in vault: any KeyValueVault) throws -> SecureBytes? {
        guard let field else { return try vault.getBytes(entry) }
        guard let record = try vault.requiringFields().record(of: entry) else { return nil }
        guard let found = record.field(field) else { throw VaultError.noSuchField(key: entry, field: field) }
        return found.value
    }

    /// Every value `references` name in `vault`, each read once. A missing entry: `missing(reference)` is thrown.
    static func values(
        _ references: [SecretReference], in vault: any KeyValueVault, missing: (SecretReference) throws -> Never
    ) throws -> [SecretReference: SecureBytes] {
        var values: [SecretReference: SecureBytes] = [:]
        for reference in references where values[reference] == nil {
            guard let value = try reference.value(in: vault) else { try missing(reference) }
            values[reference] = value
        }
        return values
    }
}

import ArgumentParser
import CVaultSystem
import Glibc
import VaultCore
import VaultTerminal

/// What `vault run` and `vault inject` put where a value goes: an entry's value (its `password` field), any field
/// of it, or the current one-time code of its `otp` field.
///
/// On the command line and in `--env-file` lines, `ENTRY` is the entry's value, as it always was, and
/// `vault://ENTRY#FIELD` one field (`vault://ENTRY` alone: its value). Entry names hold slashes, so the field is after
/// the one `#`; a `#` or `%` inside a name is written `%23` or `%25` (and any byte may be written `%XX`), as in a URL's
/// path. `vault-otp://ENTRY` (the same escapes) is the code `vault otp ENTRY` prints: a scheme of its own, since any
/// name can be a field's. In a template: `{{ vault "ENTRY" }}`, `{{ vault "ENTRY" "FIELD" }}` and `{{ otp "ENTRY" }}`.
struct SecretReference: Hashable, CustomStringConvertible {
    let entry: String
    /// `nil`: the entry's value (what `vault get ENTRY` prints), or its code with ``otpCode``.
    let field: String?
    /// The current one-time code of the entry's `otp` field (``OTPCodes``), not a stored value.
    let otpCode: Bool

    init(entry: String, field: String? = nil) {
        self.entry = entry
        self.field = field
        self.otpCode = false
    }

    /// The current one-time code of `entry`.
    init(otpCodeOf entry: String) {
        self.entry = entry
        self.field = nil
        self.otpCode = true
    }

    static let scheme = "vault://"
    static let otpScheme = "vault-otp://"

    /// `ENTRY`, `vault://ENTRY[#FIELD]` or `vault-otp://ENTRY`, with `%XX` escapes.
    static func parse(_ text: String) throws -> SecretReference {
        if text.hasPrefix(otpScheme) {
            guard let entry = decoded(text.dropFirst(otpScheme.count)), !entry.isEmpty else {
                throw ValidationError("expected vault-otp://ENTRY ('%' in a name written %25), got '\(TerminalText.escaped(text))'")
            }
            return SecretReference(otpCodeOf: entry)
        }
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
        if otpCode { return "the one-time code of entry '\(TerminalText.escaped(entry))'" }
        return field.map { "field '\(TerminalText.escaped($0))' of entry '\(TerminalText.escaped(entry))'" } ?? "entry '\(TerminalText.escaped(entry))'"
    }

    /// The value this reference names in `vault`, or `nil` when the entry does not exist.
    ///
    /// - Throws: ``VaultError/noSuchField(key:field:)`` for an entry without the field; `needs_version_2` for a field
    ///   of a version-1 vault.
    func value(in vault: any KeyValueVault) throws -> SecureBytes? {
        if otpCode {
            guard try vault.requiringFields().record(of: entry) != nil else { return nil }
            return try OTPCodes.code(of: entry, in: vault)
        }
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

    /// Runs this very command line in `vault-net` when `references` ask for a one-time code and this process makes
    /// none (`vault`: its HMAC-SHA-1 is swift-crypto's, which `vault` does not link), as `vault clip --otp` does; before
    /// anything secret is read or asked. `stdin`: what this process already read of its stdin (a template), given to
    /// `vault-net` on its stdin again (an in-memory file).
    static func runningCodesInVaultNet(_ references: [SecretReference], stdin: [UInt8]? = nil) throws {
        guard OTPCodes.maker == nil, references.contains(where: \.otpCode) else { return }
        if let stdin {
            let fd = stdin.withUnsafeBytes { vault_secret_memfd("vault-template", $0.baseAddress, UInt($0.count)) }
            guard fd >= 0, dup2(fd, 0) == 0 else { throw VaultError.io(operation: "cannot pass on", path: "stdin", errno: errno) }
            close(fd)
        }
        VaultNetBinary.execute(CommandLine.arguments)
    }
}

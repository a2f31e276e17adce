import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import VaultCore

/// KeePass 2 XML (what `keepassxc-cli export -f xml` and KeePass's "KeePass XML (2.x)" export write), read with
/// Foundation's streaming parser and written for `keepassxc-cli import` (docs/IMPORT-EXPORT.md, "KeePass XML").
enum KeePassXML {
    // MARK: Reading

    /// The entries of a KeePass 2 XML export: groups (the root group left out) become the name's folders; Title,
    /// UserName, Password, URL, Notes, `otp` (and the older `TOTP Seed`/`TOTP Settings` and KeePass's
    /// `TimeOtp-*`, made an otpauth:// URI) and custom strings become fields, protected ones secret; history items
    /// the entry's history; times kept; attachments binary fields (``KeePassBinaries``). Entries in the recycle bin
    /// are skipped, and said so.
    ///
    /// - Throws: ``ImportError/malformed(location:reason:)`` naming the line; ``ImportError/unsupported(reason:hint:)``
    ///   for a document type declaration (never expanded) or values protected with a database's stream key.
    static func read(_ bytes: [UInt8]) throws -> ParsedSource {
        if let offset = find(Array("<!DOCTYPE".utf8), in: bytes) {
            throw ImportError.unsupported(
                reason: "line \(bytes[..<offset].filter { $0 == 0x0A }.count + 1): a document type declaration (a KeePass export has none; entities are never expanded)",
                hint: "export again with 'keepassxc-cli export -f xml DATABASE'")
        }
        let reader = KeePassXMLReader()
        let parser = XMLParser(data: Data(bytes))
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        let ok = parser.parse()
        if let failure = reader.failure { throw failure }
        guard ok else {
            throw ImportError.malformed(location: "line \(max(1, parser.lineNumber))", reason: "not well-formed XML")
        }
        guard reader.sawKeePassFile else {
            throw ImportError.unsupported(reason: "not a KeePass XML file (no <KeePassFile>)", hint: "export with 'keepassxc-cli export -f xml DATABASE'")
        }
        return reader.parsed
    }

    static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        for index in 0...(bytes.count - needle.count) where bytes[index] == needle[0] {
            if bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
        }
        return nil
    }

    /// An entry (or a history item) as the XML gives it.
    final class EntryData {
        let line: Int
        var strings: [(key: String, value: String, protected: Bool)] = []
        var created: UInt64?
        var modified: UInt64?
        var tags = ""
        var attachments: [(name: String, content: KeePassBinaries.Content)] = []
        var history: [EntryData] = []

        init(line: Int) { self.line = line }

        var title: String { strings.first { $0.key == "Title" }?.value ?? "" }

        /// The fields, in vault's order: password, username, url, otp, notes, then the other strings as the file
        /// has them, then tags.
        func version(_ values: ValueArena) -> PortableVersion {
            var byKey: [String: (value: String, protected: Bool)] = [:]
            for string in strings where byKey[string.key] == nil { byKey[string.key] = (string.value, string.protected) }
            var fields = FieldList(values)
            fields.add("password", byKey["Password"]?.value, secret: true)
            fields.add("username", byKey["UserName"]?.value)
            fields.add("url", byKey["URL"]?.value)
            var used: Set<String> = ["Title", "Password", "UserName", "URL", "Notes"]
            if let otp = byKey["otp"]?.value, !otp.isEmpty {
                fields.add("otp", otp, secret: true, trim: true)
                used.insert("otp")
            } else if let seed = byKey["TOTP Seed"]?.value, !seed.isEmpty {
                fields.add("otp", OTPURI.keePassXCLegacy(seed: seed, settings: byKey["TOTP Settings"]?.value, title: title), secret: true)
                used.formUnion(["TOTP Seed", "TOTP Settings"])
            } else if let secret = byKey["TimeOtp-Secret-Base32"]?.value, !secret.isEmpty {
                fields.add("otp", OTPURI.keePass(
                    secret: secret, length: byKey["TimeOtp-Length"]?.value, period: byKey["TimeOtp-Period"]?.value,
                    algorithm: byKey["TimeOtp-Algorithm"]?.value, title: title), secret: true)
                used.formUnion(["TimeOtp-Secret-Base32", "TimeOtp-Length", "TimeOtp-Period", "TimeOtp-Algorithm"])
            }
            fields.add("notes", byKey["Notes"]?.value)
            for string in strings where !used.contains(string.key) {
                used.insert(string.key)
                fields.add(string.key, string.value, secret: string.protected)
            }
            fields.add("tags", tags, trim: true)
            return PortableVersion(fields: fields.fields, modified: modified)
        }
    }

    // MARK: Writing

    /// vault's field names as KeePass's standard strings.
    static let standardKeys = ["password": "Password", "username": "UserName", "url": "URL", "notes": "Notes"]

    /// A group of the tree being written: its entries' names (full, and the title) and subgroups by name.
    final class GroupNode {
        var entries: [(name: String, title: String)] = []
        var groups: [String: GroupNode] = [:]
    }

    /// KeePass 2 XML of every entry of `source`: the names' folders become groups under a root group `vault`, each
    /// entry's versions are read when it is written.
    static func write(_ source: ExportSource, now: UInt64) throws -> ExportResult {
        let root = GroupNode()
        for name in source.names {
            let parts = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            var node = root
            for part in parts.dropLast() {
                if node.groups[part] == nil { node.groups[part] = GroupNode() }
                node = node.groups[part]!
            }
            node.entries.append((name, parts.last ?? ""))
        }
        let out = TextOutput()
        var omitted: [SkippedItem] = []
        let time = Times.iso8601Seconds(milliseconds: now)
        out.append("""
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <KeePassFile>
            \t<Meta>
            \t\t<Generator>vault</Generator>
            \t\t<DatabaseName>vault</DatabaseName>
            \t\t<DatabaseNameChanged>\(time)</DatabaseNameChanged>
            \t\t<MemoryProtection>
            \t\t\t<ProtectTitle>False</ProtectTitle>
            \t\t\t<ProtectUserName>False</ProtectUserName>
            \t\t\t<ProtectPassword>True</ProtectPassword>
            \t\t\t<ProtectURL>False</ProtectURL>
            \t\t\t<ProtectNotes>False</ProtectNotes>
            \t\t</MemoryProtection>
            \t\t<RecycleBinEnabled>False</RecycleBinEnabled>
            \t\t<HistoryMaxItems>\(VaultDocument.maximumHistoryVersions)</HistoryMaxItems>
            \t\t<HistoryMaxSize>6291456</HistoryMaxSize>

            """)
        // The tree first (it finds the attachments), then `<Meta><Binaries>` before it, as readers expect them.
        let tree = TextOutput()
        var attachments = Attachments()
        try writeGroup(root, name: "vault", indent: 2, now: now, source: source, to: tree, omitted: &omitted, attachments: &attachments)
        attachments.write(to: out)
        out.append("\t</Meta>\n\t<Root>\n")
        tree.buffer.withUnsafeBytes { out.buffer.append($0) }
        tree.buffer.wipe()
        out.append("\t\t<DeletedObjects/>\n\t</Root>\n</KeePassFile>\n")
        return ExportResult(data: out.result(), omitted: omitted)
    }

    /// The values written as attachments (fields that are not text XML can carry: the files an import of KeePass
    /// made fields of), by the ID an entry's `<Binary><Value Ref="ID"/>` names; the same bytes once.
    struct Attachments {
        private(set) var values: [SecureBytes] = []

        /// The ID of `value`, added unless the same bytes are there.
        mutating func id(of value: SecureBytes) -> Int {
            if let known = values.firstIndex(where: { $0.count == value.count && $0 == value }) { return known }
            values.append(value)
            return values.count - 1
        }

        /// `<Binaries>`, each value in base64 (uncompressed), when there is any.
        func write(to out: TextOutput) {
            guard !values.isEmpty else { return }
            out.append("\t\t<Binaries>\n")
            for (id, value) in values.enumerated() {
                out.append("\t\t\t<Binary ID=\"\(id)\" Compressed=\"False\">")
                value.withUnsafeBytes { out.base64($0) }
                out.append("</Binary>\n")
            }
            out.append("\t\t</Binaries>\n")
        }
    }

    /// An entry's id as KeePass's base64 UUID; a random one for a group.
    static func uuid(_ id: DocumentID?) -> String {
        Data(id?.bytes ?? SecureBytes.random(count: 16).unprotectedBytes).base64EncodedString()
    }

    static func writeGroup(
        _ group: GroupNode, name: String, indent: Int, now: UInt64, source: ExportSource, to out: TextOutput, omitted: inout [SkippedItem],
        attachments: inout Attachments
    ) throws {
        let tab = String(repeating: "\t", count: indent)
        out.append("\(tab)<Group>\n\(tab)\t<UUID>\(uuid(nil))</UUID>\n\(tab)\t<Name>")
        out.xmlText(name)
        out.append("</Name>\n")
        writeTimes(created: now, modified: now, indent: indent + 1, to: out)
        for item in group.entries {
            let versions = try source.versions(item.name)
            guard let current = versions.first else { continue }
            let uuid = uuid(current.id)
            let created = current.created.milliseconds
            out.append("\(tab)\t<Entry>\n")
            writeVersion(current, title: item.title, uuid: uuid, created: created, indent: indent + 2, to: out, omitted: &omitted, attachments: &attachments)
            out.append("\(tab)\t\t<History>\n")
            for version in versions.dropFirst().reversed() {
                out.append("\(tab)\t\t\t<Entry>\n")
                writeVersion(version, title: item.title, uuid: uuid, created: created, indent: indent + 4, to: out, omitted: &omitted, attachments: &attachments)
                out.append("\(tab)\t\t\t</Entry>\n")
            }
            out.append("\(tab)\t\t</History>\n\(tab)\t</Entry>\n")
        }
        for (child, node) in group.groups.sorted(by: { $0.key < $1.key }) {
            try writeGroup(node, name: child, indent: indent + 1, now: now, source: source, to: out, omitted: &omitted, attachments: &attachments)
        }
        out.append("\(tab)</Group>\n")
    }

    static func writeTimes(created: UInt64, modified: UInt64, indent: Int, to out: TextOutput) {
        let tab = String(repeating: "\t", count: indent)
        let c = Times.iso8601Seconds(milliseconds: created), m = Times.iso8601Seconds(milliseconds: modified)
        out.append("""
            \(tab)<Times>
            \(tab)\t<LastModificationTime>\(m)</LastModificationTime>
            \(tab)\t<CreationTime>\(c)</CreationTime>
            \(tab)\t<LastAccessTime>\(m)</LastAccessTime>
            \(tab)\t<ExpiryTime>\(m)</ExpiryTime>
            \(tab)\t<Expires>False</Expires>
            \(tab)\t<UsageCount>0</UsageCount>
            \(tab)\t<LocationChanged>\(m)</LocationChanged>
            \(tab)</Times>

            """)
    }

    static func writeVersion(
        _ version: EntryRecord, title: String, uuid: String, created: UInt64, indent: Int, to out: TextOutput, omitted: inout [SkippedItem],
        attachments: inout Attachments
    ) {
        let tab = String(repeating: "\t", count: indent)
        let name = version.name
        out.append("\(tab)<UUID>\(uuid)</UUID>\n")
        // `tags` (what an import of KeePass, 1Password or Bitwarden makes of tags) goes back as KeePass's tags.
        let tags = version.field("tags").flatMap { field in field.value.withUnsafeBytes { TextOutput.isXMLText($0) } ? field : nil }
        if let tags {
            out.append("\(tab)<Tags>")
            tags.value.withUnsafeBytes { out.xmlText($0) }
            out.append("</Tags>\n")
        }
        writeTimes(created: min(created, version.modified.milliseconds), modified: version.modified.milliseconds, indent: indent, to: out)
        func string(_ key: String, _ write: () -> Void, protected: Bool) {
            out.append("\(tab)<String>\n\(tab)\t<Key>")
            out.xmlText(key)
            out.append(protected ? "</Key>\n\(tab)\t<Value ProtectInMemory=\"True\">" : "</Key>\n\(tab)\t<Value>")
            write()
            out.append("</Value>\n\(tab)</String>\n")
        }
        string("Title", { out.xmlText(title) }, protected: false)
        var keys: Set<String> = ["Title"]
        var binaries: [(key: String, id: Int)] = []
        defer {
            // After the strings, as KeePass orders an entry's elements.
            for binary in binaries {
                out.append("\(tab)<Binary>\n\(tab)\t<Key>")
                out.xmlText(binary.key)
                out.append("</Key>\n\(tab)\t<Value Ref=\"\(binary.id)\"/>\n\(tab)</Binary>\n")
            }
        }
        for field in version.fields where !(tags != nil && field.name == "tags") {
            var key = standardKeys[field.name] ?? field.name
            if standardKeys[field.name] == nil {
                var number = 2
                while keys.contains(key) || ["Title", "Password", "UserName", "URL", "Notes"].contains(key) {
                    key = "\(field.name) (\(number))"
                    number += 1
                }
            }
            guard TextOutput.isXMLText(key) else {
                omitted.append(SkippedItem(item: "'\(name)' field '\(field.name)'", reason: "a name XML cannot carry; --format json keeps it"))
                continue
            }
            guard field.value.withUnsafeBytes({ TextOutput.isXMLText($0) }) else {
                // Bytes a string cannot hold (a file): an attachment, under the field's own name.
                binaries.append((field.name, attachments.id(of: field.value)))
                continue
            }
            keys.insert(key)
            let bare = field.name == "otp" && !field.value.withUnsafeBytes { $0.count >= 10 && String(decoding: $0.prefix(10), as: UTF8.self).lowercased() == "otpauth://" }
            if bare {
                // KeePassXC reads its `otp` attribute as a URI: a bare base32 secret (what vault also takes) is wrapped.
                let secret = OTPURI.secret(String(decoding: field.value.unprotectedBytes, as: UTF8.self))
                string(key, { out.xmlText("otpauth://totp/\(OTPURI.label(title))?secret=\(secret)&period=30&digits=6") }, protected: field.isSecret)
            } else {
                string(key, { field.value.withUnsafeBytes { out.xmlText($0) } }, protected: field.isSecret)
            }
        }
    }
}

/// otpauth:// URIs for the TOTP settings other programs keep in their own fields.
enum OTPURI {
    static func label(_ title: String) -> String {
        let label = title.isEmpty ? "vault" : title
        return label.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "vault"
    }

    static func secret(_ text: String) -> String {
        text.filter { !$0.isWhitespace && $0 != "=" }.uppercased()
    }

    /// KeePassXC before the `otp` attribute: `TOTP Seed` and `TOTP Settings` (`30;6`, `30;8`, or `30;S` for Steam).
    static func keePassXCLegacy(seed: String, settings: String?, title: String) -> String {
        let parts = (settings ?? "30;6").split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        let period = parts.first.flatMap { Int($0) } ?? 30
        var uri = "otpauth://totp/\(label(title))?secret=\(secret(seed))&period=\(period)"
        if parts.count > 1, parts[1].uppercased() == "S" {
            uri += "&digits=5&encoder=steam"
        } else {
            uri += "&digits=\(parts.count > 1 ? Int(parts[1]) ?? 6 : 6)"
        }
        return uri
    }

    /// KeePass 2.47's `TimeOtp-*` strings.
    static func keePass(secret: String, length: String?, period: String?, algorithm: String?, title: String) -> String {
        var uri = "otpauth://totp/\(label(title))?secret=\(self.secret(secret))"
        if let period, let value = Int(period) { uri += "&period=\(value)" }
        if let length, let value = Int(length) { uri += "&digits=\(value)" }
        switch algorithm?.uppercased() {
        case "HMAC-SHA-256": uri += "&algorithm=SHA256"
        case "HMAC-SHA-512": uri += "&algorithm=SHA512"
        default: break
        }
        return uri
    }

    /// `steam://SECRET` (Bitwarden, rbw) as the otpauth:// URI vault reads.
    static func fromSteam(_ text: String, title: String) -> String {
        "otpauth://totp/\(label(title))?secret=\(secret(String(text.dropFirst("steam://".count))))&encoder=steam"
    }
}

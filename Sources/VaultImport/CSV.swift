import Foundation
import VaultCore

/// An RFC 4180 reader over bytes: fields separated by commas, records by CRLF or LF (a lone CR too); a field in
/// double quotes may hold commas, line breaks and `""` for a quote; a UTF-8 byte order mark at the start is skipped.
/// It reads one record at a time (memory: the input and one record), and names the line a record starts on.
///
/// Lenient where exporters are sloppy and nothing is ambiguous: a quote inside an unquoted field is taken as it is.
/// Strict where data would be lost: a quoted field that never ends, or text after a closing quote, is an error.
struct CSVReader {
    private let bytes: [UInt8]
    private var index: Int
    /// The line the next record starts on (1 is the first).
    private(set) var line = 1

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
    }

    /// The next record and the line it starts on; `nil` at the end. Blank lines are skipped.
    ///
    /// - Throws: ``ImportError/malformed(location:reason:)`` naming the line.
    mutating func next() throws -> (line: Int, fields: [String])? {
        while index < bytes.count {
            let start = line
            var fields: [String] = []
            var field: [UInt8] = []
            defer { for i in field.indices { field[i] = 0 } }
            var quoted = false
            var atFieldStart = true
            var afterClosingQuote = false
            func finishField() throws {
                guard let text = String(validating: field, as: UTF8.self) else {
                    throw ImportError.malformed(location: "line \(start)", reason: "field \(fields.count + 1) is not UTF-8 text")
                }
                fields.append(text)
                for i in field.indices { field[i] = 0 }
                field.removeAll(keepingCapacity: true)
                atFieldStart = true
                afterClosingQuote = false
            }
            var ended = false
            while index < bytes.count, !ended {
                let byte = bytes[index]
                index += 1
                if quoted {
                    if byte == UInt8(ascii: "\"") {
                        if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                            field.append(byte)
                            index += 1
                        } else {
                            quoted = false
                            afterClosingQuote = true
                        }
                    } else {
                        if byte == 0x0A || (byte == 0x0D && (index >= bytes.count || bytes[index] != 0x0A)) { line += 1 }
                        field.append(byte)
                    }
                    continue
                }
                switch byte {
                case UInt8(ascii: ","):
                    try finishField()
                case 0x0A, 0x0D:
                    if byte == 0x0D, index < bytes.count, bytes[index] == 0x0A { index += 1 }
                    line += 1
                    ended = true
                case UInt8(ascii: "\"") where atFieldStart:
                    quoted = true
                    atFieldStart = false
                default:
                    if afterClosingQuote {
                        throw ImportError.malformed(
                            location: "line \(line)", reason: "text after the closing quote of field \(fields.count + 1) (a quote inside a quoted field is written \"\")")
                    }
                    field.append(byte)
                    atFieldStart = false
                }
            }
            if quoted {
                throw ImportError.malformed(location: "line \(start)", reason: "field \(fields.count + 1) opens a quote that never closes")
            }
            try finishField()
            if fields.count == 1, fields[0].isEmpty { continue }  // a blank line
            return (start, fields)
        }
        return nil
    }
}

/// The CSV exports `vault import csv` reads, told apart by their header (docs/IMPORT-EXPORT.md, "CSV").
enum CSVImport {
    /// The layouts recognised.
    enum Layout: String {
        case chrome = "Chrome"
        case firefox = "Firefox"
        case bitwarden = "Bitwarden"
        case onePassword = "1Password"
        case keePassXC = "KeePassXC"
    }

    static let recognised = """
        Chrome (name,url,username,password[,note]), Firefox (url,username,password,httpRealm,…), \
        Bitwarden (folder,favorite,type,name,notes,fields,…,login_uri,login_username,login_password,login_totp), \
        1Password (Title,Url,Username,Password,OTPAuth,…) or KeePassXC (Group,Title,Username,Password,URL,Notes,TOTP,…)
        """

    static func layout(of header: [String]) -> Layout? {
        let columns = Set(header.map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        func has(_ names: String...) -> Bool { names.allSatisfy(columns.contains) }
        if has("type", "name", "login_username", "login_password") { return .bitwarden }
        if has("group", "title", "username", "password", "url", "notes") { return .keePassXC }
        if has("title", "url", "username", "password", "otpauth") { return .onePassword }
        if has("url", "username", "password"), columns.contains("httprealm") || columns.contains("formactionorigin") || columns.contains("guid") {
            return .firefox
        }
        if has("hostname", "username", "password") { return .firefox }
        if has("name", "url", "username", "password") { return .chrome }
        return nil
    }

    static func read(_ bytes: [UInt8]) throws -> ParsedSource {
        var reader = CSVReader(bytes)
        guard let (_, header) = try reader.next() else {
            throw ImportError.malformed(location: "line 1", reason: "no header: the file is empty")
        }
        guard let layout = layout(of: header) else {
            // The columns are not shown: a file without a header would have its first entry's values there.
            throw ImportError.unsupported(
                reason: "line 1 is not a CSV header this import knows (\(header.count) column\(header.count == 1 ? "" : "s"))",
                hint: "vault import csv reads the exports of \(recognised)")
        }
        let columns = header.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        var parsed = ParsedSource()
        while let (line, fields) = try reader.next() {
            guard fields.count == columns.count else {
                throw ImportError.malformed(location: "line \(line)", reason: "\(fields.count) fields where the header has \(columns.count)")
            }
            if fields.allSatisfy({ $0.isEmpty }) { continue }
            guard parsed.entries.count < ImportLimits.maximumEntryCount else {
                throw ImportError.tooLarge(what: "the file", limit: "\(ImportLimits.maximumEntryCount) entries")
            }
            var row: [String: String] = [:]
            for (name, value) in zip(columns, fields) where row[name] == nil { row[name] = value }
            defer { row.removeAll() }
            let origin = "line \(line)"
            switch layout {
            case .chrome: parsed.entries.append(chrome(row, origin: origin, values: parsed.values))
            case .firefox: parsed.entries.append(firefox(row, origin: origin, values: parsed.values))
            case .bitwarden:
                if let entry = try bitwarden(row, origin: origin, values: parsed.values, skipped: &parsed.skipped) { parsed.entries.append(entry) }
            case .onePassword:
                if ["true", "1", "yes"].contains(row["archived"]?.lowercased() ?? "") {
                    parsed.skipped.append(SkippedItem(item: origin + itemTitle(row["title"]), reason: "archived in 1Password"))
                    continue
                }
                parsed.entries.append(onePassword(row, origin: origin, values: parsed.values))
            case .keePassXC: parsed.entries.append(keePassXC(row, origin: origin, values: parsed.values))
            }
        }
        return parsed
    }

    static func itemTitle(_ title: String?) -> String {
        guard let title, !title.isEmpty else { return "" }
        return " ('\(title)')"
    }

    /// The host of `url` (`https://github.com/login` → `github.com`), else `url` itself.
    static func host(of url: String) -> String {
        URLComponents(string: url)?.host.flatMap { $0.isEmpty ? nil : $0 } ?? url
    }

    static func chrome(_ row: [String: String], origin: String, values: ValueArena) -> PortableEntry {
        var fields = FieldList(values)
        fields.add("password", row["password"], secret: true)
        fields.add("username", row["username"])
        fields.add("url", row["url"])
        fields.add("notes", row["note"] ?? row["notes"])
        let title = row["name"].flatMap { $0.isEmpty ? nil : $0 } ?? host(of: row["url"] ?? "")
        return PortableEntry(path: [title], current: PortableVersion(fields: fields.fields), origin: origin + itemTitle(title))
    }

    static func firefox(_ row: [String: String], origin: String, values: ValueArena) -> PortableEntry {
        var fields = FieldList(values)
        let url = row["url"] ?? row["hostname"] ?? ""
        fields.add("password", row["password"], secret: true)
        fields.add("username", row["username"])
        fields.add("url", url)
        fields.add("http realm", row["httprealm"])
        fields.add("form action origin", row["formactionorigin"] ?? row["formsubmiturl"])
        func time(_ key: String) -> UInt64? { row[key].flatMap { UInt64($0) } }
        let title = host(of: url)
        return PortableEntry(
            path: [title], current: PortableVersion(fields: fields.fields, modified: time("timepasswordchanged")),
            created: time("timecreated"), origin: origin + itemTitle(title))
    }

    static func bitwarden(_ row: [String: String], origin: String, values: ValueArena, skipped: inout [SkippedItem]) throws -> PortableEntry? {
        let title = row["name"] ?? ""
        var fields = FieldList(values)
        switch row["type"]?.lowercased() ?? "login" {
        case "login", "":
            fields.add("password", row["login_password"], secret: true)
            fields.add("username", row["login_username"])
            for uri in (row["login_uri"] ?? "").split(separator: ",").map({ String($0).trimmingCharacters(in: .whitespaces) }) {
                fields.add("url", uri)
            }
            fields.add("otp", row["login_totp"], secret: true, trim: true)
        case "note":
            break
        case let other:
            skipped.append(SkippedItem(item: origin + itemTitle(title), reason: "a Bitwarden item of type '\(other)' (CSV carries logins and notes)"))
            return nil
        }
        fields.add("notes", row["notes"])
        for line in (row["fields"] ?? "").split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            guard let colon = line.firstIndex(of: ":") else {
                throw ImportError.malformed(location: origin + itemTitle(title), reason: "a line of 'fields' without 'name: value'")
            }
            var value = line[line.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
            fields.add(String(line[..<colon]), String(value))
        }
        let folder = (row["folder"] ?? "").split(separator: "/").map(String.init)
        return PortableEntry(path: folder + [title], current: PortableVersion(fields: fields.fields), origin: origin + itemTitle(title))
    }

    static func onePassword(_ row: [String: String], origin: String, values: ValueArena) -> PortableEntry {
        let title = row["title"] ?? ""
        var fields = FieldList(values)
        fields.add("password", row["password"], secret: true)
        fields.add("username", row["username"])
        fields.add("url", row["url"])
        fields.add("otp", row["otpauth"], secret: true, trim: true)
        fields.add("notes", row["notes"])
        fields.add("tags", row["tags"])
        return PortableEntry(path: [title], current: PortableVersion(fields: fields.fields), origin: origin + itemTitle(title))
    }

    static func keePassXC(_ row: [String: String], origin: String, values: ValueArena) -> PortableEntry {
        let title = row["title"] ?? ""
        var fields = FieldList(values)
        fields.add("password", row["password"], secret: true)
        fields.add("username", row["username"])
        fields.add("url", row["url"])
        fields.add("otp", row["totp"], secret: true, trim: true)
        fields.add("notes", row["notes"])
        // The first group is the database's root group, which a vault name leaves out (as the XML import does).
        let groups = (row["group"] ?? "").split(separator: "/").map(String.init).dropFirst()
        func time(_ key: String) -> UInt64? { row[key].flatMap(Times.milliseconds(iso8601:)) }
        return PortableEntry(
            path: Array(groups) + [title], current: PortableVersion(fields: fields.fields, modified: time("last modified")),
            created: time("created"), origin: origin + itemTitle(title))
    }
}

/// `vault export --format csv`: Bitwarden's CSV layout, which Bitwarden and most managers import (docs/IMPORT-EXPORT.md).
enum CSVExport {
    static let header = ["folder", "favorite", "type", "name", "notes", "fields", "reprompt", "login_uri", "login_username", "login_password", "login_totp"]

    static func write(_ source: ExportSource) throws -> ExportResult {
        let out = TextOutput()
        var omitted: [SkippedItem] = []
        out.append(header.joined(separator: ",") + "\r\n")
        var withHistory = 0
        let empty = SecureBytes([])
        for name in source.names {
            let versions = try source.versions(name)
            guard let version = versions.first else { continue }
            if versions.count > 1 { withHistory += 1 }
            var folder = "", title = name
            if let slash = name.lastIndex(of: "/") {
                folder = String(name[..<slash])
                title = String(name[name.index(after: slash)...])
            }
            func text(_ key: String) -> SecureBytes {
                guard let field = version.field(key) else { return empty }
                let usable = field.value.withUnsafeBytes { String(validating: $0, as: UTF8.self) != nil }
                if !usable { omitted.append(SkippedItem(item: "'\(name)' field '\(field.name)'", reason: "not UTF-8 text (CSV carries text; --format json keeps it)")) }
                return usable ? field.value : empty
            }
            let wellKnown: Set<String> = ["password", "username", "url", "notes", "otp"]
            let isLogin = version.fields.contains { ["password", "username", "url", "otp"].contains($0.name) }
            // Other fields as `name: value` lines (a value with a line break cannot be one).
            let extra = TextOutput()
            var first = true
            for field in version.fields where !wellKnown.contains(field.name) {
                let ok = field.value.withUnsafeBytes { value in
                    String(validating: value, as: UTF8.self) != nil && !value.contains(0x0A) && !value.contains(0x0D)
                }
                guard ok, !field.name.contains(":") else {
                    omitted.append(SkippedItem(item: "'\(name)' field '\(field.name)'", reason: "CSV's fields column holds one 'name: value' line each; --format json keeps it"))
                    continue
                }
                if !first { extra.append("\n") }
                first = false
                extra.append(field.name + ": ")
                field.value.withUnsafeBytes { extra.buffer.append($0) }
            }
            let fieldsColumn = extra.result()
            out.csvField(folder)
            out.append(",,")
            out.csvField(isLogin ? "login" : "note")
            out.append(",")
            out.csvField(title)
            out.append(",")
            text("notes").withUnsafeBytes { out.csvField($0) }
            out.append(",")
            fieldsColumn.withUnsafeBytes { out.csvField($0) }
            out.append(",,")
            for key in ["url", "username", "password", "otp"] {
                text(key).withUnsafeBytes { out.csvField($0) }
                out.append(key == "otp" ? "\r\n" : ",")
            }
        }
        if withHistory > 0 {
            omitted.append(SkippedItem(item: "the history of \(withHistory) entr\(withHistory == 1 ? "y" : "ies")", reason: "CSV has no history; --format json keeps it"))
        }
        return ExportResult(data: out.result(), omitted: omitted, formulaLikeCells: out.formulaLikeFields)
    }
}

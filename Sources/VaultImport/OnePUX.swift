import Foundation
import VaultCore
import ZIPFoundation

/// 1Password's export, `.1pux` (docs/IMPORT-EXPORT.md, "1Password"): a zip archive whose `export.data` (JSON) holds
/// accounts, their vaults and the vaults' items. Only `export.data` is read, at most
/// ``ImportLimits/maximumInputByteCount`` of it, however large the archive (attachments in `files/` are not
/// imported).
enum OnePUX {
    static func read(archive path: String) throws -> ParsedSource {
        guard FileManager.default.fileExists(atPath: path) else {
            throw VaultError.io(operation: "opening", path: path, errno: ENOENT)
        }
        let archive: Archive
        do { archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read) } catch {
            throw ImportError.malformed(location: "the file", reason: "not a zip archive (a .1pux export is one)")
        }
        guard let entry = archive["export.data"] else {
            throw ImportError.malformed(location: "the archive", reason: "no export.data (a 1Password .1pux export holds one)")
        }
        let limit = ImportLimits.maximumInputByteCount
        guard entry.uncompressedSize <= UInt64(limit) else {
            throw ImportError.tooLarge(what: "export.data (\(entry.uncompressedSize >> 20) MiB)", limit: "\(limit >> 20) MiB")
        }
        // The size in the archive's directory is the archive's word: count what inflates too.
        struct TooLarge: Error {}
        var data = Data()
        do {
            _ = try archive.extract(entry) { chunk in
                guard data.count + chunk.count <= limit else { throw TooLarge() }
                data.append(chunk)
            }
        } catch is TooLarge {
            throw ImportError.tooLarge(what: "export.data", limit: "\(limit >> 20) MiB")
        } catch {
            throw ImportError.malformed(location: "export.data", reason: "does not inflate (a damaged archive)")
        }
        defer { data.resetBytes(in: 0..<data.count) }
        var parsed = try read(exportData: [UInt8](data))
        let files = archive.filter { $0.path.hasPrefix("files/") && $0.type == .file }
        if !files.isEmpty {
            parsed.skipped.append(SkippedItem(item: "\(files.count) file\(files.count == 1 ? "" : "s") in files/", reason: "attachments and documents are not imported"))
        }
        return parsed
    }

    /// The items of `export.data`: each 1Password vault's name is the first folder of its items' names.
    static func read(exportData bytes: [UInt8]) throws -> ParsedSource {
        let root = try JSONInput.object(bytes)
        guard let accounts = root["accounts"] as? [Any] else {
            throw ImportError.malformed(location: "export.data", reason: "no \"accounts\" array")
        }
        var parsed = ParsedSource()
        for case let account as [String: Any] in accounts {
            for (vaultIndex, value) in (account["vaults"] as? [Any] ?? []).enumerated() {
                guard let vault = value as? [String: Any] else {
                    throw ImportError.malformed(location: "vault \(vaultIndex + 1)", reason: "not an object")
                }
                let vaultName = ((vault["attrs"] as? [String: Any])?["name"] as? String) ?? "vault \(vaultIndex + 1)"
                for (index, value) in (vault["items"] as? [Any] ?? []).enumerated() {
                    var origin = "vault '\(vaultName)' item \(index + 1)"
                    guard let item = value as? [String: Any] else { throw ImportError.malformed(location: origin, reason: "not an object") }
                    let overview = item["overview"] as? [String: Any] ?? [:]
                    let title = overview["title"] as? String ?? ""
                    if !title.isEmpty { origin += " ('\(title)')" }
                    if item["state"] as? String == "archived" {
                        parsed.skipped.append(SkippedItem(item: origin, reason: "archived in 1Password"))
                        continue
                    }
                    guard parsed.entries.count < ImportLimits.maximumEntryCount else {
                        throw ImportError.tooLarge(what: "export.data", limit: "\(ImportLimits.maximumEntryCount) entries")
                    }
                    if let entry = try self.item(item, overview: overview, title: title, vault: vaultName, origin: origin, values: parsed.values, skipped: &parsed.skipped) {
                        parsed.entries.append(entry)
                    }
                }
            }
        }
        return parsed
    }

    static func text(_ value: Any?) -> String? {
        switch value {
        case let string as String: return string
        case let number as NSNumber: return number.stringValue
        default: return nil
        }
    }

    static func item(
        _ item: [String: Any], overview: [String: Any], title: String, vault: String, origin: String, values: ValueArena, skipped: inout [SkippedItem]
    ) throws -> PortableEntry? {
        let details = item["details"] as? [String: Any] ?? [:]
        var fields = FieldList(values)
        var extra: [PortableField] = []
        let logins = (details["loginFields"] as? [Any] ?? []).compactMap { $0 as? [String: Any] }
        for designation in ["password", "username"] {
            guard let login = logins.first(where: { $0["designation"] as? String == designation }) else { continue }
            fields.add(designation, text(login["value"]), secret: designation == "password")
        }
        for login in logins {
            let value = text(login["value"])
            switch login["designation"] as? String {
            case "password", "username": continue
            default:
                guard let value, !value.isEmpty, login["fieldType"] as? String != "B" else { continue }  // B: a button
                let name = (login["name"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? (login["id"] as? String) ?? "field"
                extra.append(values.field(name, value, secret: login["fieldType"] as? String == "P"))
            }
        }
        if !fields.has("password") { fields.add("password", text(details["password"]), secret: true) }
        var urls: [String] = []
        if let url = overview["url"] as? String, !url.isEmpty { urls.append(url) }
        for case let url as [String: Any] in overview["urls"] as? [Any] ?? [] {
            if let text = url["url"] as? String, !text.isEmpty, !urls.contains(text) { urls.append(text) }
        }
        for url in urls { fields.add("url", url) }
        for case let section as [String: Any] in details["sections"] as? [Any] ?? [] {
            for case let field as [String: Any] in section["fields"] as? [Any] ?? [] {
                let name = (field["title"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? (field["id"] as? String) ?? "field"
                guard let value = field["value"] as? [String: Any], let (kind, content) = value.first else { continue }
                switch kind {
                case "totp":
                    guard let secret = text(content)?.trimmingCharacters(in: .whitespacesAndNewlines), !secret.isEmpty else { continue }
                    fields.add("otp", secret, secret: true)
                case "concealed", "creditCardNumber":
                    fields.add(name, text(content), secret: true)
                case "file":
                    skipped.append(SkippedItem(item: origin + " field '\(name)'", reason: "attachments are not imported"))
                case "date":
                    if let seconds = (content as? NSNumber)?.doubleValue {
                        fields.add(name, String(Times.iso8601Seconds(milliseconds: Times.milliseconds(seconds: seconds) ?? 0).prefix(10)))
                    }
                case "monthYear":
                    if let number = (content as? NSNumber)?.intValue, number > 0 {
                        fields.add(name, String(format: "%04d-%02d", number / 100, number % 100))
                    }
                case "address":
                    if let address = content as? [String: Any] {
                        let lines = ["street", "city", "state", "zip", "country"].compactMap { address[$0] as? String }.filter { !$0.isEmpty }
                        fields.add(name, lines.joined(separator: "\n"))
                    }
                case "sshKey":
                    if let key = content as? [String: Any] {
                        fields.add(name, text(key["privateKey"]), secret: true)
                    } else {
                        fields.add(name, text(content), secret: true)
                    }
                default:
                    if let string = text(content) { fields.add(name, string) }
                }
            }
        }
        for field in extra { fields.add(field) }
        fields.add("notes", details["notesPlain"] as? String)
        if let tags = overview["tags"] as? [String], !tags.isEmpty { fields.add("tags", tags.joined(separator: ", ")) }
        if let document = details["documentAttributes"] as? [String: Any] {
            let name = document["fileName"] as? String ?? "a document"
            skipped.append(SkippedItem(item: origin + " document '\(name)'", reason: "attachments and documents are not imported"))
        }
        let modified = (item["updatedAt"] as? NSNumber).flatMap { Times.milliseconds(seconds: $0.doubleValue) }
        let created = (item["createdAt"] as? NSNumber).flatMap { Times.milliseconds(seconds: $0.doubleValue) }
        let current = PortableVersion(fields: fields.fields, modified: modified)
        var history: [PortableVersion] = []
        for case let old as [String: Any] in details["passwordHistory"] as? [Any] ?? [] {
            guard let password = text(old["value"]) else { continue }
            history.append(current.withPassword(password, modified: (old["time"] as? NSNumber).flatMap { Times.milliseconds(seconds: $0.doubleValue) }, values: values))
        }
        history.sort { ($0.modified ?? 0) > ($1.modified ?? 0) }
        return PortableEntry(path: [vault, title], current: current, history: history, created: created, origin: origin)
    }
}

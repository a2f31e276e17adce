import Foundation
import VaultCore

/// Bitwarden's unencrypted JSON export (docs/IMPORT-EXPORT.md, "Bitwarden"): logins (username, password, URIs,
/// TOTP), secure notes, cards, identities and SSH keys as fields; folders (else an organisation's collections) as
/// the name's folders; custom fields (hidden ones secret); the password history as earlier versions.
enum BitwardenJSON {
    static func read(_ bytes: [UInt8]) throws -> ParsedSource {
        let root = try JSONInput.object(bytes)
        if root["encrypted"] as? Bool == true {
            throw ImportError.unsupported(
                reason: "an encrypted Bitwarden export (\"encrypted\": true): its items are sealed with your account or export password",
                hint: "export again choosing the format '.json' (not '.json (Encrypted)'), import it, then delete that file")
        }
        guard let items = root["items"] as? [Any] else {
            throw ImportError.unsupported(
                reason: "not a Bitwarden JSON export (no \"items\" array)",
                hint: "export from Bitwarden with the format '.json'")
        }
        var folders: [String: [String]] = [:]
        for case let folder as [String: Any] in root["folders"] as? [Any] ?? [] {
            if let id = folder["id"] as? String, let name = folder["name"] as? String {
                folders[id] = name.split(separator: "/").map(String.init)
            }
        }
        var collections: [String: [String]] = [:]
        for case let collection as [String: Any] in root["collections"] as? [Any] ?? [] {
            if let id = collection["id"] as? String, let name = collection["name"] as? String {
                collections[id] = name.split(separator: "/").map(String.init)
            }
        }
        var parsed = ParsedSource()
        for (index, value) in items.enumerated() {
            var origin = "item \(index + 1)"
            guard let item = value as? [String: Any] else { throw ImportError.malformed(location: origin, reason: "not an object") }
            let title = item["name"] as? String ?? ""
            if !title.isEmpty { origin += " ('\(title)')" }
            if let deleted = item["deletedDate"], !(deleted is NSNull) {
                parsed.skipped.append(SkippedItem(item: origin, reason: "in Bitwarden's trash"))
                continue
            }
            guard let type = item["type"] as? Int else { throw ImportError.malformed(location: origin, reason: "no \"type\" number") }
            var fields = FieldList(parsed.values)
            func object(_ key: String) throws -> [String: Any] {
                guard let object = item[key] as? [String: Any] else {
                    throw ImportError.malformed(location: origin, reason: "a type-\(type) item without its \"\(key)\" object")
                }
                return object
            }
            func text(_ value: Any?) -> String? {
                switch value {
                case let string as String: return string
                case let number as NSNumber: return number.stringValue
                default: return nil
                }
            }
            switch type {
            case 1:
                let login = try object("login")
                fields.add("password", text(login["password"]), secret: true)
                fields.add("username", text(login["username"]))
                for case let uri as [String: Any] in login["uris"] as? [Any] ?? [] { fields.add("url", text(uri["uri"])) }
                if let totp = text(login["totp"])?.trimmingCharacters(in: .whitespacesAndNewlines), !totp.isEmpty {
                    fields.add("otp", totp.lowercased().hasPrefix("steam://") ? OTPURI.fromSteam(totp, title: title) : totp, secret: true)
                }
                if let passkeys = login["fido2Credentials"] as? [Any], !passkeys.isEmpty {
                    parsed.skipped.append(SkippedItem(item: origin + " passkey", reason: "passkeys (FIDO2 credentials) are not imported"))
                }
            case 2:
                break
            case 3:
                let card = try object("card")
                fields.add("cardholder", text(card["cardholderName"]))
                fields.add("brand", text(card["brand"]))
                fields.add("number", text(card["number"]), secret: true)
                let month = text(card["expMonth"]) ?? "", year = text(card["expYear"]) ?? ""
                fields.add("expiry", month.isEmpty || year.isEmpty ? month + year : "\(month)/\(year)")
                fields.add("code", text(card["code"]), secret: true)
            case 4:
                let identity = try object("identity")
                let secrets: Set<String> = ["ssn", "passportNumber", "licenseNumber"]
                fields.add("username", text(identity["username"]))
                for key in ["title", "firstName", "middleName", "lastName", "company", "email", "phone", "address1", "address2",
                            "address3", "city", "state", "postalCode", "country", "ssn", "passportNumber", "licenseNumber"] {
                    fields.add(key, text(identity[key]), secret: secrets.contains(key))
                }
            case 5:
                let key = try object("sshKey")
                fields.add("private key", text(key["privateKey"]), secret: true)
                fields.add("public key", text(key["publicKey"]))
                fields.add("fingerprint", text(key["keyFingerprint"]))
            default:
                parsed.skipped.append(SkippedItem(item: origin, reason: "a Bitwarden item of type \(type), which this import does not know"))
                continue
            }
            fields.add("notes", text(item["notes"]))
            for case let field as [String: Any] in item["fields"] as? [Any] ?? [] {
                let name = text(field["name"]) ?? ""
                switch field["type"] as? Int ?? 0 {
                case 3: continue  // linked: a reference to the item's own username or password, no value
                case 1: fields.add(name, text(field["value"]), secret: true)
                default: fields.add(name, text(field["value"]))
                }
            }
            let modified = (item["revisionDate"] as? String).flatMap(Times.milliseconds(iso8601:))
            let created = (item["creationDate"] as? String).flatMap(Times.milliseconds(iso8601:))
            let current = PortableVersion(fields: fields.fields, modified: modified)
            // The password history, newest first: each an earlier version with that password, the rest as now.
            var history: [PortableVersion] = []
            let old = (item["passwordHistory"] as? [Any] ?? []).compactMap { $0 as? [String: Any] }
            for entry in old {
                guard let password = text(entry["password"]) else { continue }
                history.append(current.withPassword(password, modified: (entry["lastUsedDate"] as? String).flatMap(Times.milliseconds(iso8601:)), values: parsed.values))
            }
            history.sort { ($0.modified ?? 0) > ($1.modified ?? 0) }
            var folder = (item["folderId"] as? String).flatMap { folders[$0] } ?? []
            if folder.isEmpty, let ids = item["collectionIds"] as? [String], let first = ids.first, let names = collections[first] {
                folder = names
            }
            guard parsed.entries.count < ImportLimits.maximumEntryCount else {
                throw ImportError.tooLarge(what: "the file", limit: "\(ImportLimits.maximumEntryCount) entries")
            }
            parsed.entries.append(PortableEntry(path: folder + [title], current: current, history: history, created: created, origin: origin))
        }
        return parsed
    }
}

import Foundation
import VaultCore

/// vault's own export (docs/IMPORT-EXPORT.md, "vault's JSON"): every entry with its id, times, fields (order and
/// secret flags) and history, read back without loss by `vault import json`.
///
/// ```json
/// {"entries": [{"created": "…", "fields": [{"name": "password", "secret": true, "value": "…"}],
///               "history": [{"conflict": false, "fields": [...], "modified": "…"}],
///               "id": "…", "modified": "…", "name": "github"}],
///  "exported": "…", "format": "vault-export", "version": 1}
/// ```
public enum VaultJSON {
    /// The `format` member.
    public static let formatName = "vault-export"
    /// The `version` member this code writes and reads.
    public static let version = 1

    /// The export of every entry of `source`, made at `exported` (milliseconds since the epoch). Keys are sorted; a
    /// value that is not UTF-8 is written in base64 with `"encoding": "base64"`.
    public static func write(_ source: ExportSource, exported: UInt64) throws -> SecureBytes {
        let out = TextOutput()
        out.append("{\"entries\":[")
        for (index, name) in source.names.enumerated() {
            let versions = try source.versions(name)
            guard let current = versions.first else { continue }
            if index > 0 { out.append(",") }
            out.append("\n{\"created\":\"\(Times.iso8601(milliseconds: current.created.milliseconds))\",\"fields\":")
            writeFields(current.fields, to: out)
            out.append(",\"history\":[")
            for (number, version) in versions.dropFirst().enumerated() {
                if number > 0 { out.append(",") }
                out.append("{\"conflict\":\(version.conflict),\"fields\":")
                writeFields(version.fields, to: out)
                out.append(",\"modified\":\"\(Times.iso8601(milliseconds: version.modified.milliseconds))\"}")
            }
            out.append("],\"id\":\"\(current.id)\",\"modified\":\"\(Times.iso8601(milliseconds: current.modified.milliseconds))\",\"name\":")
            out.jsonString(current.name)
            out.append("}")
        }
        out.append("\n],\"exported\":\"\(Times.iso8601(milliseconds: exported))\",\"format\":\"\(formatName)\",\"version\":\(version)}\n")
        return out.result()
    }

    static func writeFields(_ fields: [EntryRecord.Field], to out: TextOutput) {
        out.append("[")
        for (index, field) in fields.enumerated() {
            if index > 0 { out.append(",") }
            field.value.withUnsafeBytes { value in
                let utf8 = String(validating: value, as: UTF8.self) != nil
                out.append(utf8 ? "{" : "{\"encoding\":\"base64\",")
                out.append("\"name\":")
                out.jsonString(field.name)
                out.append(",\"secret\":\(field.isSecret),\"value\":")
                if utf8 {
                    out.jsonString(value)
                } else {
                    out.append("\"")
                    out.base64(value)
                    out.append("\"")
                }
            }
            out.append("}")
        }
        out.append("]")
    }

    /// The entries of an export `write` made (format `vault-export`, version 1), in its order.
    ///
    /// - Throws: ``ImportError/malformed(location:reason:)`` naming the entry (its number, and its name once read),
    ///   ``ImportError/unsupported(reason:hint:)`` for another format or a later version.
    public static func read(_ bytes: [UInt8]) throws -> ParsedSource {
        let root = try JSONInput.object(bytes)
        guard root["format"] as? String == formatName else {
            throw ImportError.unsupported(
                reason: "not an export of vault (no \"format\": \"\(formatName)\")",
                hint: "'vault import json' reads what 'vault export --format json' writes; for Bitwarden's export use 'vault import bitwarden-json'")
        }
        guard let version = root["version"] as? Int, version == Self.version else {
            throw ImportError.unsupported(
                reason: "an export of vault of version \(root["version"].map { "\($0)" } ?? "(none)"); this vault reads version \(Self.version)",
                hint: "import it with the vault that exported it, or a newer one")
        }
        guard let items = root["entries"] as? [Any] else { throw ImportError.malformed(location: "the export", reason: "no \"entries\" array") }
        var parsed = ParsedSource()
        for (index, item) in items.enumerated() {
            var location = "entry \(index + 1)"
            guard let object = item as? [String: Any] else { throw ImportError.malformed(location: location, reason: "not an object") }
            guard let name = object["name"] as? String, !name.isEmpty else {
                throw ImportError.malformed(location: location, reason: "no \"name\"")
            }
            location += " ('\(name)')"
            func time(_ key: String, in object: [String: Any]) throws -> UInt64? {
                guard let value = object[key] else { return nil }
                guard let text = value as? String, let milliseconds = Times.milliseconds(iso8601: text) else {
                    throw ImportError.malformed(location: location, reason: "\"\(key)\" is not an ISO 8601 time")
                }
                return milliseconds
            }
            let current = PortableVersion(
                fields: try fields(object["fields"], at: location, values: parsed.values), modified: try time("modified", in: object))
            var history: [PortableVersion] = []
            if let versions = object["history"] {
                guard let versions = versions as? [Any] else { throw ImportError.malformed(location: location, reason: "\"history\" is not an array") }
                for (number, version) in versions.enumerated() {
                    let at = location + ", history \(number + 1)"
                    guard let version = version as? [String: Any] else { throw ImportError.malformed(location: at, reason: "not an object") }
                    let conflict = version["conflict"] as? Bool ?? false
                    history.append(PortableVersion(
                        fields: try fields(version["fields"], at: at, values: parsed.values), modified: try time("modified", in: version), conflict: conflict))
                }
            }
            parsed.entries.append(PortableEntry(
                path: [name], current: current, history: history, created: try time("created", in: object), origin: location))
        }
        return parsed
    }

    static func fields(_ value: Any?, at location: String, values: ValueArena) throws -> [PortableField] {
        guard let items = value as? [Any] else { throw ImportError.malformed(location: location, reason: "\"fields\" is not an array") }
        return try items.enumerated().map { index, item in
            let at = "\(location), field \(index + 1)"
            guard let object = item as? [String: Any], let name = object["name"] as? String else {
                throw ImportError.malformed(location: at, reason: "a field needs a \"name\"")
            }
            guard let text = object["value"] as? String else {
                throw ImportError.malformed(location: at + " ('\(name)')", reason: "a field needs a \"value\" string")
            }
            let secret = object["secret"] as? Bool ?? false
            switch object["encoding"] as? String ?? "utf8" {
            case "utf8":
                return values.field(name, text, secret: secret)
            case "base64":
                guard var data = Data(base64Encoded: text) else {
                    throw ImportError.malformed(location: at + " ('\(name)')", reason: "the value is not base64")
                }
                defer { data.resetBytes(in: 0..<data.count) }
                return PortableField(name: name, isSecret: secret, values: values, range: data.withUnsafeBytes { values.append($0) })
            default:
                throw ImportError.malformed(location: at + " ('\(name)')", reason: "\"encoding\" is utf8 or base64")
            }
        }
    }
}

/// JSON input as Foundation's tree (``JSONSerialization``), with its errors in the importer's words.
enum JSONInput {
    static func value(_ bytes: [UInt8]) throws -> Any {
        do {
            return try JSONSerialization.jsonObject(with: Data(bytes), options: [])
        } catch {
            throw ImportError.malformed(location: "the file", reason: "not valid JSON (\(position(of: error, in: bytes)))")
        }
    }

    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        guard let object = try value(bytes) as? [String: Any] else {
            throw ImportError.malformed(location: "the file", reason: "the JSON is not an object")
        }
        return object
    }

    /// Where Foundation's parser stopped, as a line when it says (its message holds no value of the input).
    static func position(of error: Error, in bytes: [UInt8]) -> String {
        let info = (error as NSError).userInfo
        if let index = info["NSJSONSerializationErrorIndex"] as? Int, index <= bytes.count {
            return "line \(bytes[..<index].filter { $0 == 0x0A }.count + 1)"
        }
        // Foundation says "… around character N." (an offset; its other words may quote the input: not used).
        let text = info[NSDebugDescriptionErrorKey] as? String ?? ""
        if let range = text.range(of: "character \\d+", options: .regularExpression),
           let offset = Int(text[range].dropFirst("character ".count)) {
            return "line \(bytes[..<min(offset, bytes.count)].filter { $0 == 0x0A }.count + 1)"
        }
        if let range = text.range(of: "line \\d+", options: .regularExpression) { return String(text[range]) }
        return "a syntax error"
    }
}

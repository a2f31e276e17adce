import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import VaultCore

/// The SAX delegate: element by element, with a stack of open elements, groups and entries.
final class KeePassXMLReader: NSObject, XMLParserDelegate {
    var parsed = ParsedSource()
    var failure: ImportError?
    var sawKeePassFile = false

    private var elements: [String] = []
    private var text = ""
    private var recycleBin: String?
    /// Open groups: name and UUID, and whether it is (inside) the recycle bin.
    private var groups: [(name: String, uuid: String, recycled: Bool)] = []
    /// Open entries: the entry, then its history items.
    private var entries: [KeePassXML.EntryData] = []
    private var stringKey: String?
    private var stringValue: String?
    private var protected = false
    /// `<Meta><Binaries>`: the attachments by ID; the one being read (its ID and whether it is gzip).
    private var binaries: [String: KeePassBinaries.Content] = [:]
    private var binary: (id: String, compressed: Bool)?
    /// An entry's `<Binary>` being read: its name, and its `Ref` or inline content.
    private var binaryKey: String?
    private var binaryValue: KeePassBinaries.Content?
    private var binaryValueCompressed = false

    private var parent: String? { elements.count >= 2 ? elements[elements.count - 2] : nil }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        elements.append(name)
        text = ""
        switch name {
        case "KeePassFile" where elements.count == 1:
            sawKeePassFile = true
        case "Group":
            let recycled = groups.last?.recycled ?? false
            groups.append(("", "", recycled))
        case "Entry":
            guard !groups.isEmpty else { return fail(parser, "an <Entry> outside any <Group>") }
            entries.append(KeePassXML.EntryData(line: parser.lineNumber))
        case "Value" where parent == "String":
            if attributes["Protected"]?.lowercased() == "true" {
                failure = .unsupported(
                    reason: "line \(parser.lineNumber): a value encrypted with the database's inner stream key (Protected=\"True\"): this is a database's inner XML, not an export",
                    hint: "export with 'keepassxc-cli export -f xml DATABASE', which writes the values as text")
                parser.abortParsing()
            }
            protected = attributes["ProtectInMemory"]?.lowercased() == "true"
        case "Binary" where parent == "Binaries":
            binary = (attributes["ID"] ?? "", attributes["Compressed"]?.lowercased() == "true")
        case "Value" where parent == "Binary":
            if let reference = attributes["Ref"] {
                binaryValue = binaries[reference] ?? .malformed("missing (attachment \(reference) is not in <Meta><Binaries>)")
            }
            binaryValueCompressed = attributes["Compressed"]?.lowercased() == "true"
        default: break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        text += string
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        defer {
            elements.removeLast()
            text = ""
        }
        let parent = self.parent
        switch (name, parent) {
        case ("RecycleBinUUID", "Meta"):
            recycleBin = text.trimmingCharacters(in: .whitespacesAndNewlines)
        case ("Name", "Group"):
            groups[groups.count - 1].name = text
        case ("UUID", "Group"):
            let uuid = text.trimmingCharacters(in: .whitespacesAndNewlines)
            groups[groups.count - 1].uuid = uuid
            if let recycleBin, uuid == recycleBin, recycleBin != "AAAAAAAAAAAAAAAAAAAAAA==" { groups[groups.count - 1].recycled = true }
        case ("Group", _):
            groups.removeLast()
        case ("Key", "String"):
            stringKey = text
        case ("Value", "String"):
            stringValue = text
        case ("String", "Entry"):
            guard let key = stringKey else { return fail(parser, "a <String> without a <Key>") }
            entries.last?.strings.append((key, stringValue ?? "", protected))
            (stringKey, stringValue, protected) = (nil, nil, false)
        case ("Binary", "Binaries"):
            if let binary { binaries[binary.id] = KeePassBinaries.decode(text, compressed: binary.compressed) }
            binary = nil
        case ("Key", "Binary"):
            binaryKey = text
        case ("Value", "Binary"):
            if binaryValue == nil { binaryValue = KeePassBinaries.decode(text, compressed: binaryValueCompressed) }
        case ("Binary", "Entry"):
            entries.last?.attachments.append((binaryKey ?? "", binaryValue ?? .malformed("no <Value>")))
            (binaryKey, binaryValue, binaryValueCompressed) = (nil, nil, false)
        case ("Tags", "Entry"):
            entries.last?.tags = text
        case ("LastModificationTime", "Times"), ("CreationTime", "Times"):
            guard elements.count >= 3, elements[elements.count - 3] == "Entry", let entry = entries.last else { return }
            guard let time = Times.milliseconds(keePass: text) else {
                return fail(parser, "<\(name)> is not a time (ISO 8601, or KDBX's base64 seconds)")
            }
            if name == "CreationTime" { entry.created = time } else { entry.modified = time }
        case ("Entry", _):
            guard let entry = entries.popLast() else { return }
            if parent == "History" {
                entries.last?.history.append(entry)
                return
            }
            finish(entry)
        default: break
        }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
        // libxml2's message may quote the input: only the line is kept.
        if failure == nil { failure = .malformed(location: "line \(max(1, parser.lineNumber))", reason: "not well-formed XML") }
    }

    private func finish(_ entry: KeePassXML.EntryData) {
        let folders = groups.dropFirst().map(\.name)
        let shown = (folders + [entry.title]).joined(separator: "/")
        let origin = "line \(entry.line) ('\(shown)')"
        if groups.last?.recycled == true {
            parsed.skipped.append(SkippedItem(item: origin, reason: "in the recycle bin"))
            return
        }
        guard parsed.entries.count < ImportLimits.maximumEntryCount else {
            failure = .tooLarge(what: "the file", limit: "\(ImportLimits.maximumEntryCount) entries")
            return
        }
        // Attachments: binary fields of the current version (the history's copies of them are left out: they would
        // take the room the history has, 64 KiB an entry).
        var current = entry.version(parsed.values)
        var fields = FieldList(parsed.values)
        current.fields.forEach { fields.add($0) }
        for (name, content) in entry.attachments {
            let item = origin + " attachment '\(name)'"
            switch content {
            case let .bytes(bytes) where !bytes.isEmpty:
                fields.add(parsed.values.field(name.isEmpty ? "attachment" : name, bytes: bytes, secret: true))
            case .bytes:
                parsed.skipped.append(SkippedItem(item: item, reason: "empty"))
            case let .tooLarge(size):
                let shown = size.map { "\(($0 + 1023) >> 10) KiB, " } ?? ""
                parsed.skipped.append(SkippedItem(
                    item: item, reason: "larger than \(KeePassBinaries.maximumByteCount >> 20) MiB (\(shown)an attachment is imported up to that): keep the file beside the vault"))
            case let .malformed(reason):
                parsed.skipped.append(SkippedItem(item: item, reason: "its content is \(reason)"))
            }
        }
        current.fields = fields.fields
        // KeePass keeps history oldest first; a vault newest first.
        parsed.entries.append(PortableEntry(
            path: folders + [entry.title], current: current, history: entry.history.reversed().map { $0.version(parsed.values) },
            created: entry.created, origin: origin))
    }

    private func fail(_ parser: XMLParser, _ reason: String) {
        if failure == nil { failure = .malformed(location: "line \(parser.lineNumber)", reason: reason) }
        parser.abortParsing()
    }
}

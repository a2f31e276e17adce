import Foundation
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The formats `vault import` reads.
public enum ImportFormat: String, CaseIterable, Sendable {
    /// A pass (or gopass) store: a directory of `.gpg` files, decrypted with the user's gpg.
    case pass
    /// KeePass 2 XML, as `keepassxc-cli export -f xml` writes it.
    case keepassXML = "keepass-xml"
    /// Bitwarden's unencrypted JSON export.
    case bitwardenJSON = "bitwarden-json"
    /// 1Password's export (a zip with `export.data`).
    case onePUX = "1pux"
    /// A CSV export of Chrome, Firefox, Bitwarden, 1Password or KeePassXC (recognised by its header).
    case csv
    /// vault's own export (`vault export --format json`).
    case json
}

/// The formats `vault export` writes.
public enum ExportFormat: String, CaseIterable, Sendable {
    case json
    case csv
    case keepassXML = "keepass-xml"
}

/// What an export wrote, and what it could not carry.
public struct ExportResult {
    public var data: SecureBytes
    /// Fields, versions or entries the format has no room for, with why (never a value).
    public var omitted: [SkippedItem]
    /// CSV: how many cells start with `=`, `+`, `-` or `@` (a spreadsheet may run them as formulas; written as
    /// they are).
    public var formulaLikeCells = 0
}

/// What an export reads: the vault's names, sorted, and each entry's versions (current first, as
/// ``KeyValueVault/records(of:_:)`` gives them), read one entry at a time while the export is written, so that
/// only one entry's values are in memory besides the export itself.
public struct ExportSource {
    public let names: [String]
    public let versions: (String) throws -> [EntryRecord]

    public init(names: [String], versions: @escaping (String) throws -> [EntryRecord]) {
        self.names = names
        self.versions = versions
    }
}

extension ExportFormat {
    /// The entries of `source` in this format; `now`: the export's time, milliseconds since the epoch.
    public func write(_ source: ExportSource, now: UInt64) throws -> ExportResult {
        switch self {
        case .json: return ExportResult(data: try VaultJSON.write(source, exported: now), omitted: [])
        case .csv: return try CSVExport.write(source)
        case .keepassXML: return try KeePassXML.write(source, now: now)
        }
    }
}

extension ImportFormat {
    /// The entries of `source` (a file, or for ``pass`` a directory) in this format.
    ///
    /// - Throws: ``ImportError`` for a source that breaks its format or a bound; ``VaultError/io(operation:path:errno:)``
    ///   when it cannot be read.
    /// `progress` is told, for a pass store, how many of its files are decrypted (done, total) after each one.
    public func read(_ source: String, gpg: String = "gpg", progress: ((_ done: Int, _ total: Int) -> Void)? = nil) throws -> ParsedSource {
        switch self {
        case .pass: return try PassStore.read(directory: source, gpg: gpg, progress: progress)
        case .keepassXML: return try KeePassXML.read(try InputFile.read(source))
        case .bitwardenJSON: return try BitwardenJSON.read(try InputFile.read(source))
        case .onePUX: return try OnePUX.read(archive: source)
        case .csv: return try CSVImport.read(try InputFile.read(source))
        case .json: return try VaultJSON.read(try InputFile.read(source))
        }
    }
}

/// An input file, read whole after checking its size (``ImportLimits/maximumInputByteCount``).
enum InputFile {
    static func read(_ path: String, limit: Int = ImportLimits.maximumInputByteCount) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw VaultError.io(operation: "opening", path: path, errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw VaultError.io(operation: "reading", path: path, errno: errno) }
        guard (info.st_mode & S_IFMT) != S_IFDIR else { throw VaultError.io(operation: "reading", path: path, errno: EISDIR) }
        if (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) > limit {
            throw ImportError.tooLarge(what: "the file (\(Int(info.st_size) >> 20) MiB)", limit: "\(limit >> 20) MiB")
        }
        // A pipe or a file that grew: read at most one byte more than the limit to tell.
        let bytes = try Posix.readAll(fd, limit: limit + 1, path: path)
        if bytes.count > limit { throw ImportError.tooLarge(what: "the file", limit: "\(limit >> 20) MiB") }
        return bytes
    }
}

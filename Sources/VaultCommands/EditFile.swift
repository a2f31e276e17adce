import CVaultSystem
import FoundationEssentials
import VaultCore
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

/// The text `vault edit` hands the editor: one `field: value` line per field, a value's further lines after two
/// spaces (as `vault show` prints them), and back.
enum EditText {
    /// A line that is not `field: value` (or a further line of a value), with its number (1 the first).
    struct Malformed: Error, Equatable {
        let line: Int
        let reason: String
    }

    /// Whether a field can be written as a line: a name without `": "` that starts with neither a space nor a `#`,
    /// and a value of UTF-8 text without control characters other than tab and newline.
    static func fits(_ field: EntryRecord.Field) -> Bool {
        guard !field.name.contains(": "), !field.name.hasPrefix(" "), !field.name.hasSuffix(":") else { return false }
        return field.value.withUnsafeBytes { bytes in
            String(validating: bytes, as: UTF8.self) != nil
                && !bytes.contains { ($0 < 0x20 && $0 != 0x0A && $0 != 0x09) || $0 == 0x7F }
        }
    }

    /// The lines of `fields`, in guarded memory.
    static func render(_ fields: [EntryRecord.Field]) -> SecureBytes {
        let count = fields.reduce(0) { total, field in
            total + field.name.utf8.count + 3 + field.value.count + 2 * field.value.withUnsafeBytes { $0.count { $0 == 0x0A } }
        }
        return SecureBytes(capacity: count) { out in
            for field in fields {
                out.append(field.name + ": ")
                field.value.withUnsafeBytes { value in
                    for byte in value {
                        out.append(byte)
                        if byte == 0x0A { out.append("  ") }
                    }
                }
                out.append(UInt8(0x0A))
            }
        }
    }

    /// The fields of `text`, in order, each value in guarded memory. Empty lines are skipped.
    ///
    /// - Throws: ``Malformed`` for a line without `": "` (or a field name alone, `name:`), a further line before any
    ///   field, a name that is empty, not UTF-8 or holds a control character, or a field named twice.
    static func parse(_ text: SecureBytes) throws -> [(name: String, value: SecureBytes)] {
        try text.withUnsafeBytes { bytes in
            var fields: [(name: String, start: Int, pieces: [Range<Int>])] = []
            var lineStart = 0, number = 0
            while lineStart < bytes.count {
                number += 1
                let end = bytes[lineStart...].firstIndex(of: 0x0A) ?? bytes.count
                defer { lineStart = end + 1 }
                let line = lineStart..<end
                if line.isEmpty { continue }
                if bytes[line].starts(with: [0x20, 0x20]) {
                    guard !fields.isEmpty else { throw Malformed(line: number, reason: "a further line of a value before any field") }
                    fields[fields.count - 1].pieces.append(line.lowerBound + 2..<line.upperBound)
                    continue
                }
                let colon = bytes[line].indices.first { bytes[$0] == UInt8(ascii: ":") && ($0 + 1 == end || bytes[$0 + 1] == 0x20) }
                guard let colon, colon > line.lowerBound,
                      let name = String(validating: UnsafeRawBufferPointer(rebasing: bytes[line.lowerBound..<colon]), as: UTF8.self),
                      !name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
                else {
                    throw Malformed(line: number, reason: "expected 'field: value' (a value's further lines start with two spaces)")
                }
                guard !fields.contains(where: { $0.name == name }) else {
                    throw Malformed(line: number, reason: "field '\(TerminalText.escaped(name))' is named twice")
                }
                fields.append((name, number, [min(colon + 2, end)..<end]))
            }
            return fields.map { field in
                let count = field.pieces.reduce(0) { $0 + $1.count } + field.pieces.count - 1
                let value = SecureBytes(capacity: count) { out in
                    for (index, piece) in field.pieces.enumerated() {
                        if index > 0 { out.append(UInt8(0x0A)) }
                        out.append(UnsafeRawBufferPointer(rebasing: bytes[piece]))
                    }
                }
                return (field.name, value)
            }
        }
    }
}

/// The file `vault edit` hands the editor: in a private directory (0700) on a tmpfs (`/dev/shm`, else
/// `$XDG_RUNTIME_DIR`), never in the home directory or on a disk, created 0600; overwritten with zeros and removed
/// with its directory (and whatever the editor left there: a swap file) when done.
final class EditFile {
    let directory: String
    let path: String

    /// Where tmpfs is looked for, in order.
    static var candidates: [String] {
        ["/dev/shm"] + (ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].map { [$0] } ?? [])
    }

    /// A tmpfs (or ramfs) file system's magic number (statfs(2)).
    static let memoryFileSystems: Set<Int> = [0x0102_1994, 0x8584_58F6]

    /// Makes the directory and the file (named after the entry's last path component) holding `contents`.
    ///
    /// - Throws: ``CLIError`` when no tmpfs is there; ``VaultError/io(operation:path:errno:)``.
    init(entry: String, contents: SecureBytes) throws {
        guard let base = Self.candidates.first(where: { path in
            Self.memoryFileSystems.contains(vault_filesystem_type(path)) && access(path, W_OK) == 0
        }) else {
            throw CLIError.message(
                "cannot edit: no memory file system to hold the file being edited (/dev/shm or $XDG_RUNTIME_DIR on tmpfs); nothing is written to a disk",
                exitCode: Exit.failure)
        }
        var template = Array((base + "/vault-edit-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw VaultError.io(operation: "cannot create a directory in", path: base, errno: errno)
        }
        directory = String(cString: made)
        let leaf = entry.split(separator: "/").last.map(String.init) ?? "entry"
        let safe = String(leaf.unicodeScalars.map { $0.isASCII && (isalnum(Int32($0.value)) != 0 || "._-".unicodeScalars.contains($0)) ? Character($0) : "_" })
        path = directory + "/" + String(safe.prefix(64)) + ".txt"
        do {
            try write(contents)
        } catch {
            remove()
            throw error
        }
    }

    /// Replaces the file's bytes with `contents` (in place, 0600).
    func write(_ contents: SecureBytes) throws {
        let fd = Posix.retryingEINTR { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot create", path: path, errno: errno) }
        defer { close(fd) }
        guard fchmod(fd, 0o600) == 0 else { throw VaultError.io(operation: "cannot set permissions of", path: path, errno: errno) }
        let code = contents.withUnsafeBytes { Posix.writeAll(fd, $0) }
        guard code == 0 else { throw VaultError.io(operation: "cannot write", path: path, errno: code) }
    }

    /// The file's bytes now (whatever the editor left at the path: a rename over it included), in guarded memory.
    func read() throws -> SecureBytes {
        let fd = Posix.retryingEINTR { open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot read", path: path, errno: errno) }
        defer { close(fd) }
        return try SecretInput.read(fd: fd, limit: Self.limit, untilNewline: false, name: path)
    }

    /// The largest file read back: the fields of one entry are at most 64 MiB each, but a file that large is no edit.
    static let limit = 16 << 20

    /// Overwrites every file in the directory with zeros, removes them and the directory.
    func remove() {
        guard let handle = opendir(directory) else { return }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(handle)
        for name in names {
            let file = directory + "/" + name
            var info = stat()
            if lstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                let fd = open(file, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
                if fd >= 0 {
                    let zeros = [UInt8](repeating: 0, count: 64 << 10)
                    var left = Int(info.st_size)
                    while left > 0 {
                        let n = zeros.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, min(left, $0.count)) }
                        guard n > 0 else { break }
                        left -= n
                    }
                    fsync(fd)
                    close(fd)
                }
            }
            unlink(file)
        }
        rmdir(directory)
    }
}

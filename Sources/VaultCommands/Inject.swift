import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore
import VaultTerminal

/// `vault inject [-i TEMPLATE] [-o OUT]`: copies a template, each `{{ vault "ENTRY" }}` replaced by the entry's
/// value and each `{{ vault "ENTRY" "FIELD" }}` by that field's (docs in the README, "Any process").
package struct Inject: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "inject",
        abstract: "Fill {{ vault \"ENTRY\" }}, {{ vault \"ENTRY\" \"FIELD\" }} and {{ otp \"ENTRY\" }} placeholders of a template (stdin or -i) into stdout or -o OUT (0600, atomic).",
        discussion: """
            A placeholder is `{{`, optional spaces, `vault`, spaces, the entry's name in double quotes (\\" and \\\\ inside it stand for " and \\), optionally spaces and a field's name in double quotes (`{{ vault "servers/db" "username" }}`; without it, the entry's value: its password field), optional spaces, `}}`. `{{ otp "ENTRY" }}` is the entry's current one-time code, as 'vault otp ENTRY' prints it (`{{ vault "ENTRY" "otp" }}` is the otpauth:// URI stored, its seed). Any other text, other `{{ ... }}` included, is copied as it is. A missing entry or field is an error naming it (exit 2) and nothing is written; a malformed placeholder is an error naming its line (exit 64). OUT is replaced atomically and created 0600.
            """)

    @Option(name: [.customShort("i"), .customLong("in")], help: ArgumentHelp("The template (default: stdin).", valueName: "path"))
    var input: String?

    @Option(name: [.customShort("o"), .customLong("out")], help: ArgumentHelp("Write here (default: stdout).", valueName: "path"))
    var output: String?

    /// The largest template accepted, in bytes.
    static let maximumTemplateByteCount = 16 << 20

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if input == nil, options.passphraseFD == 0 { throw ValidationError("stdin carries the template: use another --passphrase-fd") }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            let template: [UInt8]
            if let input {
                template = try Posix.readFile(input, limit: Self.maximumTemplateByteCount)
            } else {
                let bytes = try SecretInput.read(fd: 0, limit: Self.maximumTemplateByteCount, untilNewline: false, name: "stdin")
                template = bytes.withUnsafeBytes { Array($0) }
            }
            let pieces = try Template.parse(template)
            let references = Template.references(pieces)
            try SecretReference.runningCodesInVaultNet(references, stdin: input == nil ? template : nil)
            var values: [SecretReference: SecureBytes] = [:]
            if !references.isEmpty {
                try withVault(options) { vault in
                    values = try SecretReference.values(references, in: vault) { throw CLIError.missingEntry($0.entry, in: vault) }
                }
            }
            let filled = Template.fill(pieces, of: template, with: values)
            if let output {
                try filled.withUnsafeBytes { try OutputFile.replace(output, with: $0) }
            } else {
                try filled.withUnsafeBytes { try writeToStdout($0) }
            }
        }
    }
}

/// A template cut into literal text and `{{ vault "NAME" }}` / `{{ vault "NAME" "FIELD" }}` placeholders.
enum Template {
    enum Piece: Equatable {
        case text(Range<Int>)
        case entry(SecretReference)
    }

    /// What the placeholders of `pieces` name, in order (one may come more than once).
    static func references(_ pieces: [Piece]) -> [SecretReference] {
        pieces.compactMap { if case let .entry(reference) = $0 { return reference } else { return nil } }
    }

    /// `template` with each placeholder of `pieces` replaced by its value (every one must be in `values`), in
    /// guarded memory.
    static func fill(_ pieces: [Piece], of template: [UInt8], with values: [SecretReference: SecureBytes]) -> SecureBytes {
        let count = pieces.reduce(0) { total, piece in
            switch piece {
            case let .text(range): return total + range.count
            case let .entry(name): return total + (values[name]?.count ?? 0)
            }
        }
        return SecureBytes(capacity: count) { out in
            for piece in pieces {
                switch piece {
                case let .text(range): template[range].withUnsafeBytes { out.append($0) }
                case let .entry(name): if let value = values[name] { out.append(value) }
                }
            }
        }
    }

    static func parse(_ bytes: [UInt8]) throws -> [Piece] {
        var pieces: [Piece] = []
        var textStart = 0
        var index = 0
        func at(_ offset: Int) -> UInt8? { offset < bytes.count ? bytes[offset] : nil }
        func line(_ offset: Int) -> Int { bytes[..<offset].filter { $0 == 0x0A }.count + 1 }
        while index + 1 < bytes.count {
            guard bytes[index] == UInt8(ascii: "{"), bytes[index + 1] == UInt8(ascii: "{") else { index += 1; continue }
            var cursor = index + 2
            while at(cursor) == UInt8(ascii: " ") { cursor += 1 }
            // `vault` (a value or a field) or `otp` (the current code), then a space or a quote.
            let keyword = ["vault", "otp"].first { word in
                bytes[cursor...].starts(with: Array(word.utf8)) && [UInt8(ascii: " "), UInt8(ascii: "\"")].contains(at(cursor + word.utf8.count))
            }
            guard let keyword else { index += 1; continue }  // another `{{`: literal text
            let malformed = CLIError.message(
                "malformed placeholder on line \(line(index)): expected {{ vault \"ENTRY\" }}, {{ vault \"ENTRY\" \"FIELD\" }} or {{ otp \"ENTRY\" }}",
                exitCode: Exit.usage)
            cursor += keyword.utf8.count
            /// A double-quoted string at `cursor` (after spaces), `\"` and `\\` inside it; `nil`: none there.
            func quoted() throws -> String? {
                while at(cursor) == UInt8(ascii: " ") { cursor += 1 }
                guard at(cursor) == UInt8(ascii: "\"") else { return nil }
                cursor += 1
                var name: [UInt8] = []
                while true {
                    guard let byte = at(cursor), byte != 0x0A else { throw malformed }
                    cursor += 1
                    if byte == UInt8(ascii: "\"") { break }
                    if byte == UInt8(ascii: "\\") {
                        guard let escaped = at(cursor), escaped == UInt8(ascii: "\"") || escaped == UInt8(ascii: "\\") else {
                            throw malformed
                        }
                        name.append(escaped)
                        cursor += 1
                    } else {
                        name.append(byte)
                    }
                }
                guard let text = String(validating: name, as: UTF8.self), !text.isEmpty else { throw malformed }
                return text
            }
            guard let entry = try quoted() else { throw malformed }
            let field = keyword == "vault" ? try quoted() : nil
            while at(cursor) == UInt8(ascii: " ") { cursor += 1 }
            guard at(cursor) == UInt8(ascii: "}"), at(cursor + 1) == UInt8(ascii: "}") else { throw malformed }
            if textStart < index { pieces.append(.text(textStart..<index)) }
            pieces.append(.entry(keyword == "otp" ? SecretReference(otpCodeOf: entry) : SecretReference(entry: entry, field: field)))
            index = cursor + 2
            textStart = index
        }
        if textStart < bytes.count { pieces.append(.text(textStart..<bytes.count)) }
        return pieces
    }
}

/// Replaces a file the user names (not a vault) atomically: a temporary file beside it (`O_EXCL|O_NOFOLLOW`,
/// 0600 whatever the umask), written, `fsync`ed, renamed over the file, the directory `fsync`ed. A crash leaves
/// the old file or the new one, never half of it.
///
/// What is not a regular file is never replaced: a FIFO or a character device (`/dev/null`, a terminal) is
/// written through, as a shell's `>` would; a symbolic link, a directory, a socket or a block device is refused.
package enum OutputFile {
    /// Why `path` cannot be written (exit 1).
    struct Refused: Error, CLIReportable, CustomStringConvertible {
        let path: String
        let kind: String
        var exitCode: Int32 { Exit.failure }
        var code: String { "not_a_regular_file" }
        var description: String { "cannot write '\(path)': it is \(kind), not a regular file" }
        var hint: String? {
            kind == "a symbolic link"
                ? "give the path the link points to, or leave out -o to write to stdout"
                : "give the path of a regular file (it is replaced atomically, 0600), or leave out -o to write to stdout"
        }
    }

    package static func replace(_ path: String, with bytes: UnsafeRawBufferPointer) throws {
        var info = stat()
        if lstat(path, &info) == 0 {
            switch info.st_mode & S_IFMT {
            case S_IFREG: break
            case S_IFIFO, S_IFCHR: return try writeThrough(path, bytes)
            default: throw Refused(path: path, kind: Posix.kind(of: info.st_mode))
            }
        }
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let temporary = directory + "/." + url.lastPathComponent + "." + String(UInt64.random(in: 0...UInt64.max), radix: 16) + ".tmp"
        let fd = Posix.retryingEINTR { open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot create", path: temporary, errno: errno) }
        var renamed = false
        defer { if !renamed { unlink(temporary) } }
        do {
            defer { close(fd) }
            guard fchmod(fd, 0o600) == 0 else { throw VaultError.io(operation: "cannot set permissions of", path: temporary, errno: errno) }
            let code = Posix.writeAll(fd, bytes)
            guard code == 0 else { throw VaultError.io(operation: "cannot write", path: temporary, errno: code) }
            guard Posix.retryingEINTR({ fsync(fd) }) == 0 else { throw VaultError.io(operation: "cannot fsync", path: temporary, errno: errno) }
        }
        guard rename(temporary, path) == 0 else { throw VaultError.io(operation: "cannot replace", path: path, errno: errno) }
        renamed = true
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else { return }
        defer { close(directoryFD) }
        guard Posix.retryingEINTR({ fsync(directoryFD) }) == 0 else {
            throw VaultError.io(operation: "cannot fsync the directory of", path: path, errno: errno)
        }
    }

    /// Writes into a FIFO or a character device as it is (`O_NOFOLLOW`, no create, no truncate: neither has a
    /// content to replace). A FIFO without a reader waits for one, as `cat > fifo` does.
    private static func writeThrough(_ path: String, _ bytes: UnsafeRawBufferPointer) throws {
        let fd = Posix.retryingEINTR { open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC) }
        guard fd >= 0 else { throw VaultError.io(operation: "cannot open", path: path, errno: errno) }
        defer { close(fd) }
        // Only what lstat saw: a path swapped for a regular file or a link in between is not written through.
        var info = stat()
        guard fstat(fd, &info) == 0, [S_IFIFO, S_IFCHR].contains(info.st_mode & S_IFMT) else {
            throw Refused(path: path, kind: "no longer a FIFO or a character device")
        }
        let code = Posix.writeAll(fd, bytes)
        guard code == 0 else { throw VaultError.io(operation: "cannot write", path: path, errno: code) }
    }
}

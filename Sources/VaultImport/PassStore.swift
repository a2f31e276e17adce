import Foundation
import Synchronization
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// A pass (or gopass) store: a directory tree of `NAME.gpg` files, each decrypted by the user's own gpg as pass does
/// (`gpg --decrypt --quiet --batch FILE`, the user's gpg-agent asking for the key's passphrase when it must; no
/// passphrase ever on a command line). docs/IMPORT-EXPORT.md, "pass".
enum PassStore {
    /// The entries of the store at `directory`, in path order: the name is the file's path under `directory`
    /// without `.gpg`; hidden files and directories (`.git`, `.extensions`, `.gpg-id`) are not entries. Each entry
    /// keeps its times (``PassTimes``): the store's git history, else the file's modification time.
    ///
    /// - Throws: ``ImportError/decryptionFailed(file:detail:)`` for a file gpg does not decrypt (the import stops:
    ///   a store is the user's own, and a silent gap would be worse), ``ImportError/tooLarge(what:limit:)``.
    static func read(directory: String, gpg: String, progress: ((_ done: Int, _ total: Int) -> Void)? = nil) throws -> ParsedSource {
        var info = stat()
        guard stat(directory, &info) == 0 else { throw VaultError.io(operation: "opening", path: directory, errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw ImportError.unsupported(reason: "'\(directory)' is not a directory", hint: "give the store's directory, e.g. ~/.password-store")
        }
        var files: [String] = []
        var skipped: [SkippedItem] = []
        try collect(directory, relative: "", into: &files, skipped: &skipped)
        guard files.count <= ImportLimits.maximumEntryCount else {
            throw ImportError.tooLarge(what: "the store (\(files.count) files)", limit: "\(ImportLimits.maximumEntryCount) entries")
        }
        let executable = try GPG.locate(gpg)
        let times = PassTimes.read(directory: directory, files: files)
        var parsed = ParsedSource(skipped: skipped)
        var total = 0
        for file in files.sorted() {
            let body = try GPG.decrypt(executable: executable, file: directory + "/" + file, shown: file)
            total += body.count
            guard total <= ImportLimits.maximumInputByteCount else {
                throw ImportError.tooLarge(what: "the decrypted store", limit: "\(ImportLimits.maximumInputByteCount >> 20) MiB")
            }
            let path = String(file.dropLast(4)).split(separator: "/").map(String.init)
            var version = parse(body, values: parsed.values)
            version.modified = times[file]?.modified
            parsed.entries.append(PortableEntry(path: path, current: version, created: times[file]?.created, origin: file))
            progress?(parsed.entries.count, files.count)
        }
        return parsed
    }

    /// The `.gpg` files under `directory` (relative paths); symbolic links to directories are not followed (a loop
    /// would never end), `.age` files (passage, gopass's age backend) are skipped and said so.
    static func collect(_ directory: String, relative: String, into files: inout [String], skipped: inout [SkippedItem]) throws {
        let path = relative.isEmpty ? directory : directory + "/" + relative
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: path) } catch {
            throw VaultError.io(operation: "listing", path: path, errno: EACCES)
        }
        for name in names.sorted() where !name.hasPrefix(".") {
            let inner = relative.isEmpty ? name : relative + "/" + name
            var info = stat()
            guard lstat(directory + "/" + inner, &info) == 0 else { continue }
            if (info.st_mode & S_IFMT) == S_IFDIR {
                try collect(directory, relative: inner, into: &files, skipped: &skipped)
            } else if name.hasSuffix(".gpg"), name.count > 4 {
                files.append(inner)
                if files.count > ImportLimits.maximumEntryCount { return }
            } else if name.hasSuffix(".age") {
                skipped.append(SkippedItem(item: inner, reason: "age-encrypted (passage, gopass's age backend): not read by this import"))
            }
        }
    }

    /// One decrypted file as an entry's fields: line 1 the password (or, when it is an `otpauth://` URI as
    /// `pass otp insert` writes, the otp); then `otpauth://` lines as otp, `key: value` lines as fields (`login`,
    /// `user`, `username` → username; `url`, `website` → url; any case; secret unless the key is one of
    /// ``nonSecretKeys``), the rest as notes. gopass's YAML after a
    /// `---` line gives its `key: value` lines the same way; its legacy `GOPASS-SECRET-1.0` headers too.
    ///
    /// The body is read as text line by line (ordinary copies, released when this returns).
    static func parse(_ body: SecureBytes, values: ValueArena) -> PortableVersion {
        let text = body.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        // "\r\n" is one Character: split on both.
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map(String.init)
        if lines.last == "" { lines.removeLast() }
        var fields = FieldList(values)
        var notes: [String] = []
        var rest = lines.dropFirst()
        if let first = lines.first {
            if first == "GOPASS-SECRET-1.0" {
                // Headers until a blank line (the password among them), then the body.
                while let line = rest.first, !line.isEmpty {
                    rest = rest.dropFirst()
                    if let (key, value) = keyValue(line) {
                        if key.lowercased() == "password" { fields.add("password", value, secret: true) } else { add(key, value, to: &fields) }
                    }
                }
                rest = rest.dropFirst()
                notes = Array(rest)
                rest = []
            } else if first.lowercased().hasPrefix("otpauth://") {
                fields.add("otp", first, secret: true, trim: true)
            } else {
                fields.add("password", first, secret: true)
            }
        }
        for line in rest {
            if line == "---" { continue }  // gopass: YAML follows; its `key: value` lines read as the others
            if line.lowercased().hasPrefix("otpauth://") {
                fields.add("otp", line, secret: true, trim: true)
            } else if let (key, value) = keyValue(line) {
                add(key, value, to: &fields)
            } else {
                notes.append(line)
            }
        }
        while notes.last?.trimmingCharacters(in: .whitespaces).isEmpty == true { notes.removeLast() }
        while notes.first?.trimmingCharacters(in: .whitespaces).isEmpty == true { notes.removeFirst() }
        fields.add("notes", notes.joined(separator: "\n"))
        return PortableVersion(fields: fields.fields)
    }

    /// The keys whose values are not secret: a `key: value` line with any other key is a secret field (shown masked),
    /// as a pass store holds nothing it did not mean to encrypt.
    static let nonSecretKeys: Set<String> = ["user", "username", "login", "email", "url", "website"]

    static func add(_ key: String, _ value: String, to fields: inout FieldList) {
        switch key.lowercased() {
        case "login", "user", "username": if !fields.has("username") { return fields.add("username", value) }
        case "url", "website": if !fields.has("url") { return fields.add("url", value) }
        case "password", "pass": return fields.add("password", value, secret: true)
        default: break
        }
        fields.add(key, value, secret: !nonSecretKeys.contains(key.lowercased()))
    }

    /// `key: value` (a key of letters, digits, spaces, `_`, `-`, `.`, up to 64 characters, not starting with a space;
    /// a colon followed by a space or the end of the line): `https://…` is not one.
    static func keyValue(_ line: String) -> (String, String)? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let key = line[..<colon]
        let after = line[line.index(after: colon)...]
        guard !key.isEmpty, key.count <= 64, key.first != " ", after.isEmpty || after.first == " " || after.first == "\t",
              key.allSatisfy({ $0.isLetter || $0.isNumber || " _-.".contains($0) })
        else { return nil }
        return (key.trimmingCharacters(in: .whitespaces), after.trimmingCharacters(in: .whitespaces))
    }
}

/// The user's gpg, run as pass runs it.
enum GPG {
    /// `name` as an absolute path: itself when it has a `/`, else found on `PATH` (`gpg2` first when `name` is
    /// `gpg`, as pass does).
    static func locate(_ name: String) throws -> String {
        if name.contains("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for candidate in (name == "gpg" ? ["gpg2", "gpg"] : [name]) {
            for directory in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/\(candidate)") {
                return "\(directory)/\(candidate)"
            }
        }
        throw ImportError.unsupported(reason: "no '\(name)' on PATH to decrypt the store", hint: "install gnupg (apt-get install gnupg), as pass needs")
    }

    /// The decrypted bytes of `file`, read from gpg's stdout straight into guarded memory (at most
    /// ``ImportLimits/maximumPassFileByteCount``). gpg's stderr gives the reason when it fails.
    static func decrypt(executable: String, file: String, shown: String) throws -> SecureBytes {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--decrypt", "--quiet", "--batch", "--", file]
        let output = Pipe(), errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        // Not waitUntilExit(): on Linux it polls its run loop every 50 ms, 50 ms more per entry of the store.
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        do { try process.run() } catch {
            throw ImportError.decryptionFailed(file: shown, detail: "cannot run \(executable)")
        }
        let errorText = Mutex(Data())
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            let text = (try? errors.fileHandleForReading.read(upToCount: 64 << 10)) ?? Data()
            errorText.withLock { $0 = text }
            _ = try? errors.fileHandleForReading.readToEnd()
            group.leave()
        }
        let buffer = SecretBuffer()
        defer { buffer.wipe() }
        let fd = output.fileHandleForReading.fileDescriptor
        struct ReadFailed: Error {}
        var tooLarge = false
        while true {
            let result: Result<Int, ReadFailed> = buffer.append(upTo: 1 << 16) { space in
                let count = Posix.retryingEINTR { Glibc.read(fd, space.baseAddress, space.count) }
                return count >= 0 ? .success(count) : .failure(ReadFailed())
            }
            guard case .success(let count) = result, count > 0 else { break }
            if buffer.count > ImportLimits.maximumPassFileByteCount {
                tooLarge = true
                process.terminate()
                break
            }
        }
        try? output.fileHandleForReading.close()
        group.wait()
        exited.wait()
        if tooLarge {
            throw ImportError.tooLarge(what: "'\(shown)' decrypted", limit: "\(ImportLimits.maximumPassFileByteCount >> 20) MiB")
        }
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let line = String(decoding: errorText.withLock { $0 }, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? "gpg exited with \(process.terminationStatus)"
            throw ImportError.decryptionFailed(file: shown, detail: line)
        }
        return buffer.secureBytes()
    }
}

import FoundationEssentials
import Glibc
import VaultCore

/// The vault's file in a git work tree (issue 33 §5): git stores and checks out its bytes as they are, whatever a
/// committed `.gitattributes` says, and a git sync checks that it did.
package enum GitVaultFile {
    /// `text` as a gitattributes or gitignore pattern matched literally: spaces and glob characters escaped.
    package static func literal(_ text: some StringProtocol) -> String { text.map { "*?[ \\#!".contains($0) ? "\\\($0)" : String($0) }.joined() }

    /// The attributes that make git change a file's bytes between the work tree and the repository.
    package static let converting = ["text", "eol", "filter", "ident", "working-tree-encoding"]

    /// The line of `$GIT_DIR/info/attributes` for the vault at `relative`: no conversion, the vault's drivers.
    /// That file comes before every `.gitattributes` (git's highest precedence), and a clone never receives it.
    package static func pinnedLine(_ relative: String) -> String {
        "/\(literal(relative)) " + converting.map { "-" + $0 }.joined(separator: " ") + " merge=vault diff=vault"
    }

    /// Appends ``pinnedLine(_:)`` to this clone's `info/attributes` when it is not there; true when it was added.
    package static func pin(_ git: Git, top: String, relative: String) throws -> Bool {
        var path = try git.output(["rev-parse", "--git-path", "info/attributes"]).trimming(.newlines)
        if !path.hasPrefix("/") { path = top + "/" + path }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try !append([pinnedLine(relative)], to: path).isEmpty
    }

    /// Appends to the text file `path` those of `lines` it does not have yet (as whole lines), and returns them.
    package static func append(_ lines: [String], to path: String) throws -> [String] {
        let existing = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let present = Set(existing.split(separator: "\n").map { $0.trimming(.whitespaces) })
        let missing = lines.filter { !present.contains($0) }
        if !missing.isEmpty {
            let text = existing + (existing.isEmpty || existing.hasSuffix("\n") ? "" : "\n") + missing.joined(separator: "\n") + "\n"
            // Foundation's atomic write on purpose, not the vault's (VaultFile: 0600, fsync of the directory): these are
            // git's own files (.gitattributes, .gitignore, info/attributes), shared and committed, with the mode git
            // and the user's umask give them; nothing in them is secret, and git re-creates nothing from them.
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        }
        return missing
    }

    /// The converting attributes git gives `relative`, as `name: value` (empty when none converts).
    package static func conversions(_ git: Git, relative: String) throws -> [String] {
        try git.output(["check-attr"] + converting + ["--", relative]).split(separator: "\n").compactMap { line in
            // "PATH: ATTRIBUTE: VALUE", PATH possibly quoted: the last two fields.
            let fields = line.components(separatedBy: ": ")
            guard fields.count >= 3, !["unspecified", "unset"].contains(fields[fields.count - 1]) else { return nil }
            return fields.suffix(2).joined(separator: ": ")
        }
    }

    /// Before a commit of the vault: git would store the work tree's bytes as they are (its attributes and
    /// configuration convert nothing), or nothing is committed.
    package static func checkStoredAsIs(_ git: Git, relative: String) throws {
        let stored = try git.output(["hash-object", "--", relative])
        guard stored == (try git.output(["hash-object", "--no-filters", "--", relative])) else {
            throw SyncError.git(.converted(relative: relative, conversions: (try? conversions(git, relative: relative)) ?? [], checkedOut: false))
        }
    }

    /// After git checked out `HEAD`: the work tree's vault holds the bytes of `HEAD:relative`. If git converted
    /// them, the committed bytes are put back (the vault opens again) and the sync stops before it pushes.
    package static func checkCheckedOut(_ git: Git, relative: String, path: String) throws {
        let blob = try git.output(["rev-parse", "--verify", "HEAD:" + relative]).trimming(.newlines)
        let present = try git.output(["hash-object", "--no-filters", "--", relative]).trimming(.newlines)
        guard present != blob else { return }
        try replace(path, with: git.blob(blob))
        throw SyncError.git(.converted(relative: relative, conversions: (try? conversions(git, relative: relative)) ?? [], checkedOut: true))
    }

    /// `.gitattributes` and `.gitignore` at the work tree's top, those whose change since the last commit (or whose
    /// whole text, before the first) is only lines `vault git setup` writes (the vault's attribute line; its lock and
    /// temporary files): a sync commits them with the vault, as setup says to. Any other change is the user's.
    package static func setupChanges(_ git: Git, top: String) throws -> [String] {
        let hasHead = try git.run(["rev-parse", "-q", "--verify", "HEAD"]).status == 0
        return try [".gitattributes", ".gitignore"].filter { name in
            guard let text = try? String(contentsOfFile: top + "/" + name, encoding: .utf8) else { return false }
            var added = text.split(separator: "\n").map(String.init)
            if hasHead, try git.run(["cat-file", "-e", "HEAD:" + name]).status == 0 {
                let changed = try git.output(["diff", "--no-color", "--no-ext-diff", "-U0", "HEAD", "--", name]).split(separator: "\n")
                    .filter { ($0.hasPrefix("+") && !$0.hasPrefix("+++")) || ($0.hasPrefix("-") && !$0.hasPrefix("---")) }
                guard !changed.contains(where: { $0.hasPrefix("-") }) else { return false }
                added = changed.map { String($0.dropFirst()) }
            }
            let lines = added.filter { !$0.trimming(.whitespaces).isEmpty }
            return !lines.isEmpty && lines.allSatisfy { line in
                line.hasPrefix("/") && (name == ".gitattributes" ? line.hasSuffix(" merge=vault diff=vault") : line.hasSuffix(".lock") || line.hasSuffix(".*.tmp"))
            }
        }
    }

    /// Writes `bytes` over the file `path` (a temporary file of mode 0600 beside it, then a rename: never half).
    package static func replace(_ path: String, with bytes: [UInt8]) throws {
        let temporary = path + ".vault-merge.tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
            throw VaultError.io(operation: "writing", path: temporary, errno: errno)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw VaultError.io(operation: "renaming over", path: path, errno: code)
        }
    }

    /// Makes the vault at `path` 0600 when git left it readable by others (git writes what it checks out 0644):
    /// only a regular file of this user's (not a link: its target is not ours to change). True when it did.
    package static func makePrivate(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), info.st_mode & 0o077 != 0,
              chmod(path, 0o600) == 0
        else { return false }
        return true
    }

    /// The bytes of a copy of a vault (`vault merge`, git's merge driver and textconv, a git sync), read only while
    /// they can be a vault: a file larger than a vault can be is refused by its size, and one that does not start
    /// with a vault's magic at its first bytes, before the rest is read.
    package static func read(_ path: String) throws -> [UInt8] {
        let largestFile = VaultFileShape.largestFile
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw VaultError.io(operation: "opening", path: path, errno: errno) }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > off_t(largestFile) {
            throw VaultError.corrupt(path: path, reason: .tooLarge(byteCount: Int(info.st_size)))
        }
        let start = try Posix.readAll(fd, limit: VaultFileShape.magicByteCount, path: path)
        guard VaultFileShape.startsAsVault(start) else { throw VaultError.corrupt(path: path, reason: .badMagic) }
        guard start.count == VaultFileShape.magicByteCount else { return start }
        let bytes = try start + Posix.readAll(fd, limit: largestFile + 1 - start.count, path: path)
        guard bytes.count <= largestFile else { throw VaultError.vaultTooLarge(path: path, byteCount: bytes.count) }
        return bytes
    }
}

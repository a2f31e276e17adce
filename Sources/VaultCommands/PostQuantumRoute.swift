import FoundationEssentials
import Glibc
import VaultAge
import VaultCore
import VaultTerminal

/// Which command lines `vault` hands to `vault-net` because they need age's post-quantum keys (`age1pq1…`,
/// `AGE-SECRET-KEY-PQ-1…`, the `mlkem768x25519` stanza): X-Wing is swift-crypto's, which `vault` does not link, so
/// that its common verbs do not pay for it at start-up (issue 20). `vault-net` installs VaultAgePQ's keys
/// (``VaultAge/AgeKeys/install(postQuantum:)``) and runs every verb, so handing it a command line is always right,
/// only slower; this decides before anything is parsed, asked or read from stdin, from the command line, the
/// environment and what can be looked at twice (regular files, the vault's header):
///
/// - `identity new --pq`;
/// - `recipients add` with an `age1pq1…` recipient, or a recipients file (`-R`) that holds one or is not a regular
///   file (a pipe is read once, by whichever program reads it);
/// - `recipients add`/`remove` and `passwd` on a vault with `mlkem768x25519` stanzas (its recipients are wrapped
///   again, or checked against the new ones);
/// - an identity (`--identity FILE`, else `VAULT_IDENTITY`) that holds an `AGE-SECRET-KEY-PQ-1…` line, that is
///   not a regular file, or that is a sealed identity (`vault identity new`) whose recipient file beside it
///   (`identity.pub` for `identity.vault`) names an `age1pq1…` recipient: the marker that tells without the
///   passphrase;
/// - an identity given for a vault with `mlkem768x25519` stanzas (a sealed identity without its marker, say).
///
/// A vault the agent holds is served before this is asked (``QuickPath``), so `vault get` through the agent
/// runs no post-quantum code even for a vault shared that way: the agent that opened it did.
package enum PostQuantumRoute {
    /// Whether `arguments` (a full argv, verb first) need `vault-net`: never in a program that has the
    /// post-quantum keys installed (`vault-net` itself).
    package static func needsVaultNet(_ arguments: [String]) -> Bool {
        // The common case first, touching nothing but argv and one environment variable (this runs at every start
        // of `vault` that the quick path did not serve): no identity, and a verb that never needs the keys.
        guard arguments.count > 1 else { return false }
        let verb = arguments[1]
        var identityGiven = !(Posix.environment("VAULT_IDENTITY") ?? "").isEmpty
        for word in arguments.dropFirst(2) where !identityGiven {
            if word == "--" { break }
            identityGiven = word == "--identity" || word.hasPrefix("--identity=")
        }
        guard identityGiven || verb == "identity" || verb == "recipients" || verb == "passwd" else { return false }
        guard AgeKeys.postQuantum == nil else { return false }
        let words = Array(arguments.dropFirst())
        // After `--` come names (operands), never options.
        let options = Array(words.prefix { $0 != "--" })
        let action = words.count > 1 ? words[1] : nil
        let vaultPath = VaultOptions.resolvedPath(values(of: "--vault", in: options).last)
        if verb == "identity", options.contains("--pq") { return true }
        if verb == "recipients", action == "add" || action == "remove" {
            if options.dropFirst(2).contains(where: { AgeKeys.isPostQuantum(recipient: $0) }) { return true }
            for file in values(of: "--recipients-file", short: "-R", in: options) where recipientsFileNeedsVaultNet(file) {
                return true
            }
            if hasPostQuantumStanzas(vaultPath) { return true }
        }
        if verb == "passwd", hasPostQuantumStanzas(vaultPath) { return true }
        let identity = values(of: "--identity", in: options).last
            ?? Posix.environment("VAULT_IDENTITY").flatMap { $0.isEmpty ? nil : $0 }
        if let identity, identityNeedsVaultNet(identity) || hasPostQuantumStanzas(vaultPath) { return true }
        return false
    }

    /// Runs `vault-net` with this process's arguments in its place (for a command that finds, before it has
    /// read or asked anything, that it needs the post-quantum keys after all).
    package static func executeVaultNet() -> Never {
        VaultNetBinary.execute(RoutedVerb.dispatchingOnProgramName(CommandLine.arguments))
    }

    /// The values of option `long` (`--long VALUE`, `--long=VALUE`) or `short` (`-R VALUE`, `-RVALUE`) in `words`.
    static func values(of long: String, short: String? = nil, in words: [String]) -> [String] {
        var found: [String] = []
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            if word == long || word == short {
                if index < words.count { found.append(words[index]) }
                index += 1
            } else if word.hasPrefix(long + "=") {
                found.append(String(word.dropFirst(long.count + 1)))
            } else if let short, word.hasPrefix(short), word.count > short.count, !word.hasPrefix("--") {
                found.append(String(word.dropFirst(short.count)).drop { $0 == "=" }.description)
            }
        }
        return found
    }

    /// How a vault file starts (docs/FORMAT.md): `"\x89VAULT\r\n"`.
    static let magic: [UInt8] = [0x89, 0x56, 0x41, 0x55, 0x4C, 0x54, 0x0D, 0x0A]

    /// Whether `path` is a regular file (following links): what can be read here and again by `vault-net`.
    static func isRegularFile(_ path: String) -> Bool? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & S_IFMT == S_IFREG
    }

    /// A recipients file that holds an `age1pq1…` line, or that is not a regular file.
    static func recipientsFileNeedsVaultNet(_ path: String) -> Bool {
        guard let regular = isRegularFile(path) else { return false }  // missing: `vault` says so
        guard regular else { return true }
        guard let data = FileManager.default.contents(atPath: path) else { return false }
        return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).contains {
            AgeKeys.isPostQuantum(recipient: $0.drop { $0 == " " || $0 == "\t" })
        }
    }

    /// An identity file that holds a post-quantum identity, that is not a regular file, or that is a sealed
    /// identity marked post-quantum. One that cannot be read (missing, loose permissions) is `vault`'s to report.
    static func identityNeedsVaultNet(_ path: String) -> Bool {
        guard let regular = isRegularFile(path) else { return false }
        guard regular else { return true }
        guard let contents = try? SecretInput.readIdentityFile(path) else { return false }
        let sealed = contents.withUnsafeBytes { $0.starts(with: magic) }
        if sealed {
            // The recipient file beside it ('vault identity new' writes identity.pub next to identity.vault).
            let stem = path.hasSuffix(".vault") ? String(path.dropLast(".vault".count)) : path
            guard let marker = FileManager.default.contents(atPath: stem + ".pub") else { return false }
            return String(decoding: marker, as: UTF8.self).split(whereSeparator: \.isNewline).contains {
                AgeKeys.isPostQuantum(recipient: $0)
            }
        }
        return contents.withUnsafeBytes { AgeKeys.holdsPostQuantumIdentity($0) }
    }

    /// Whether the version-2 (or 3) vault at `path` has an `mlkem768x25519` stanza, by a scan of its header's stanza
    /// types (docs/FORMAT.md, "File layout"; nothing checked or authenticated: it only chooses the program, and
    /// that program checks the whole file). `false` for a vault that is missing, of version 1 or malformed.
    static func hasPostQuantumStanzas(_ path: String) -> Bool {
        let fd = Posix.retryingEINTR { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else { return false }
        defer { close(fd) }
        // magic (8), version u16, header_length u32, vault id (16), generation u64, data key id (16), stanza_count
        // u16, then stanzas (type u16, body_length u32, body), all little-endian; at most 65,536 header bytes.
        var header = [UInt8](repeating: 0, count: 65_536)
        var count = 0
        while count < header.count {
            let got = header.withUnsafeMutableBytes { buffer in
                Posix.retryingEINTR { read(fd, buffer.baseAddress! + count, buffer.count - count) }
            }
            guard got > 0 else { break }
            count += got
        }
        guard count >= 56, DocumentHeader.isVersion2(header) else { return false }  // version 2 or 3
        func little(_ offset: Int, _ width: Int) -> Int {
            (0..<width).reduce(0) { $0 | Int(header[offset + $1]) << (8 * $1) }
        }
        let stanzaCount = little(54, 2)
        let end = min(count, little(10, 4))
        var offset = 56
        for _ in 0..<min(stanzaCount, 256) {
            guard offset + 6 <= end else { return false }
            if little(offset, 2) == Int(RecipientStanza.Kind.mlkem768x25519.stanzaType) { return true }
            offset += 6 + little(offset + 2, 4)
        }
        return false
    }
}

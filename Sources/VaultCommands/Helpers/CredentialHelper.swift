import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore
import VaultCredentials
import VaultTerminal

/// `vault credential get|store|erase`: a git credential helper (gitcredentials(7), git-credential(1)).
///
/// Entries are kept by ``VaultCredentialStore`` under pseudo-realms (``GitSlot``), so that `vault logout URL`
/// and the helper agree (docs/AUTH.md, "git credential helper"). The helper never makes its entries the vault's
/// primary credential (the tutorials' `username`/`password`).
package struct CredentialHelper: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "credential",
        abstract: RoutedVerb.named("credential").abstract,
        discussion: """
            Reads git's key=value lines from stdin up to a blank line or end of input. `get` prints username=, password= (password_expiry_utc=, oauth_refresh_token=) of a stored, unexpired credential, or authtype= and credential= to a caller that sent capability[]=authtype, or nothing; `store` stores; `erase` removes (only what matches the username and password given). Only the http and https protocols are kept. A request with a NUL or carriage return in a line, or a host that is not exactly host[:port], is refused. The passphrase comes from --passphrase-fd, --passphrase-file, VAULT_PASSPHRASE, the agent or the terminal (/dev/tty, never with git config credential.interactive=false), never from stdin. Other operations are ignored, as git expects.
            """)

    @Option(help: ArgumentHelp(
        "Forget what `store` stores after this many seconds (git-credential-cache's option).", valueName: "seconds"))
    var timeout: Int?

    @Argument(help: "get, store or erase.")
    var operation: String

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if options.passphraseFD == 0 { throw ValidationError("stdin carries git's request: use another --passphrase-fd") }
        // Bounded so that "now + timeout" can never overflow (a year is more than any cache wants).
        if let timeout, !(1...(366 * 86_400)).contains(timeout) { throw ValidationError("--timeout must be 1 second to 366 days") }
    }

    package mutating func run() throws {
        options.caller = "git credential helper"
        try reportingErrors(json: options.json) {
            guard ["get", "store", "erase"].contains(operation) else { return }  // git: ignore unknown operations
            let request = try GitCredentialRequest.read(fd: 0)
            guard let origin = try request.origin() else {
                if operation == "store" {
                    let scheme = request.protocol?.lowercased()
                    let reason = scheme == nil ? "no protocol given"
                        : scheme != "http" && scheme != "https" ? "protocol '\(TerminalText.escaped(request.protocol!))' is not supported (only http and https)"
                        : "no host given"
                    writeToStderr("vault: credential: \(reason); not stored\n")
                }
                return
            }
            if !options.makeStore().exists && operation != "store" { return }  // nothing stored: no passphrase needed
            let vault = try openVaultForGit()
            defer { vault.close() }
            let credentials = VaultCredentialStore(store: vault)
            // As git's own helpers match: an erase without a path removes the host's credentials of every path.
            let anyPath = operation == "erase" && request.path == nil
            var records = try GitRecord.all(in: credentials, origin: origin, path: request.path, anyPath: anyPath)
            let now = Int64(Date().timeIntervalSince1970)
            // What has expired (--timeout, or git's password_expiry_utc) is forgotten, not only left unreturned:
            // the records a `get` reads, and on every write every expired record of the helper's.
            let expired = operation == "get"
                ? records.filter { $0.isExpired(now: now) }.map(\.space)
                : try GitRecord.expired(in: credentials, now: now)
            if !expired.isEmpty {
                try credentials.removeCredentials(of: expired)
                records.removeAll { $0.isExpired(now: now) }
            }
            switch operation {
            case "get": try get(request, from: records, now: now)
            case "store": try store(request, into: credentials, records: records, origin: origin, now: now)
            default: try erase(request, from: credentials, records: records)
            }
        }
    }

    /// The vault through the agent or a passphrase source; else the terminal prompt, unless git's configuration
    /// says `credential.interactive=false` (then a clear error at once, and no prompt).
    func openVaultForGit() throws -> any KeyValueVault {
        if !options.hasPassphraseSource {
            if let vault = try AgentAccess.vault(for: options, mayPrompt: false) { return vault }
            // git's own switches: GIT_TERMINAL_PROMPT=0 (git asks nothing on the terminal) and
            // credential.interactive=false.
            if Terminal.controlling() != nil, Posix.environment("GIT_TERMINAL_PROMPT") == "0" {
                throw CredentialHelperError.terminalPromptDisabled
            }
            if Terminal.controlling() != nil, !GitConfiguration.allowsPrompts() {
                throw CredentialHelperError.promptsDisabled
            }
        }
        return try openVault(options)
    }

    /// Prints the most recently stored unexpired credential that matches, or nothing.
    func get(_ request: GitCredentialRequest, from records: [GitRecord], now: Int64) throws {
        let capable = request.capabilities.contains("authtype")
        let candidates = records.filter { record in
            guard !record.isExpired(now: now) else { return false }
            if let username = request.username { return record.credential?.username == username }
            return record.credential != nil || (capable && record.extras.authCredential != nil)
        }
        guard let best = candidates.max(by: { ($0.modified, $0.space.key) < ($1.modified, $1.space.key) })
        else { return }
        var output = GitCredentialOutput()
        if capable { try output.add("capability[]", "authtype") }
        if capable, let type = best.extras.authType, let encoded = best.extras.authCredential {
            try output.add("authtype", type)
            try output.add("credential", encoded)
        } else if let credential = best.credential {
            try output.add("username", credential.username)
            try output.add("password", credential.password)
            if let token = best.extras.oauthRefreshToken { try output.add("oauth_refresh_token", token) }
        } else {
            return
        }
        if let expiry = best.extras.passwordExpiryUTC { try output.add("password_expiry_utc", expiry) }
        try output.bytes().withUnsafeBytes { try writeToStdout($0) }
    }

    /// Stores `username`/`password` (with their expiry and refresh token, and a pre-encoded credential unless
    /// `ephemeral`) in the record of that username, else in the shared slot when it is free, else in the
    /// username's own slot; a pre-encoded credential alone goes to the space's pre-encoded slot. One update.
    func store(
        _ request: GitCredentialRequest, into credentials: VaultCredentialStore, records: [GitRecord],
        origin: Origin, now: Int64
    ) throws {
        let preEncoded = request.ephemeral ? nil : request.preEncoded
        var expiry = request.passwordExpiryUTC
        if let timeout { expiry = min(expiry ?? .max, now + Int64(timeout)) }
        let extras = CredentialExtras(
            passwordExpiryUTC: expiry.map(String.init), oauthRefreshToken: request.oauthRefreshToken,
            authType: preEncoded?.type, authCredential: preEncoded?.credential)
        var changes = SecureKeyValueStore.Changes()
        let space: ProtectionSpace
        if let username = request.username, let password = request.password {
            let sharedIsTaken = records.contains { $0.slot.kind == .shared && $0.credential?.username != username }
            let slot = records.first { $0.credential?.username == username }?.slot
                ?? GitSlot(kind: sharedIsTaken ? .user(username) : .shared, path: request.path)
            space = ProtectionSpace(origin: origin, realm: slot.realm)
            // git approves after every authenticated request: what is stored already is not written again
            // (a write re-seals the whole vault and replaces the file).
            if let stored = try credentials.credential(for: space), stored.username == username,
                stored.password == password, try credentials.extras(for: space).isSame(as: extras)
            {
                return
            }
            // Replaces the primary credential only when git's space already is the primary one.
            let isPrimary = try credentials.primary() == space
            try credentials.stage(
                Credential(username: username, password: password), for: space, asPrimary: isPrimary, into: &changes)
        } else if preEncoded != nil {
            space = ProtectionSpace(origin: origin, realm: GitSlot(kind: .preEncoded, path: request.path).realm)
        } else {
            return  // nothing to store
        }
        try credentials.stageExtras(extras, for: space, into: &changes)
        try credentials.store.write(changes)
    }

    /// Removes every record that matches what the request gives (username, password, pre-encoded credential,
    /// path); a request with none of them removes every record of the host. One update.
    func erase(_ request: GitCredentialRequest, from credentials: VaultCredentialStore, records: [GitRecord]) throws {
        let matching = records.filter { record in
            if let username = request.username, record.credential?.username != username { return false }
            if let password = request.password, record.credential?.password != password { return false }
            if let encoded = request.preEncoded?.credential, record.extras.authCredential != encoded { return false }
            return true
        }
        guard !matching.isEmpty else { return }
        try credentials.removeCredentials(of: matching.map(\.space))
    }
}

/// Failures of the credential helpers that are not a library's.
package enum CredentialHelperError: Error, CustomStringConvertible, CLIReportable {
    /// A line of the request has a NUL or a carriage return (git's CVE-2020-5260 class).
    case forbiddenByte(key: String, byte: String)
    /// The host (or `url=`) names no host[:port] exactly.
    case malformedHost(key: String)
    /// The vault is locked in the agent, and `credential.interactive=false` forbids asking.
    case promptsDisabled
    /// The vault is locked in the agent, and `GIT_TERMINAL_PROMPT=0` forbids asking.
    case terminalPromptDisabled
    /// A stored value would break a line of the output.
    case unprintableValue(key: String)
    /// A `path`, `username`, `host` or part of `url` is not UTF-8 (refused: decoded lossily, two paths would share
    /// one slot).
    case notUTF8(key: String)
    /// The request is larger than ``GitCredentialRequest/maximumRequestByteCount``.
    case requestTooLarge
    /// A `url=` whose host is ended by `?` or `#` (`https://alice:443#@victim.example/`): git reads one host,
    /// other URL parsers another.
    case ambiguousURL

    package var description: String {
        switch self {
        case let .forbiddenByte(key, byte):
            return "credential: request refused: the line of '\(key)' contains a \(byte)"
        case let .malformedHost(key):
            return "credential: request refused: '\(key)' is not exactly a host name or address and an optional port"
        case .promptsDisabled:
            return "credential: the vault is locked and git's credential.interactive is false; not asking"
        case .terminalPromptDisabled:
            return "credential: the vault is locked and GIT_TERMINAL_PROMPT=0; not asking"
        case let .unprintableValue(key):
            return "credential: the stored '\(key)' contains a newline, carriage return or NUL; not returned"
        case let .notUTF8(key):
            return "credential: request refused: '\(key)' is not valid UTF-8"
        case .requestTooLarge:
            return "credential: request refused: it is larger than \(GitCredentialRequest.maximumRequestByteCount >> 20) MiB"
        case .ambiguousURL:
            return "credential: request refused: a '?' or '#' ends the host of 'url' (git reads the host before it, other parsers one after an '@'); give protocol= and host= instead"
        }
    }

    package var exitCode: Int32 {
        switch self {
        case .forbiddenByte, .malformedHost, .notUTF8, .requestTooLarge, .ambiguousURL: return Exit.usage
        case .promptsDisabled, .terminalPromptDisabled, .unprintableValue: return Exit.failure
        }
    }

    package var code: String {
        switch self {
        case .forbiddenByte, .malformedHost, .notUTF8, .requestTooLarge, .ambiguousURL: return "refused_request"
        case .promptsDisabled, .terminalPromptDisabled: return "no_passphrase"
        case .unprintableValue: return "unprintable_value"
        }
    }

    package var hint: String? {
        switch self {
        case .promptsDisabled, .terminalPromptDisabled: return "run 'vault unlock' once"
        default: return nil
        }
    }
}

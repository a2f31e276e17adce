import ArgumentParser
import Synchronization
import Foundation
import VaultAuth
import VaultCommands
import VaultCore
import VaultSodium
import VaultSync
import VaultSyncCore
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `vault sync s3://BUCKET/KEY`: this vault and its copy in an S3-compatible object store made one, entry by entry
/// (``VaultDocument/merge(_:_:now:)``), with conditional writes so that no writer's entries are lost.
package struct Sync: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: RoutedVerb.named("sync").abstract,
        discussion: """
            The first successful sync with a remote remembers it (with --endpoint and --region when given) for this vault: 'vault sync' alone then syncs with it ('vault remote show', 'vault remote set' to change it).

            The object is read (GET, keeping its ETag), merged into this vault entry by entry as 'vault merge' does, and written back only when it lacks something, with If-Match on the ETag read (If-None-Match: * to create it). When another machine wrote in between (412), sync reads, merges and tries again, at most 8 times (then exit 5). With nothing new on either side it sends one conditional GET (304) and no PUT. With no local vault, the remote one is fetched and must open with your passphrase.

            With no remote, for a vault inside a git work tree: the vault is committed if it changed (with the .gitattributes and .gitignore lines 'vault git setup' wrote; a new repository's first commit too), the upstream branch fetched (no upstream and one remote: its branch of that name, else a first push with -u), its vault merged into this one entry by entry (with the key this vault opens with: the agent or your passphrase), git's merge of the rest made with this clone's merged vault kept (or a fast-forward when the upstream holds all of it, which says which of your changes lost or won at the merge made there, as a merge does), and the branch pushed; a push rejected because another clone pushed first is tried again, at most 5 times (then exit 5). A copy whose passphrase was changed on another machine needs --other-passphrase-file or -fd (asked on a terminal), and the vault then has that passphrase. 'vault git setup' first, once in every clone. With --dry-run, the fetch is made and nothing else.

            OpenBao or HashiCorp Vault (KV version 2): bao://HOST[:PORT]/MOUNT/PATH keeps the vault file as one secret (base64, key 'vault'), written with options.cas set to the version read; the token from BAO_TOKEN or VAULT_TOKEN; https, or http to a loopback address with --allow-insecure-http. A vault over 1 MiB (raft's entry limit) is refused before anything is sent.

            Credentials as every AWS tool reads them: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, or the profile AWS_PROFILE (else default) of ~/.aws/credentials; the region from --region, AWS_REGION, AWS_DEFAULT_REGION or ~/.aws/config; the endpoint from --endpoint, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (path-style addressing), else AWS. Plain http only to a loopback address with --allow-insecure-http. The store learns the vault's size and when it changes, nothing else: the object is the sealed vault file.
            """)

    @OptionGroup var http: HTTPOptions

    @Argument(help: ArgumentHelp("The remote copy: s3://BUCKET/KEY or bao://HOST[:PORT]/MOUNT/PATH; none for the vault's remembered remote ('vault remote show') or a vault in a git work tree.", valueName: "remote"))
    var remote: String?

    @Option(help: ArgumentHelp("The S3 endpoint (e.g. http://127.0.0.1:9000 for a local store).", valueName: "url"))
    var endpoint: String?

    @Option(help: ArgumentHelp("The bucket's region (default: AWS_REGION, ~/.aws/config, else us-east-1).", valueName: "region"))
    var region: String?

    @Flag(help: "Say what the merge would change here, and write nothing (neither here nor there).")
    var dryRun = false

    @Flag(help: "Create the object again when it was deleted in the store since the last sync.")
    var recreate = false

    @Flag(help: "Merge even when the other copy deletes more than 10 entries and more than a tenth of the vault (asked on a terminal).")
    var acceptDeletions = false

    @OptionGroup var otherPassphrase: SecretSourceOptions<OtherPassphraseSecret>

    @Option(help: ArgumentHelp(
        "Take the store's credentials from this entry of the vault: for S3 its username (the access key id), password (the secret access key) and an optional session_token field; for OpenBao its password (the token).",
        valueName: "name"))
    var credentialsEntry: String?

    static let attempts = 8

    @OptionGroup var options: VaultOptions

    package func run() async throws {
        try await reportingErrors(json: options.json) {
            // No remote named: the one this vault remembers (its first sync's, or 'vault remote set'), else git.
            if remote == nil, let stored = RemoteRecord.read(vault: options.resolvedPath) {
                var command = self
                command.remote = stored.remote
                command.endpoint = endpoint ?? stored.endpoint
                command.region = region ?? stored.region
                // Remembered with it: plain http, still to a loopback address only (HTTPOptions.target checks).
                command.http.allowInsecureHTTP = http.allowInsecureHTTP || stored.allowInsecureHTTP
                return try await command.syncRemote(stored.remote, remembered: true)
            }
            guard let remote else {
                // Options of the remote stores mean nothing to git: a mistake, not something to ignore.
                let storeOptions = [("--endpoint", endpoint != nil), ("--region", region != nil), ("--recreate", recreate),
                                    ("--credentials-entry", credentialsEntry != nil)].filter(\.1).map(\.0)
                guard storeOptions.isEmpty else {
                    throw CLIError.message("\(storeOptions.joined(separator: ", ")) need a remote (s3://… or bao://…); a git work tree has its own", exitCode: Exit.usage)
                }
                let local = OpenedOnce(options)
                defer { local.close() }
                var git = GitSync(path: options.resolvedPath, open: { try local.entries() })
                git.rollbackProtection = options.storeOptions.rollbackProtection
                git.dryRun = dryRun
                git.acceptDeletions = acceptDeletions
                git.merging = merging()
                git.notify = { writeToStderr($0.said) }
                return try report(git.sync())
            }
            try await syncRemote(remote, remembered: false)
        }
    }

    /// A sync with `remote`; the first successful one (not a dry run) of a vault that remembers none is remembered.
    func syncRemote(_ remote: String, remembered: Bool) async throws {
        let local = OpenedOnce(options)
        defer { local.close() }
        let store = try makeRemote(remote, environment: ProcessInfo.processInfo.environment, local: local)
        let outcome = try await engine(local).sync(with: store)
        if !remembered, !dryRun, RemoteRecord.read(vault: options.resolvedPath) == nil {
            try? RemoteRecord(remote: remote, endpoint: endpoint, region: region, allowInsecureHTTP: http.allowInsecureHTTP)
                .write(vault: options.resolvedPath)
        }
        try report(outcome)
    }

    /// The store `remote` names: `s3://` (AWS's credentials, region and endpoint) or `bao://` (a token); with
    /// `--credentials-entry`, the key or token from that entry of the local vault.
    func makeRemote(_ remote: String, environment: [String: String], local: OpenedOnce) throws -> any VaultCopy {
        let client = HTTPClient(timeout: http.timeout, tls: try http.tlsOptions())
        var fromEntry: EntryRecord?
        if let credentialsEntry {
            guard FileManager.default.fileExists(atPath: options.resolvedPath) else {
                throw CLIError.message("--credentials-entry reads the local vault, and there is none yet at '\(TerminalText.escaped(options.resolvedPath))'", exitCode: Exit.notFound)
            }
            guard let record = try local.entries().record(of: credentialsEntry) else {
                throw VaultError.noSuchEntry(key: credentialsEntry, path: options.resolvedPath)
            }
            fromEntry = record
        }
        func field(_ name: String) throws -> SecureBytes? {
            guard let value = fromEntry?.field(name)?.value, value.count > 0 else { return nil }
            return value
        }
        if remote.hasPrefix("bao://") {
            let token: String?
            if fromEntry != nil {
                guard let password = try field("password")?.stringValue else {
                    throw CLIError.message("entry '\(TerminalText.escaped(credentialsEntry!))' has no password field (the token)", exitCode: Exit.failure)
                }
                token = password
            } else {
                token = [environment["BAO_TOKEN"], environment["VAULT_TOKEN"]].compactMap { $0 }.first { !$0.isEmpty }
            }
            guard let token else {
                throw CLIError.message("no OpenBao token: set BAO_TOKEN (or VAULT_TOKEN), or name an entry with --credentials-entry", exitCode: Exit.failure)
            }
            let host = remote.dropFirst(6).split(separator: "/").first.map(String.init) ?? ""
            let loopback = URL(string: "http://\(host)/").flatMap(Origin.init)?.isLoopback ?? false
            let store = try OpenBaoKV(remote, token: token, client: client, plainHTTP: http.allowInsecureHTTP && loopback)
            _ = try http.target(store.url.absoluteString)
            // OpenBao answers chunked: the bytes in so far, once the download has lasted half a second.
            let bar = DownloadBar()
            store.fetchProgress = { received, total in bar.received(received, of: total) }
            return store
        }
        var aws: AWSConfiguration
        if fromEntry != nil {
            // The key from the entry (username: the access key id, password: the secret, an optional field
            // session_token); the region and endpoint as always.
            guard let id = try field("username")?.stringValue, let secret = try field("password") else {
                throw CLIError.message(
                    "entry '\(TerminalText.escaped(credentialsEntry!))' needs a username (the access key id) and a password (the secret access key)",
                    exitCode: Exit.failure)
            }
            var others = environment
            others["AWS_ACCESS_KEY_ID"] = id
            others["AWS_SECRET_ACCESS_KEY"] = "-"
            aws = try AWSConfiguration.load(environment: others, home: Posix.homeDirectory)
            aws.secretAccessKey = secret
            aws.sessionToken = try field("session_token")?.stringValue
        } else {
            aws = try AWSConfiguration.load(environment: environment, home: Posix.homeDirectory)
        }
        let endpointURL = try endpoint.map { try http.target($0) } ?? aws.endpoint.map { try http.target($0.absoluteString) }
        let location = try S3Location(remote, region: region ?? aws.region ?? "us-east-1", endpoint: endpointURL)
        if endpointURL == nil { _ = try http.target(location.objectURL.absoluteString) }
        let store = S3ObjectStore(location: location, configuration: aws, client: client)
        // A large vault's download (a first sync of another machine's vault): a bar on a terminal, nothing piped.
        let bar = DownloadBar()
        store.fetchProgress = { received, total in bar.received(received, of: total) }
        return store
    }

    /// The library's engine with this command's options: the local vault opened once (`local`), another copy's
    /// passphrase and the consent to a mass deletion asked as `vault merge` asks them.
    func engine(_ local: OpenedOnce) -> SyncEngine {
        var engine = SyncEngine(path: options.resolvedPath, open: { try local.entries() })
        engine.rollbackProtection = options.storeOptions.rollbackProtection
        engine.kdfPolicy = options.storeOptions.kdfPolicy
        engine.dryRun = dryRun
        engine.recreate = recreate
        engine.attempts = Self.attempts
        engine.merging = merging()
        return engine
    }

    /// A merge of another copy, as `vault merge` makes it: its passphrase asked (or read from the options) when it
    /// has another key, a mass deletion asked about (or accepted with --accept-deletions); once per sync.
    func merging() -> (String, (SecureBytes?, Bool) throws -> MergeReport) throws -> MergeReport {
        let otherCopy = OtherCopyPassphrase(otherPassphrase, json: options.json)
        let deletions = DeletionConsent(accepted: acceptDeletions)
        return { label, merge in
            try otherCopy.merging(label: label) { passphrase in
                try deletions.merging(label: label) { try merge(passphrase, $0) }
            }
        }
    }

    func report(_ outcome: GitSync.Report) throws {
        let merge = outcome.merge
        if options.json {
            try writeJSON(merge.json.merging([
                "remote": "git", "repository": outcome.repository, "upstream": outcome.upstream, "dry_run": dryRun,
                "committed": outcome.committed, "fast_forwarded": outcome.fastForwarded, "merge_commit": outcome.mergedCommit,
                "pushed": outcome.pushed, "set_upstream": outcome.setUpstream, "committed_setup_files": outcome.committedSetupFiles,
                "attempts": outcome.attempts,
            ] as [String: Any]) { $1 })
            return
        }
        let upstream = TerminalText.escaped(outcome.upstream)
        var lines: [String] = []
        if !merge.isEmpty {
            lines.append(Merge.describe(merge, other: outcome.upstream, into: outcome.relativePath, dryRun: dryRun))
        }
        if outcome.committed { lines.append("committed '\(TerminalText.escaped(outcome.relativePath))'\n") }
        if !outcome.committedSetupFiles.isEmpty {
            lines.append("committed \(outcome.committedSetupFiles.joined(separator: " and ")) (what 'vault git setup' wrote)\n")
        }
        if outcome.setUpstream {
            // No upstream, one remote: the branch pushed there with -u (git pull and vault sync use it from then on).
            lines.append((outcome.pushed ? "pushed to" : "would push to") + " \(upstream) with -u (git push -u \(TerminalText.escaped(outcome.remote)) \(TerminalText.escaped(outcome.branch))): the branch's upstream from now on\n")
        }
        if outcome.fastForwarded { lines.append("fast-forwarded to \(upstream)\n") }
        if outcome.mergedCommit { lines.append("merged \(upstream)\n") }
        if outcome.pushed, !outcome.setUpstream {
            lines.append("pushed to \(upstream)" + (outcome.attempts > 1 ? " (\(outcome.attempts) tries)" : "") + "\n")
        }
        if lines.isEmpty {
            lines.append(dryRun ? "'\(TerminalText.escaped(outcome.relativePath))' would not change; nothing to push\n" : "'\(TerminalText.escaped(outcome.relativePath))' and \(upstream) are the same\n")
        }
        try writeToStdout(lines.joined())
    }

    func report(_ outcome: SyncReport) throws {
        let remote = self.remote ?? ""
        let merge = outcome.merge ?? MergeReport()
        if options.json {
            try writeJSON(merge.json.merging([
                "remote": remote, "dry_run": dryRun, "fetched": outcome.fetched, "pushed": outcome.pushed, "created": outcome.created,
                "attempts": outcome.attempts,
            ] as [String: Any]) { $1 })
            return
        }
        let vault = TerminalText.escaped(options.resolvedPath)
        if outcome.fetched {
            return try writeToStdout("fetched \(remote) into '\(vault)'\(dryRun ? " (dry run: not written)" : "")\n")
        }
        var lines: [String] = []
        if !merge.isEmpty {
            lines.append(Merge.describe(merge, other: remote, into: options.resolvedPath, dryRun: dryRun))
        }
        if outcome.pushed {
            lines.append(outcome.created ? "created \(remote)\n" : "sent the merged vault to \(remote)\n")
        } else if dryRun, merge.otherLacks {
            lines.append("would send the merged vault to \(remote)\n")
        }
        if lines.isEmpty { lines.append("'\(vault)' and \(remote) are the same\n") }
        try writeToStdout(lines.joined())
    }
}

/// The local vault, opened at most once per sync (through the agent when it holds it; else the passphrase is read
/// once, even from a descriptor, however many tries the store makes us take). Opening it checks it: rollback
/// record, key, MACs, format; nothing is sent from a file that was not opened.
final class OpenedOnce {
    let options: VaultOptions
    private var vault: (any KeyValueVault)?

    init(_ options: VaultOptions) { self.options = options }

    func entries() throws -> any KeyValueVault {
        if vault == nil { vault = try openVault(options) }
        return try vault!.requiringFields()
    }

    func close() { vault?.close() }
}

/// The progress of a download on a terminal's stderr (nothing when piped): a bar in KiB when its size is known (an
/// answer with a Content-Length, as S3's); else the bytes in so far, the rate and the time taken, once the download
/// has lasted half a second (``ByteProgress``). Erased when the last byte is in or the fetch ended (before anything
/// else is written).
final class DownloadBar: Sendable {
    /// What is drawn (when stderr is a terminal), and whether the download's first report was seen.
    private let state = Mutex<(bar: ProgressBar?, count: ByteProgress?, started: Bool)>((nil, nil, false))

    func received(_ received: Int, of total: Int?) {
        state.withLock { state in
            if !state.started {
                state.started = true
                if let total, total > 0 {
                    state.bar = ProgressBar.onTerminal("fetching", total: (total + 1023) / 1024, unit: "KiB")
                } else if total == nil {
                    state.count = ByteProgress.onTerminal("fetching")
                }
            }
            guard let total, received >= total else {
                state.bar?.advance(to: received / 1024)
                state.count?.advance(to: received)
                return
            }
            state.bar?.advance(to: (total + 1023) / 1024)
            state.bar?.finish()
            state.count?.finish()
            (state.bar, state.count) = (nil, nil)
        }
    }
}

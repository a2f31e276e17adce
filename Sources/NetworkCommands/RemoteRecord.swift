import ArgumentParser
import Foundation
import VaultAuth
import VaultCommands
import VaultCore
import VaultSync
import VaultSyncCore
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

extension RemoteRecord {
    /// Refuses what `vault sync` would refuse before sending anything: the location (exit 64), the endpoint URL.
    static func validate(_ remote: String, endpoint: String?, region: String?, http: HTTPOptions) throws {
        if remote.hasPrefix("bao://") {
            guard endpoint == nil, region == nil else {
                throw CLIError.message("--endpoint and --region are S3's; a bao:// remote names its host", exitCode: Exit.usage)
            }
            _ = try OpenBaoKV(remote, token: "", client: HTTPClient(timeout: http.timeout, tls: try http.tlsOptions()), plainHTTP: false)
            return
        }
        guard remote.hasPrefix("s3://") else {
            throw SyncError.badLocation("'\(TerminalText.escaped(remote))' is neither s3://BUCKET/KEY nor bao://HOST[:PORT]/MOUNT/PATH")
        }
        let endpointURL = try endpoint.map { try http.target($0) }
        _ = try S3Location(remote, region: region ?? "us-east-1", endpoint: endpointURL)
    }
}

/// `vault remote show` and `vault remote set REMOTE`: the remote `vault sync` uses when it names none.
package struct RemoteCommand: AsyncParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "remote",
        abstract: RoutedVerb.named("remote").abstract,
        discussion: """
            The first successful 'vault sync REMOTE' of a vault remembers REMOTE (with --endpoint, --region and --allow-insecure-http when given) when none is set yet; 'vault sync' alone then syncs with it. It is kept per vault (by its id) in the state directory ($XDG_STATE_HOME/vault, else ~/.local/state/vault), with no credential. A vault in a git work tree needs none: it syncs with its branch's upstream, which 'vault remote show' prints as "git: REMOTE (BRANCH)".
            """,
        subcommands: [Show.self, Set.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Print the remote 'vault sync' uses when it names none (a git vault: its branch's upstream; exit 2 when none is set).")

        @OptionGroup var options: VaultOptions

        func run() async throws {
            try await reportingErrors(json: options.json) {
                let path = options.resolvedPath
                guard FileManager.default.fileExists(atPath: path) else { throw VaultError.vaultNotFound(path: path) }
                guard let record = RemoteRecord.read(vault: path) else {
                    // A vault in a git work tree syncs with its branch's upstream: what 'vault sync' will use.
                    if let target = try GitSync.target(of: path) { return try RemoteCommand.show(target, path: path, json: options.json) }
                    throw CLIError.message("'\(TerminalText.escaped(path))' has no remote: 'vault sync REMOTE' or 'vault remote set REMOTE' sets one", exitCode: Exit.notFound)
                }
                if options.json {
                    var object: [String: Any] = ["remote": record.remote]
                    if let endpoint = record.endpoint { object["endpoint"] = endpoint }
                    if let region = record.region { object["region"] = region }
                    if record.allowInsecureHTTP { object["allow_insecure_http"] = true }
                    return try writeJSON(object)
                }
                var text = TerminalText.escaped(record.remote)
                if let endpoint = record.endpoint { text += " --endpoint \(TerminalText.escaped(endpoint))" }
                if let region = record.region { text += " --region \(TerminalText.escaped(region))" }
                if record.allowInsecureHTTP { text += " --allow-insecure-http" }
                try writeToStdout(text + "\n")
            }
        }
    }

    /// What `vault sync` with no remote uses for a vault in a git work tree: "git: REMOTE (BRANCH)".
    static func show(_ target: GitSync.Target, path: String, json: Bool) throws {
        switch target {
        case .upstream(let remote, let branch), .firstPush(let remote, let branch):
            let first = target == .firstPush(remote: remote, branch: branch)
            if json { return try writeJSON(["remote": "git", "git_remote": remote, "branch": branch, "upstream_set": !first]) }
            try writeToStdout("git: \(TerminalText.escaped(remote)) (\(TerminalText.escaped(branch)))"
                + (first ? "; no upstream yet: the first 'vault sync' sets it" : "") + "\n")
        case .none(let branch, let remotes):
            let why = branch.map { "its git branch '\(TerminalText.escaped($0))' has no upstream and the repository \(remotes == 0 ? "no remote" : "\(remotes) remotes")" }
                ?? "its git work tree has a detached HEAD"
            throw CLIError.message(
                "'\(TerminalText.escaped(path))' has no remote: \(why); 'git push -u REMOTE BRANCH' or 'vault remote set REMOTE' sets one",
                exitCode: Exit.notFound)
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set", abstract: "Set the remote 'vault sync' uses when it names none (checked as sync checks it).")

        @OptionGroup var http: HTTPOptions

        @Argument(help: ArgumentHelp("s3://BUCKET/KEY or bao://HOST[:PORT]/MOUNT/PATH.", valueName: "remote"))
        var remote: String

        @Option(help: ArgumentHelp("The S3 endpoint to remember with it.", valueName: "url"))
        var endpoint: String?

        @Option(help: ArgumentHelp("The bucket's region to remember with it.", valueName: "region"))
        var region: String?

        @OptionGroup var options: VaultOptions

        func run() async throws {
            try await reportingErrors(json: options.json) {
                try RemoteRecord.validate(remote, endpoint: endpoint, region: region, http: http)
                let path = options.resolvedPath
                guard FileManager.default.fileExists(atPath: path) else { throw VaultError.vaultNotFound(path: path) }
                try RemoteRecord(remote: remote, endpoint: endpoint, region: region, allowInsecureHTTP: http.allowInsecureHTTP).write(vault: path)
                if options.json { return try writeJSON(["remote": remote]) }
                try writeToStdout("'\(TerminalText.escaped(path))' syncs with \(TerminalText.escaped(remote))\n")
            }
        }
    }
}

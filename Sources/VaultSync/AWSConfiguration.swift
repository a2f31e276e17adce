import Foundation
import VaultCore
import VaultSyncCore

/// The credentials, region and endpoint every AWS tool reads: the environment (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`/`AWS_DEFAULT_REGION`,
/// `AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL`), else the profile (`AWS_PROFILE`, else `default`) of
/// `~/.aws/credentials` (`AWS_SHARED_CREDENTIALS_FILE`) and `~/.aws/config` (`AWS_CONFIG_FILE`; `[profile NAME]`,
/// `[default]`).
public struct AWSConfiguration: Sendable {
    public var accessKeyID: String
    public var secretAccessKey: SecureBytes
    public var sessionToken: String?
    public var region: String?
    public var endpoint: URL?

    public init(accessKeyID: String, secretAccessKey: SecureBytes, sessionToken: String? = nil, region: String? = nil, endpoint: URL? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.region = region
        self.endpoint = endpoint
    }

    /// Reads `environment` and the files under `home`.
    ///
    /// - Throws: ``SyncError/missingCredentials(profile:)``, ``SyncError/badConfiguration(path:line:)``.
    public static func load(environment: [String: String], home: String) throws -> AWSConfiguration {
        let profile = environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 } ?? "default"
        let credentialsPath = environment["AWS_SHARED_CREDENTIALS_FILE"] ?? home + "/.aws/credentials"
        let configPath = environment["AWS_CONFIG_FILE"] ?? home + "/.aws/config"
        let credentials = try section(profile, of: credentialsPath, prefixed: false)
        let config = try section(profile, of: configPath, prefixed: profile != "default")
        func value(_ variable: String, _ key: String, _ file: [String: String]) -> String? {
            if let set = environment[variable], !set.isEmpty { return set }
            return file[key]
        }
        let id = value("AWS_ACCESS_KEY_ID", "aws_access_key_id", credentials)
        let secret = value("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key", credentials)
        guard let id, let secret, !id.isEmpty, !secret.isEmpty else { throw SyncError.missingCredentials(profile: profile) }
        let fromEnvironment = environment["AWS_ACCESS_KEY_ID"].map { !$0.isEmpty } ?? false
        // A session token goes with the key it came with.
        let token = fromEnvironment ? environment["AWS_SESSION_TOKEN"] : credentials["aws_session_token"]
        let region = environment["AWS_REGION"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["AWS_DEFAULT_REGION"].flatMap { $0.isEmpty ? nil : $0 } ?? config["region"]
        let endpoint = (environment["AWS_ENDPOINT_URL_S3"] ?? environment["AWS_ENDPOINT_URL"] ?? config["endpoint_url"])
            .flatMap { $0.isEmpty ? nil : URL(string: $0) }
        return AWSConfiguration(
            accessKeyID: id, secretAccessKey: SecureBytes(string: secret), sessionToken: token?.isEmpty == false ? token : nil,
            region: region, endpoint: endpoint)
    }

    /// The `key = value` lines of `[name]` (or `[profile name]` when `prefixed`) in the INI file at `path`;
    /// empty when the file or the section is absent.
    static func section(_ name: String, of path: String, prefixed: Bool) throws -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else { return [:] }
        let wanted = prefixed ? "profile \(name)" : name
        var current: String?
        var values: [String: String] = [:]
        for (number, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)  // a CRLF file too
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw SyncError.badConfiguration(path: path, line: number + 1) }
                current = line.dropFirst().dropLast().trimmingCharacters(in: .whitespacesAndNewlines)
                continue
            }
            // Indented lines continue a nested setting (`s3 =` and its keys): not read here.
            if raw.first == " " || raw.first == "\t" { continue }
            guard let equals = line.firstIndex(of: "=") else { throw SyncError.badConfiguration(path: path, line: number + 1) }
            guard current == wanted else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
            values[key] = line[line.index(after: equals)...].trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return values
    }
}

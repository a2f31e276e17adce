import Synchronization
import Foundation
import VaultAuth
import VaultCore
import VaultSyncCore

/// A vault kept as one secret of an OpenBao (or HashiCorp Vault) KV version-2 engine: the file base64 in the
/// secret's `vault` key, written with `options.cas` set to the version read (`0`: only if absent). The store is a
/// compare-and-set blob store here: entries are never mapped onto secrets (that would show names to operators).
public final class OpenBaoKV: VaultCopy {
    /// `bao://HOST[:PORT]/MOUNT/PATH`.
    public let label: String
    let dataURL: URL
    let token: String
    let client: HTTPClient
    /// Raft's default entry limit is 1 MiB: a larger vault is refused before anything is sent.
    public static let largestVault = 1 << 20

    /// Parses `bao://HOST[:PORT]/MOUNT/PATH` (`https`, or `http` when `plainHTTP`).
    ///
    /// The authority ends at the first `/`, `?` or `#`, as git's credential helper reads a URL, and must be exactly
    /// `HOST[:PORT]` (``Origin/init(scheme:authority:)``): user info, a query or a fragment is refused, and those
    /// messages never repeat the URL (it may hold a password). `bao://A#@B/…` would otherwise be read as host `A` by
    /// one parser and `B` by another, and the token sent to the one the user did not mean.
    ///
    /// - Throws: ``SyncError/badLocation(_:)``.
    public init(_ text: String, token: String, client: HTTPClient, plainHTTP: Bool) throws(SyncError) {
        guard text.hasPrefix("bao://") else { throw .badLocation("'\(text)' does not start with bao://") }
        let rest = text.dropFirst(6)
        let authority = rest.prefix { !"/?#".contains($0) }
        if authority.contains("@") {
            throw .badLocation("a bao:// URL names no user ('USER[:PASSWORD]@HOST'): the token comes from BAO_TOKEN, VAULT_TOKEN or --credentials-entry")
        }
        for (mark, what) in [("?", "query"), ("#", "fragment")] where rest.contains(mark) {
            throw .badLocation("a bao:// URL has no \(what) ('\(mark)'): bao://HOST[:PORT]/MOUNT/PATH")
        }
        guard Origin(scheme: "https", authority: String(authority)) != nil else {
            throw .badLocation("'\(text)' is not bao://HOST[:PORT]/MOUNT/PATH: '\(authority)' is not a host name or address and an optional port")
        }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 3, !parts[0].isEmpty, !parts[1].isEmpty, parts.dropFirst(2).allSatisfy({ !$0.isEmpty }) else {
            throw .badLocation("'\(text)' is not bao://HOST[:PORT]/MOUNT/PATH")
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        guard parts.dropFirst().allSatisfy({ $0.allSatisfy { allowed.contains($0) } }) else {
            throw .badLocation("the mount and path of '\(text)' may hold only letters, digits, '-', '_' and '.'")
        }
        let path = parts.dropFirst(2).joined(separator: "/")
        guard let url = URL(string: "\(plainHTTP ? "http" : "https")://\(parts[0])/v1/\(parts[1])/data/\(path)") else {
            throw .badLocation("'\(text)' is not bao://HOST[:PORT]/MOUNT/PATH")
        }
        self.label = text
        self.dataURL = url
        self.token = token
        self.client = client
    }

    /// Told how many bytes of the secret's answer a read has read after each piece (OpenBao answers chunked: of no
    /// known total), and its end (``FetchProgressHook``): `vault sync`'s progress on a terminal.
    public var fetchProgress: FetchProgressHook? {
        get { progressHook.withLock { $0 } }
        set { progressHook.withLock { $0 = newValue } }
    }
    private let progressHook = Mutex<FetchProgressHook?>(nil)

    /// The URL requests go to (for the plain-http check).
    public var url: URL { dataURL }

    func request(_ method: String, body: [UInt8]? = nil) -> HTTPRequest {
        var request = HTTPRequest(method: method, url: dataURL, body: body)
        request.headers.add("X-Vault-Token", token)
        if body != nil { request.headers.add("Content-Type", "application/json") }
        return request
    }

    /// The version tag of a secret: its version number and when the secret was created (after `kv metadata delete`
    /// the numbers start again at 1: the creation time tells the new secret from the old one).
    static func tag(_ metadata: [String: Any]?) -> StorageVersion? {
        guard let metadata, let number = metadata["version"] as? Int, number > 0 else { return nil }
        return StorageVersion("\(number)@\(metadata["created_time"] as? String ?? "")")
    }

    /// The version number of a tag (``tag(_:)``), what `options.cas` takes.
    static func number(_ tag: StorageVersion?) -> Int {
        tag.flatMap { Int($0.value.split(separator: "@", maxSplits: 1).first ?? "") } ?? 0
    }

    public func fetch(ifNoneMatch version: StorageVersion?) async throws -> FetchedCopy {
        let progress = FetchProgress(fetchProgress)
        defer { progress.end() }
        let (body, response) = try await client.data(
            for: request("GET"), maximumBodySize: { _ in 4 * Self.largestVault }, progress: progress.pieces)
        let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        let data = object?["data"] as? [String: Any]
        // KV version 2 answers a missing secret 404, and a deleted (not destroyed) latest version 404 with its
        // metadata: the next write must name that version.
        let tag = Self.tag(data?["metadata"] as? [String: Any])
        switch response.statusCode {
        case 200:
            guard let tag else { throw SyncError.status(200, code: nil, message: "the answer is not a KV version-2 secret", url: label) }
            guard let secret = data?["data"] as? [String: Any] else { return .notFound(deleted: tag) }
            guard let encoded = secret["vault"] as? String, let bytes = Data(base64Encoded: encoded) else {
                throw SyncError.status(200, code: nil, message: "the secret has no 'vault' key holding base64", url: label)
            }
            if tag == version { return .notModified }
            return .object(bytes: [UInt8](bytes), version: tag)
        case 404: return .notFound(deleted: tag)
        default: throw failure(response.statusCode, body)
        }
    }

    public func store(_ bytes: [UInt8], ifMatch version: StorageVersion?) async throws -> StoredCopy {
        guard bytes.count <= Self.largestVault else { throw SyncError.objectTooLarge(url: label) }
        let document: [String: Any] = ["options": ["cas": Self.number(version)], "data": ["vault": Data(bytes).base64EncodedString()]]
        let json = try JSONSerialization.data(withJSONObject: document)
        let (body, response) = try await client.data(for: request("POST", body: [UInt8](json)), maximumBodySize: 64 << 10)
        switch response.statusCode {
        case 200, 204:
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
            return .stored(version: Self.tag(object?["data"] as? [String: Any]))
        case 400 where errors(body).contains { $0.contains("check-and-set parameter did not match") }:
            return .preconditionFailed
        default: throw failure(response.statusCode, body)
        }
    }

    func errors(_ body: Data) -> [String] {
        ((try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["errors"] as? [String]) ?? []
    }

    func failure(_ status: Int, _ body: Data) -> SyncError {
        let message = errors(body).first.map { $0.count <= 512 ? $0 : String($0.prefix(512)) + "…" }
        return .status(status, code: nil, message: message, url: label)
    }
}

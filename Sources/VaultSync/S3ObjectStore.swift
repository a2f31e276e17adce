import Synchronization
import Foundation
import VaultAuth
import VaultCore
import VaultSyncCore

/// Where a vault lives in an S3-compatible object store: `s3://BUCKET/KEY`, at an endpoint.
public struct S3Location: Sendable, Equatable, CustomStringConvertible {
    public let bucket: String
    public let key: String
    public let region: String
    /// The service's base URL: AWS's regional endpoint (virtual-hosted addressing), or a custom one (path-style).
    public let endpoint: URL?

    /// Parses `s3://BUCKET/KEY`: a bucket of 3 to 63 lowercase letters, digits, dots and hyphens, and a key of 1 to
    /// 1,024 bytes.
    ///
    /// - Throws: ``SyncError/badLocation(_:)``.
    public init(_ text: String, region: String, endpoint: URL?) throws(SyncError) {
        guard text.hasPrefix("s3://") else { throw .badLocation("'\(text)' does not start with s3://") }
        let rest = text.dropFirst(5)
        guard let slash = rest.firstIndex(of: "/") else { throw .badLocation("'\(text)' names no key (s3://BUCKET/KEY)") }
        let bucket = String(rest[..<slash]), key = String(rest[rest.index(after: slash)...])
        guard (3...63).contains(bucket.utf8.count),
              bucket.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D })
        else { throw .badLocation("'\(bucket)' is not a bucket name (3 to 63 of a-z, 0-9, '.', '-')") }
        guard (1...1024).contains(key.utf8.count), !key.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw .badLocation("the key must be 1 to 1024 bytes without control characters")
        }
        guard region.utf8.count <= 64, !region.isEmpty, region.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }) else {
            throw .badLocation("'\(region)' is not a region name")
        }
        self.bucket = bucket
        self.key = key
        self.region = region
        self.endpoint = endpoint
    }

    public var description: String { "s3://\(bucket)/\(key)" }

    /// The object's URL: `ENDPOINT/BUCKET/KEY` (path-style) for a custom endpoint, else
    /// `https://BUCKET.s3.REGION.amazonaws.com/KEY`. The key is encoded as S3 signs it: every byte but the unreserved
    /// ones (`A-Z a-z 0-9 - . _ ~`) and `/` as `%XX`.
    public var objectURL: URL {
        let path = "/" + Self.encode(key)
        if let endpoint {
            var base = endpoint.absoluteString
            while base.hasSuffix("/") { base.removeLast() }
            return URL(string: base + "/" + bucket + path)!
        }
        // A bucket name with a dot is not covered by AWS's wildcard certificate as a host: path-style then.
        if bucket.contains(".") { return URL(string: "https://s3.\(region).amazonaws.com/\(bucket)" + path)! }
        return URL(string: "https://\(bucket).s3.\(region).amazonaws.com" + path)!
    }

    static func encode(_ key: String) -> String {
        var out = ""
        for byte in key.utf8 {
            switch byte {
            case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E, 0x2F: out.unicodeScalars.append(UnicodeScalar(byte))
            default: out += String(format: "%%%02X", byte)
            }
        }
        return out
    }
}

/// One object in an S3-compatible store, read and written conditionally: GET keeping the ETag as the server
/// sent it (never computed here), PUT with `If-Match: ETAG` over the version read or `If-None-Match: *` to create.
/// Every request is signed (SigV4, `x-amz-content-sha256` always sent and signed).
public final class S3ObjectStore: VaultCopy {
    public let location: S3Location
    public var label: String { location.description }
    let signer: SigV4Signer
    let client: HTTPClient
    let now: @Sendable () -> Date
    /// The largest object read: a vault's largest file (docs/FORMAT.md's bound).
    public static let largestObject = VaultFileShape.largestFile
    /// The largest answer read that is not the object (an error's XML, whose code and message are read from at most
    /// 64 KiB).
    public static let largestAnswer = 64 << 10

    /// Told how many bytes of the object a GET has read, of how many (its Content-Length), after each piece, and
    /// its end (``FetchProgressHook``): a progress bar for a large vault (`vault sync`'s, on a terminal).
    public var fetchProgress: FetchProgressHook? {
        get { progressHook.withLock { $0 } }
        set { progressHook.withLock { $0 = newValue } }
    }
    private let progressHook = Mutex<FetchProgressHook?>(nil)

    /// The record of the last sync is kept per store: the bucket and key with the endpoint and region.
    public var recordKey: String {
        "\(location.description) endpoint=\(location.endpoint?.absoluteString ?? "aws") region=\(location.region)"
    }

    public init(location: S3Location, signer: SigV4Signer, client: HTTPClient, now: @escaping @Sendable () -> Date = Date.init) {
        self.location = location
        self.signer = signer
        self.client = client
        self.now = now
    }

    /// GET the object, with `If-None-Match: etag` when given. Its body is read only while it can be a vault: at most
    /// a vault's largest file (an answer whose Content-Length says more is refused before its body is read) that
    /// starts with a vault's magic (anything else is refused at its first bytes); any other answer at most 64 KiB.
    public func fetch(ifNoneMatch etag: StorageVersion? = nil) async throws -> FetchedCopy {
        var request = HTTPRequest(method: "GET", url: location.objectURL)
        if let etag { request.headers.add("If-None-Match", etag.value) }
        signer.sign(&request, date: now())
        let label = location.description
        let body: Data, response: HTTPResponse
        let progress = FetchProgress(fetchProgress)
        defer { progress.end() }
        do {
            (body, response) = try await client.data(
                for: request, maximumBodySize: { $0.statusCode == 200 ? Self.largestObject : Self.largestAnswer },
                prefix: (VaultFileShape.magicByteCount, { response, bytes in
                    guard response.statusCode == 200 else { return }
                    guard response.headers["ETag"] != nil else {
                        throw SyncError.status(200, code: nil, message: "the answer has no ETag", url: label)
                    }
                    guard VaultFileShape.startsAsVault(bytes) else {
                        throw SyncError.status(200, code: nil, message: "the object is not a vault file: it does not start as one", url: label)
                    }
                }),
                progress: progress.pieces)
        } catch AuthenticationError.responseTooLarge(_, let limit) where limit == Self.largestObject {
            throw SyncError.objectTooLarge(url: label)
        }
        switch response.statusCode {
        case 200:
            guard let etag = response.headers["ETag"] else {
                throw SyncError.status(200, code: nil, message: "the answer has no ETag", url: location.description)
            }
            return .object(bytes: [UInt8](body), version: StorageVersion(etag))
        case 304: return .notModified
        case 404 where Self.errorCode(body) != "NoSuchBucket": return .notFound(deleted: nil)
        default: throw Self.failure(response.statusCode, body, location)
        }
    }

    /// PUT `bytes` over the version `ifMatch` (an ETag as GET gave it), or only if no object exists (`nil`).
    public func store(_ bytes: [UInt8], ifMatch etag: StorageVersion?) async throws -> StoredCopy {
        var request = HTTPRequest(method: "PUT", url: location.objectURL, body: bytes)
        request.headers.add("Content-Type", "application/octet-stream")
        if let etag { request.headers.add("If-Match", etag.value) } else { request.headers.add("If-None-Match", "*") }
        signer.sign(&request, date: now())
        let (body, response) = try await client.data(for: request, maximumBodySize: 64 << 10)
        switch response.statusCode {
        case 200, 201, 204: return .stored(version: response.headers["ETag"].map(StorageVersion.init))
        case 412: return .preconditionFailed
        case 409: return .conflict
        case 404 where etag != nil && Self.errorCode(body) != "NoSuchBucket": return .notFound
        default: throw Self.failure(response.statusCode, body, location)
        }
    }

    static func failure(_ status: Int, _ body: Data, _ location: S3Location) -> SyncError {
        .status(status, code: errorCode(body), message: element("Message", in: body), url: location.description)
    }

    /// S3's error code from an XML error body (`<Error><Code>…</Code>`), if any.
    static func errorCode(_ body: Data) -> String? { element("Code", in: body) }

    static func element(_ name: String, in body: Data) -> String? {
        guard body.count <= 64 << 10, let text = String(data: body, encoding: .utf8),
              let start = text.range(of: "<\(name)>"), let end = text.range(of: "</\(name)>", range: start.upperBound..<text.endIndex)
        else { return nil }
        let value = String(text[start.upperBound..<end.lowerBound])
        return value.count <= 512 ? value : String(value.prefix(512)) + "…"
    }
}

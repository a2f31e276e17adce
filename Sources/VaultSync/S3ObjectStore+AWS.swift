import Foundation
import VaultAuth
import VaultCore
import VaultSyncCore

extension S3ObjectStore {
    /// `s3://BUCKET/KEY` where every AWS tool finds it: with `aws`'s key, its region (else `us-east-1`) and its
    /// endpoint (path-style; else AWS's own). A plain `http` endpoint only when `plainHTTPToLoopback` and its host is
    /// a loopback address (a local MinIO or moto): the signature would not be secret anywhere else.
    ///
    /// - Throws: ``SyncError/badLocation(_:)``.
    public convenience init(_ remote: String, configuration aws: AWSConfiguration, plainHTTPToLoopback: Bool = false, client: HTTPClient = HTTPClient()) throws {
        if let endpoint = aws.endpoint, endpoint.scheme != "https" {
            guard endpoint.scheme == "http", plainHTTPToLoopback, Origin(endpoint)?.isLoopback == true else {
                throw SyncError.badLocation("the endpoint \(endpoint.absoluteString) is not https (plain http only to a loopback address, when asked)")
            }
        }
        self.init(location: try S3Location(remote, region: aws.region ?? "us-east-1", endpoint: aws.endpoint), configuration: aws, client: client)
    }

    /// The object at `location`, its requests signed with `aws`'s key for the location's region.
    public convenience init(location: S3Location, configuration aws: AWSConfiguration, client: HTTPClient) {
        let signer = SigV4Signer(
            accessKeyID: aws.accessKeyID, secretAccessKey: aws.secretAccessKey, sessionToken: aws.sessionToken,
            region: location.region, service: "s3")
        self.init(location: location, signer: signer, client: client)
    }
}

extension AWSConfiguration {
    /// This process's environment and the files under its home directory (``load(environment:home:)``).
    public static func load() throws -> AWSConfiguration {
        try load(environment: ProcessInfo.processInfo.environment, home: Posix.homeDirectory)
    }
}

import Foundation
import Testing
import VaultCore
@testable import VaultSync

/// Where `vault sync` finds its credentials, region and endpoint (as every AWS tool does), and how it names the
/// object.
@Suite struct AWSConfigurationTests {
    func home(credentials: String? = nil, config: String? = nil) throws -> String {
        let directory = NSTemporaryDirectory() + "/aws-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/.aws", withIntermediateDirectories: true)
        if let credentials { try credentials.write(toFile: directory + "/.aws/credentials", atomically: true, encoding: .utf8) }
        if let config { try config.write(toFile: directory + "/.aws/config", atomically: true, encoding: .utf8) }
        return directory
    }

    @Test func theEnvironmentComesFirstThenTheProfileOfTheFiles() throws {
        let home = try home(credentials: """
            [default]
            aws_access_key_id = AKIDDEFAULT
            aws_secret_access_key = default-secret
            # a comment
            [work]
            aws_access_key_id=AKIDWORK
            aws_secret_access_key=work-secret
            aws_session_token = work-token
            """, config: """
            [default]
            region = eu-west-1
            [profile work]
            region = eu-central-1
            endpoint_url = http://127.0.0.1:9000
            s3 =
              addressing_style = path
            """)
        let plain = try AWSConfiguration.load(environment: [:], home: home)
        #expect(plain.accessKeyID == "AKIDDEFAULT" && plain.secretAccessKey.unprotectedBytes == Array("default-secret".utf8))
        #expect(plain.region == "eu-west-1" && plain.sessionToken == nil && plain.endpoint == nil)
        let work = try AWSConfiguration.load(environment: ["AWS_PROFILE": "work"], home: home)
        #expect(work.accessKeyID == "AKIDWORK" && work.sessionToken == "work-token" && work.region == "eu-central-1")
        #expect(work.endpoint?.absoluteString == "http://127.0.0.1:9000")
        let env = try AWSConfiguration.load(environment: [
            "AWS_PROFILE": "work", "AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env-secret",
            "AWS_DEFAULT_REGION": "us-west-2", "AWS_ENDPOINT_URL_S3": "https://s3.example", "AWS_ENDPOINT_URL": "https://other.example",
        ], home: home)
        // The session token belongs to the key it came with: the profile's is not paired with the environment's key.
        #expect(env.accessKeyID == "AKIDENV" && env.sessionToken == nil && env.region == "us-west-2")
        #expect(env.endpoint?.absoluteString == "https://s3.example")
        #expect(try AWSConfiguration.load(environment: ["AWS_REGION": "ap-south-1", "AWS_DEFAULT_REGION": "x"], home: home).region == "ap-south-1")
    }

    @Test func aFileWithWindowsLineEndingsReadsTheSame() throws {
        let home = try home(credentials: "[default]\r\naws_access_key_id = AKIDCRLF\r\naws_secret_access_key = crlf-secret\r\n",
                            config: "[default]\r\nregion = eu-north-1\r\n")
        let loaded = try AWSConfiguration.load(environment: [:], home: home)
        #expect(loaded.accessKeyID == "AKIDCRLF" && loaded.secretAccessKey.unprotectedBytes == Array("crlf-secret".utf8))
        #expect(loaded.region == "eu-north-1")
    }

    @Test func missingOrMalformedSettingsAreNamed() throws {
        let empty = try home()
        #expect(throws: SyncError.missingCredentials(profile: "default")) { try AWSConfiguration.load(environment: [:], home: empty) }
        #expect(throws: SyncError.missingCredentials(profile: "nope")) {
            try AWSConfiguration.load(environment: ["AWS_PROFILE": "nope"], home: try home(credentials: "[default]\naws_access_key_id = A\naws_secret_access_key = B\n"))
        }
        let broken = try home(credentials: "[default]\nthis line has no equals sign\n")
        #expect(throws: SyncError.badConfiguration(path: broken + "/.aws/credentials", line: 2)) {
            try AWSConfiguration.load(environment: [:], home: broken)
        }
    }

    @Test func locationsAndObjectURLs() throws {
        let custom = try S3Location("s3://vault/team/a b+é.vault", region: "us-east-1", endpoint: URL(string: "http://127.0.0.1:9000/"))
        #expect(custom.objectURL.absoluteString == "http://127.0.0.1:9000/vault/team/a%20b%2B%C3%A9.vault")
        let aws = try S3Location("s3://my-bucket/k.vault", region: "eu-west-1", endpoint: nil)
        #expect(aws.objectURL.absoluteString == "https://my-bucket.s3.eu-west-1.amazonaws.com/k.vault")
        // A dotted bucket is not covered by AWS's wildcard certificate as a host name: path-style.
        let dotted = try S3Location("s3://my.bucket/k.vault", region: "eu-west-1", endpoint: nil)
        #expect(dotted.objectURL.absoluteString == "https://s3.eu-west-1.amazonaws.com/my.bucket/k.vault")
        #expect(throws: SyncError.self) { try S3Location("https://x/y", region: "us-east-1", endpoint: nil) }
        #expect(throws: SyncError.self) { try S3Location("s3://bucket-only", region: "us-east-1", endpoint: nil) }
        #expect(throws: SyncError.self) { try S3Location("s3://Upper/k", region: "us-east-1", endpoint: nil) }
        #expect(throws: SyncError.self) { try S3Location("s3://bucket/k", region: "us east", endpoint: nil) }
        #expect(throws: SyncError.self) { try S3Location("s3://bucket/k\u{7}", region: "us-east-1", endpoint: nil) }
    }
}

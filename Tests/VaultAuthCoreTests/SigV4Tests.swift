import Foundation
import Testing
import VaultCore
import VaultSodium
import VaultTestSupport
@testable import VaultAuthCore
import VaultCredentials

/// AWS Signature Version 4 (``SigV4Signer``) against: RFC 4231's HMAC-SHA-256 vectors; the worked examples of the AWS
/// documentation (the IAM guide's signing key and `get-vanilla`, the S3 guide's GET Object, PUT Object, GET bucket
/// lifecycle and list objects); the aws-c-auth signing test suite, from `../shared/peer-tests`; and botocore's
/// signer run on the same requests (`SigV4Auth`, `S3SigV4Auth`).
@Suite("SigV4 signing")
struct SigV4Tests {
    /// 2015-08-30T12:36:00Z, the test suite's time.
    static let suiteDate = Date(timeIntervalSince1970: 1_440_938_160)
    /// 2013-05-24T00:00:00Z, the S3 documentation's.
    static let s3Date = Date(timeIntervalSince1970: 1_369_353_600)
    static let exampleSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"  // the IAM documentation's and the suite's
    static let s3ExampleSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  // the S3 documentation's (a '/')
    static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    static func generic(token: String? = nil, signsSessionToken: Bool = true, normalizePath: Bool = true) -> SigV4Signer {
        SigV4Signer(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: SecureBytes(string: exampleSecret), sessionToken: token,
            region: "us-east-1", service: "service", normalizePath: normalizePath, doubleEncodePath: true,
            signsSessionToken: signsSessionToken)
    }

    static let s3Example = SigV4Signer(
        accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: SecureBytes(string: s3ExampleSecret), region: "us-east-1")

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    // MARK: - HMAC-SHA-256 (VaultSodium)

    @Test func hmacSHA256MatchesRFC4231() {
        func hmac(_ key: [UInt8], _ message: [UInt8]) -> String {
            Self.hex(key.withUnsafeBytes { k in message.withUnsafeBytes { Sodium.hmacSHA256(key: k, message: $0) } })
        }
        let long = Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8)
        let cases: [(key: [UInt8], message: [UInt8], mac: String)] = [
            ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
             "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
            (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
             "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
            ([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
             "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
            (Array(1...25), [UInt8](repeating: 0xcd, count: 50),
             "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
            // Keys longer than the 64-byte block are hashed first.
            ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
             "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
            ([UInt8](repeating: 0xaa, count: 131), long,
             "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
            // Python's hmac.new(b"", b"", "sha256").
            ([], [], "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"),
        ]
        for (index, testCase) in cases.enumerated() {
            #expect(hmac(testCase.key, testCase.message) == testCase.mac, "case \(index)")
        }
        // The guarded-memory variant writes the same bytes.
        var out = [UInt8](repeating: 0, count: Sodium.hmacSHA256ByteCount)
        Array("Jefe".utf8).withUnsafeBytes { key in
            Array("what do ya want for nothing?".utf8).withUnsafeBytes { message in
                out.withUnsafeMutableBytes { Sodium.hmacSHA256(key: key, message: message, into: $0) }
            }
        }
        #expect(Self.hex(out) == cases[1].mac)
    }

    /// The IAM guide's "derive a signing key" example (20120215, us-east-1, iam).
    @Test func signingKeyOfTheIAMDocumentation() {
        let signer = SigV4Signer(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: SecureBytes(string: Self.exampleSecret), region: "us-east-1",
            service: "iam")
        #expect(Self.hex(signer.signingKey(dateStamp: "20120215").unprotectedBytes)
                == "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d")
    }

    @Test func amzDateIsUTCBasicFormat() {
        let cases: [(Double, String)] = [
            (0, "19700101T000000Z"), (951_782_400, "20000229T000000Z"), (1_369_353_600, "20130524T000000Z"),
            (1_440_938_160, "20150830T123600Z"), (1_440_938_160.999, "20150830T123600Z"),
            (4_102_444_799, "20991231T235959Z"), (-1, "19691231T235959Z"),
        ]
        for (seconds, text) in cases {
            #expect(SigV4Signer.amzDate(Date(timeIntervalSince1970: seconds)) == text)
        }
    }

    // MARK: - The pieces

    @Test func canonicalURIS3AndGeneric() {
        // S3: the key encoded exactly once, however the URL escaped it; no normalisation.
        #expect(SigV4Signer.canonicalURI("/my%20folder/%C3%BC(1)!.txt", normalize: false, doubleEncode: false)
                == "/my%20folder/%C3%BC%281%29%21.txt")
        #expect(SigV4Signer.canonicalURI("/a/./b//c/../d", normalize: false, doubleEncode: false) == "/a/./b//c/../d")
        #expect(SigV4Signer.canonicalURI("/test%24file.text", normalize: false, doubleEncode: false) == "/test%24file.text")
        #expect(SigV4Signer.canonicalURI("/a%2Fb+c", normalize: false, doubleEncode: false) == "/a%2Fb%2Bc")
        #expect(SigV4Signer.canonicalURI("", normalize: false, doubleEncode: false) == "/")
        #expect(SigV4Signer.canonicalURI("/100%", normalize: false, doubleEncode: false) == "/100%25")
        // Every other service: normalised, and the percent-encoded path encoded once more.
        #expect(SigV4Signer.canonicalURI("/a/./b//c/../d%20e/", normalize: true, doubleEncode: true) == "/a/b/d%2520e/")
        #expect(SigV4Signer.canonicalURI("/..", normalize: true, doubleEncode: true) == "/")
        #expect(SigV4Signer.canonicalURI("", normalize: true, doubleEncode: true) == "/")
    }

    @Test func canonicalQuery() {
        #expect(SigV4Signer.canonicalQuery(nil) == "")
        #expect(SigV4Signer.canonicalQuery("") == "")
        // Sorted by encoded name then value; a name without a value gets '='.
        #expect(SigV4Signer.canonicalQuery("b=2&a=1&a=0&acl") == "a=0&a=1&acl=&b=2")
        // Decoded, then encoded with only the unreserved characters kept; '+' is a space, as AWS reads a query.
        #expect(SigV4Signer.canonicalQuery("p=a+b&q=a%2bb&r=x/y:z*&%E1%88%B4=%7e")
                == "%E1%88%B4=~&p=a%20b&q=a%2Bb&r=x%2Fy%3Az%2A")
        // Sorting is by bytes: upper case before lower case.
        #expect(SigV4Signer.canonicalQuery("a=1&B=2&_=3") == "B=2&_=3&a=1")
    }

    @Test func canonicalHeadersTrimJoinAndSort() {
        let (headers, signed) = SigV4Signer.canonicalHeaders([
            ("Host", "example.com"), ("X-B", "  a   b\t c  "), ("x-a", "1"), ("X-A", "2"), ("folded", "x\n   y"),
        ])
        #expect(headers == "folded:x y\nhost:example.com\nx-a:1,2\nx-b:a b c\n")
        #expect(signed == "folded;host;x-a;x-b")
    }

    @Test func hostFieldOmitsOnlyTheDefaultPort() {
        #expect(SigV4Signer.hostField(of: URL(string: "https://Bucket.S3.amazonaws.com/k")!) == "bucket.s3.amazonaws.com")
        #expect(SigV4Signer.hostField(of: URL(string: "https://example.com:443/")!) == "example.com")
        #expect(SigV4Signer.hostField(of: URL(string: "http://example.com:443/")!) == "example.com:443")
        #expect(SigV4Signer.hostField(of: URL(string: "http://localhost:9000/b/k")!) == "localhost:9000")
        #expect(SigV4Signer.hostField(of: URL(string: "http://[::1]:8080/")!) == "[::1]:8080")
    }

    // MARK: - The AWS documentation's examples

    /// `get-vanilla`, the IAM guide's example: GET / on example.amazonaws.com, service "service".
    @Test func getVanillaOfTheIAMDocumentation() {
        let signer = Self.generic()
        var request = HTTPRequest(url: URL(string: "https://example.amazonaws.com/")!)
        let canonical = signer.plan(for: request, date: Self.suiteDate, payloadHash: nil, contentSHA256Field: false)
            .canonicalRequest
        #expect(canonical == "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n\(Self.emptySHA256)")
        let stringToSign = signer.stringToSign(canonicalRequest: canonical, date: Self.suiteDate)
        #expect(stringToSign == "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\nbb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63")
        #expect(signer.signature(stringToSign: stringToSign, date: Self.suiteDate)
                == "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
        signer.sign(&request, date: Self.suiteDate, payloadHash: nil, contentSHA256Field: false)
        #expect(request.headers.fields.map { "\($0.name):\($0.value)" } == [
            "X-Amz-Date:20150830T123600Z",
            "Authorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        ])
    }

    /// The S3 guide's GET Object example (examplebucket, test.txt, Range: bytes=0-9), step by step.
    @Test func getObjectOfTheS3Documentation() {
        var request = HTTPRequest(
            url: URL(string: "https://examplebucket.s3.amazonaws.com/test.txt")!, headers: .init([("Range", "bytes=0-9")]))
        let signer = Self.s3Example
        let canonical = signer.canonicalRequest(for: request, date: Self.s3Date)
        #expect(canonical == """
            GET
            /test.txt

            host:examplebucket.s3.amazonaws.com
            range:bytes=0-9
            x-amz-content-sha256:\(Self.emptySHA256)
            x-amz-date:20130524T000000Z

            host;range;x-amz-content-sha256;x-amz-date
            \(Self.emptySHA256)
            """)
        let stringToSign = signer.stringToSign(canonicalRequest: canonical, date: Self.s3Date)
        #expect(stringToSign == "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972")
        #expect(signer.signature(stringToSign: stringToSign, date: Self.s3Date)
                == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        signer.sign(&request, date: Self.s3Date)
        #expect(request.headers["x-amz-date"] == "20130524T000000Z")
        #expect(request.headers["x-amz-content-sha256"] == Self.emptySHA256)
        #expect(request.headers["Authorization"] == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    /// The S3 guide's PUT Object (`test$file.text`, a Date field, REDUCED_REDUNDANCY), GET bucket lifecycle and
    /// list objects (max-keys=2, prefix=J) examples.
    @Test func otherExamplesOfTheS3Documentation() {
        let signer = Self.s3Example
        var put = HTTPRequest(
            method: "PUT", url: URL(string: "https://examplebucket.s3.amazonaws.com/test$file.text")!,
            headers: .init([("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")]),
            body: Array("Welcome to Amazon S3.".utf8))
        let canonical = signer.canonicalRequest(for: put, date: Self.s3Date)
        #expect(canonical.split(separator: "\n", omittingEmptySubsequences: false).prefix(2) == ["PUT", "/test%24file.text"])
        #expect(signer.stringToSign(canonicalRequest: canonical, date: Self.s3Date).hasSuffix("\n9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d"))
        signer.sign(&put, date: Self.s3Date)
        #expect(put.headers["x-amz-content-sha256"] == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        #expect(put.headers["Authorization"] == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")

        for (query, signature) in [
            ("lifecycle", "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
            ("max-keys=2&prefix=J", "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
        ] {
            var request = HTTPRequest(url: URL(string: "https://examplebucket.s3.amazonaws.com/?\(query)")!)
            signer.sign(&request, date: Self.s3Date)
            #expect(request.headers["Authorization"] == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=\(signature)")
        }
    }

    @Test func resigningReplacesTheFieldsItAdds() {
        var request = HTTPRequest(
            url: URL(string: "https://examplebucket.s3.amazonaws.com/test.txt")!,
            headers: .init([
                ("Range", "bytes=0-9"), ("authorization", "stale"), ("X-AMZ-DATE", "20000101T000000Z"),
                ("User-Agent", "vault"), ("Connection", "close"),
            ]))
        Self.s3Example.sign(&request, date: Self.s3Date)
        Self.s3Example.sign(&request, date: Self.s3Date)
        #expect(request.headers.values("Authorization").count == 1)
        #expect(request.headers.values("x-amz-date") == ["20130524T000000Z"])
        // User-Agent and Connection are on the request but not signed, so the documentation's signature holds.
        #expect(request.headers["Authorization"]?.hasSuffix("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41") == true)
        #expect(request.headers["User-Agent"] == "vault")
    }

    @Test func unsignedPayloadAndSessionToken() {
        let signer = SigV4Signer(
            accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: SecureBytes(string: Self.s3ExampleSecret),
            sessionToken: "token/with+chars==", region: "eu-west-1")
        var request = HTTPRequest(method: "PUT", url: URL(string: "https://b.s3.eu-west-1.amazonaws.com/k")!, body: [1, 2, 3])
        signer.sign(&request, date: Self.s3Date, payloadHash: SigV4Signer.unsignedPayload)
        #expect(request.headers["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD")
        #expect(request.headers["X-Amz-Security-Token"] == "token/with+chars==")
        #expect(request.headers["Authorization"]?.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") == true)
        #expect(signer.canonicalRequest(for: request, date: Self.s3Date, payloadHash: SigV4Signer.unsignedPayload).hasSuffix("\nUNSIGNED-PAYLOAD"))
    }

    @Test func descriptionsShowNoSecret() {
        let signer = SigV4Signer(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: SecureBytes(string: Self.exampleSecret),
            sessionToken: "SESSIONTOKENVALUE", region: "us-east-1")
        var dumped = ""
        dump(signer, to: &dumped)
        for text in [String(describing: signer), String(reflecting: signer), "\(signer)", dumped] {
            #expect(!text.contains("EXAMPLEKEY") && !text.contains("SESSIONTOKENVALUE"))
            #expect(text.contains("AKIDEXAMPLE"))
        }
    }

    // MARK: - The aws-c-auth signing test suite

    /// `aws-signing-test-suite/v4` of awslabs/aws-c-auth (Apache-2.0) in `../shared/peer-tests` next to the
    /// repository, or in `$VAULT_PEER_TESTS`.
    static var signingTestSuite: URL {
        let environment = ProcessInfo.processInfo.environment
        if let root = environment["VAULT_PEER_TESTS"], !root.isEmpty {
            return URL(fileURLWithPath: root).appendingPathComponent("aws-signing-test-suite/v4")
        }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return repository.deletingLastPathComponent().appendingPathComponent("shared/peer-tests/aws-signing-test-suite/v4")
    }

    struct SuiteContext: Decodable {
        struct Credentials: Decodable {
            var access_key_id: String
            var secret_access_key: String
            var token: String?
        }
        var credentials: Credentials
        var normalize: Bool
        var region: String
        var service: String
        var sign_body: Bool
        var timestamp: String
        var omit_session_token: Bool?
    }

    /// A request.txt: `METHOD TARGET HTTP/1.1`, fields (a line that starts with white space continues the
    /// previous value), an empty line, the body.
    struct SuiteRequest {
        var method: String
        var target: String
        var fields: [(name: String, value: String)]
        var body: [UInt8]

        init(_ text: String) throws {
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let requestLine = lines.removeFirst()
            guard let firstSpace = requestLine.firstIndex(of: " "), let lastSpace = requestLine.lastIndex(of: " ")
            else { throw SuiteError(message: "bad request line \(requestLine)") }
            method = String(requestLine[..<firstSpace])
            target = String(requestLine[requestLine.index(after: firstSpace)..<lastSpace])
            fields = []
            while let line = lines.first, !line.isEmpty {
                lines.removeFirst()
                if line.first == " " || line.first == "\t" {
                    fields[fields.count - 1].value += "\n" + line
                } else if let colon = line.firstIndex(of: ":") {
                    fields.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
                } else {
                    throw SuiteError(message: "bad field line \(line)")
                }
            }
            body = Array(lines.dropFirst().joined(separator: "\n").utf8)
        }

        func serialized(fields: [(name: String, value: String)]) -> String {
            "\(method) \(target) HTTP/1.1\n" + fields.map { "\($0.name):\($0.value)\n" }.joined() + "\n"
                + String(decoding: body, as: UTF8.self)
        }
    }

    struct SuiteError: Error, CustomStringConvertible { var message: String; var description: String { message } }

    static var signingTestSuiteIsPresent: Bool {
        FileManager.default.fileExists(atPath: signingTestSuite.appendingPathComponent("get-vanilla/context.json").path)
    }

    /// Every case's canonical request, string to sign and signature (`header-*.txt`) from the request line's own
    /// path; then the whole signed request from ``SigV4Signer/sign(_:date:payloadHash:)`` on an ``HTTPRequest``.
    ///
    /// The suite is not in this repository (its files may not be committed here): the test is skipped, saying so,
    /// when it is absent; the AWS documentation's examples and botocore's signer above always run.
    @Test(.enabled(
        if: signingTestSuiteIsPresent,
        "the AWS SigV4 signing test suite is absent: copy tests/aws-signing-test-suite/v4 of awslabs/aws-c-auth (Apache-2.0) to ../shared/peer-tests/aws-signing-test-suite/v4 next to the repository, or set VAULT_PEER_TESTS"))
    func awsCAuthSigningTestSuite() throws {
        let directory = Self.signingTestSuite
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(names.count >= 38, "the v4 suite had 38 cases")
        var signedFromURL = 0
        for name in names {
            let folder = directory.appendingPathComponent(name)
            func file(_ file: String) throws -> String {
                try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            }
            let context = try JSONDecoder().decode(SuiteContext.self, from: Data(try file("context.json").utf8))
            let date = try #require(ISO8601DateFormatter().date(from: context.timestamp))
            let parsed = try SuiteRequest(try file("request.txt"))
            let signsToken = !(context.omit_session_token ?? false)
            let signer = SigV4Signer(
                accessKeyID: context.credentials.access_key_id,
                secretAccessKey: SecureBytes(string: context.credentials.secret_access_key),
                sessionToken: context.credentials.token, region: context.region, service: context.service,
                normalizePath: context.normalize, doubleEncodePath: true, signsSessionToken: signsToken)

            // The pieces, from the request line's path as it is.
            let host = try #require(parsed.fields.first { $0.name.lowercased() == "host" }?.value)
            let payloadHash = SigV4Signer.hex(SigV4Signer.sha256(parsed.body))
            var signed: [(name: String, value: String)] = parsed.fields
            signed.append(("x-amz-date", SigV4Signer.amzDate(date)))
            if let token = context.credentials.token, signsToken { signed.append(("x-amz-security-token", token)) }
            if context.sign_body { signed.append(("x-amz-content-sha256", payloadHash)) }
            let queryStart = parsed.target.firstIndex(of: "?")
            let canonical = SigV4Signer.canonicalRequest(
                method: parsed.method, path: String(parsed.target[..<(queryStart ?? parsed.target.endIndex)]),
                query: queryStart.map { String(parsed.target[parsed.target.index(after: $0)...]) }, headers: signed,
                payloadHash: payloadHash, normalizePath: context.normalize, doubleEncodePath: true)
            #expect(canonical.request == (try file("header-canonical-request.txt")), "\(name): canonical request")
            let stringToSign = signer.stringToSign(canonicalRequest: canonical.request, date: date)
            #expect(stringToSign == (try file("header-string-to-sign.txt")), "\(name): string to sign")
            #expect(signer.signature(stringToSign: stringToSign, date: date) == (try file("header-signature.txt")),
                    "\(name): signature")

            // The whole request. A request line's path with a space or non-ASCII (not a URI) is escaped by URL:
            // that is the one encoding the suite applies, so the signer must not add another.
            var request = HTTPRequest(
                method: parsed.method, url: try #require(URL(string: "https://\(host)\(parsed.target)"), "\(name)"),
                headers: .init(parsed.fields), body: parsed.body.isEmpty ? nil : parsed.body)
            let path = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedPath
            let escapedByURL = path != String(parsed.target[..<(queryStart ?? parsed.target.endIndex)])
            let urlSigner = escapedByURL
                ? SigV4Signer(
                    accessKeyID: signer.accessKeyID, secretAccessKey: signer.secretAccessKey,
                    sessionToken: signer.sessionToken, region: signer.region, service: signer.service,
                    normalizePath: signer.normalizePath, doubleEncodePath: false, signsSessionToken: signsToken)
                : signer
            if !escapedByURL { signedFromURL += 1 }
            urlSigner.sign(&request, date: date, payloadHash: nil, contentSHA256Field: context.sign_body)
            #expect(parsed.serialized(fields: request.headers.fields) == (try file("header-signed-request.txt")),
                    "\(name): signed request")
        }
        // Only get-space-normalized, get-space-unnormalized and get-utf8 have a path that is not a URI.
        #expect(signedFromURL == names.count - 3)
    }

    // MARK: - botocore as an oracle

    /// Signs each request (JSON on stdin) with botocore at its time; prints each Authorization field, canonical
    /// request and fields, as JSON. For a service other than S3 the payload hash goes in `X-Amz-Content-SHA256`
    /// first (botocore's SigV4Auth then signs it, as ours always does); `params` are a query botocore encodes itself.
    static let botocoreScript = #"""
        import sys, json, base64, datetime, hashlib
        import botocore.auth, botocore.credentials
        from botocore.awsrequest import AWSRequest
        from botocore.config import Config
        out = []
        for r in json.load(sys.stdin):
            when = datetime.datetime.strptime(r["date"], "%Y%m%dT%H%M%SZ")
            botocore.auth.get_current_datetime = lambda remove_tzinfo=True, when=when: when
            body = base64.b64decode(r["body"]) if r["body"] is not None else None
            request = AWSRequest(method=r["method"], url=r["url"], data=body,
                                 params=[tuple(p) for p in r["params"]] if r["params"] is not None else None)
            for name, value in r["fields"]:
                request.headers[name] = value  # appends: a repeated name keeps every value
            credentials = botocore.credentials.Credentials(r["accessKeyID"], r["secretAccessKey"], r["token"])
            if r["s3"]:
                signer = botocore.auth.S3SigV4Auth(credentials, r["service"], r["region"])
                if r["unsignedPayload"]:
                    request.context["client_config"] = Config(s3={"payload_signing_enabled": False})
            else:
                signer = botocore.auth.SigV4Auth(credentials, r["service"], r["region"])
                request.headers["X-Amz-Content-SHA256"] = hashlib.sha256(body or b"").hexdigest()
            canonical = []
            compute = signer.canonical_request
            signer.canonical_request = lambda req: canonical.append(compute(req)) or canonical[-1]
            signer.add_auth(request)
            out.append({"authorization": request.headers["Authorization"], "canonicalRequest": canonical[0],
                        "fields": [[k, v] for k, v in request.headers.items()]})
        json.dump(out, sys.stdout)
        """#

    struct OracleCase {
        var name: String
        var method = "GET"
        /// The URL our signer gets (as Foundation builds or escapes it).
        var url: URL
        /// The URL botocore gets (its S3 signer takes the path as it is: AWS-encoded), and its query as parameters.
        var botocoreURL: String
        var params: [(String, String)]? = nil
        var fields: [(name: String, value: String)] = []
        var body: [UInt8]? = nil
        var s3 = true
        var service = "s3"
        var region = "us-east-1"
        var token: String? = nil
        var unsignedPayload = false
        var date = SigV4Tests.s3Date
    }

    static func url(_ components: (inout URLComponents) -> Void) -> URL {
        var c = URLComponents()
        components(&c)
        return c.url!
    }

    static let oracleCases: [OracleCase] = [
        OracleCase(
            name: "S3 GET Object with Range (the S3 guide's example)",
            url: URL(string: "https://examplebucket.s3.amazonaws.com/test.txt")!,
            botocoreURL: "https://examplebucket.s3.amazonaws.com/test.txt", fields: [("Range", "bytes=0-9")]),
        OracleCase(
            name: "S3 PUT, a key with spaces, parentheses and Unicode, a body, fields to trim",
            method: "PUT",
            url: SigV4Tests.url {
                $0.scheme = "https"; $0.host = "my-bucket.s3.eu-central-1.amazonaws.com"
                $0.path = "/my folder/ünïcödé file (1)!.txt"
            },
            botocoreURL: "https://my-bucket.s3.eu-central-1.amazonaws.com/my%20folder/%C3%BCn%C3%AFc%C3%B6d%C3%A9%20file%20%281%29%21.txt",
            fields: [
                ("Content-Type", "text/plain; charset=utf-8"), ("x-amz-meta-note", "  two   spaces\tand a tab  "),
                ("Content-MD5", "4ZIqAe1k2lqvYb5UpQ4z2A=="),
            ],
            body: Array("Welcome to Amazon S3.".utf8), region: "eu-central-1"),
        OracleCase(
            name: "S3 ListObjectsV2, a query Foundation escaped its own way, botocore from the raw parameters",
            url: SigV4Tests.url {
                $0.scheme = "https"; $0.host = "my-bucket.s3.amazonaws.com"; $0.path = "/"
                $0.queryItems = [
                    URLQueryItem(name: "list-type", value: "2"), URLQueryItem(name: "prefix", value: "photos/2024 summer/é"),
                    URLQueryItem(name: "delimiter", value: "/"), URLQueryItem(name: "start-after", value: "a:b@c!$'()*,;~"),
                ]
            },
            botocoreURL: "https://my-bucket.s3.amazonaws.com/",
            params: [("list-type", "2"), ("prefix", "photos/2024 summer/é"), ("delimiter", "/"), ("start-after", "a:b@c!$'()*,;~")]),
        OracleCase(
            name: "S3 GET, an AWS-encoded query with '+', '=' and '/' in values, an empty value and a bare name",
            url: URL(string: "https://my-bucket.s3.amazonaws.com/?list-type=2&continuation-token=1%2Fab%2Bcd%3D%3D&prefix=&encoding-type=url&fetch-owner&Zeta=%E2%9C%93")!,
            botocoreURL: "https://my-bucket.s3.amazonaws.com/?list-type=2&continuation-token=1%2Fab%2Bcd%3D%3D&prefix=&encoding-type=url&fetch-owner&Zeta=%E2%9C%93"),
        OracleCase(
            name: "S3 HEAD path-style on a port, If-Match and If-None-Match, a session token",
            method: "HEAD",
            url: URL(string: "http://localhost:9000/my-bucket/some%20key.txt")!,
            botocoreURL: "http://localhost:9000/my-bucket/some%20key.txt",
            fields: [("If-Match", "\"0123456789abcdef\""), ("If-None-Match", "\"aaa\", \"bbb\"")],
            token: "IQoJb3JpZ2luX2VjEXAMPLE//////////wEaCXVzLWVhc3QtMSJH+/TOKEN=="),
        OracleCase(
            name: "S3 PUT with UNSIGNED-PAYLOAD over HTTPS",
            method: "PUT",
            url: URL(string: "https://my-bucket.s3.us-west-2.amazonaws.com/big/object.bin")!,
            botocoreURL: "https://my-bucket.s3.us-west-2.amazonaws.com/big/object.bin",
            fields: [("Content-Type", "application/octet-stream")],
            body: Array(repeating: 0x5A, count: 4096), region: "us-west-2", unsignedPayload: true),
        OracleCase(
            name: "S3 DELETE a version, a repeated field in mixed case, a stale Authorization and X-Amz-Date",
            method: "DELETE",
            url: URL(string: "https://b.s3.eu-west-1.amazonaws.com/k?versionId=3%2FL4kqtJlcpXroDTDmJ%2BrmSpXd3dIbrHY")!,
            botocoreURL: "https://b.s3.eu-west-1.amazonaws.com/k?versionId=3%2FL4kqtJlcpXroDTDmJ%2BrmSpXd3dIbrHY",
            fields: [
                ("X-Amz-Meta-A", "one"), ("x-amz-meta-a", "two"), ("Authorization", "stale"),
                ("X-Amz-Date", "20000101T000000Z"), ("X-Amz-Expected-Bucket-Owner", "111122223333"),
            ],
            region: "eu-west-1"),
        OracleCase(
            name: "S3 on an IPv6 literal with the default port written out",
            url: URL(string: "https://[::1]:443/bucket/key")!, botocoreURL: "https://[::1]:443/bucket/key"),
        OracleCase(
            name: "S3 on an upper-case host and port 8443",
            url: URL(string: "https://MinIO.Example.COM:8443/bucket/a/b.txt")!,
            botocoreURL: "https://MinIO.Example.COM:8443/bucket/a/b.txt"),
        OracleCase(
            name: "execute-api POST JSON: a path to normalise and encode twice, a repeated query parameter",
            method: "POST",
            url: URL(string: "https://abc123.execute-api.eu-central-1.amazonaws.com/prod/./a//b/../c%20d/%C3%A9?b=2&a=1&a=0")!,
            botocoreURL: "https://abc123.execute-api.eu-central-1.amazonaws.com/prod/./a//b/../c%20d/%C3%A9?b=2&a=1&a=0",
            fields: [("Content-Type", "application/json")], body: Array(#"{"hello": "world"}"#.utf8), s3: false,
            service: "execute-api", region: "eu-central-1"),
        OracleCase(
            name: "STS POST form with a session token",
            method: "POST",
            url: URL(string: "https://sts.amazonaws.com/")!, botocoreURL: "https://sts.amazonaws.com/",
            fields: [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")],
            body: Array("Action=GetCallerIdentity&Version=2011-06-15".utf8), s3: false, service: "sts",
            token: "FwoGZXIvYXdzEXAMPLETOKEN", date: SigV4Tests.suiteDate),
    ]

    /// The Authorization field (and the canonical request) byte for byte equal to botocore's on each case.
    @Test func equalToBotocore() throws {
        guard let python = findTool("python3"), (try? runTool(python, ["-c", "import botocore"]))?.0 == 0 else {
            Issue.record("botocore is not installed: pip install botocore (scripts/install-deps --test installs it)")
            return
        }
        let secret = Self.s3ExampleSecret
        func orNull(_ value: Any?) -> Any { value ?? NSNull() }
        let input: [[String: Any]] = Self.oracleCases.map { c in
            [
                "method": c.method, "url": c.botocoreURL,
                "params": orNull(c.params.map { $0.map { [$0.0, $0.1] } }),
                "fields": c.fields.map { [$0.name, $0.value] },
                "body": orNull(c.body.map { Data($0).base64EncodedString() }),
                "s3": c.s3, "service": c.service, "region": c.region, "token": orNull(c.token),
                "unsignedPayload": c.unsignedPayload, "date": SigV4Signer.amzDate(c.date),
                "accessKeyID": "AKIAIOSFODNN7EXAMPLE", "secretAccessKey": secret,
            ]
        }
        let (status, output) = try runTool(
            python, ["-c", Self.botocoreScript], stdin: try JSONSerialization.data(withJSONObject: input))
        try #require(status == 0, "botocore's signer failed: \(output)")
        let results = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]])
        try #require(results.count == Self.oracleCases.count)

        for (c, result) in zip(Self.oracleCases, results) {
            let signer = SigV4Signer(
                accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: SecureBytes(string: secret), sessionToken: c.token,
                region: c.region, service: c.service, normalizePath: !c.s3, doubleEncodePath: !c.s3)
            var request = HTTPRequest(method: c.method, url: c.url, headers: .init(c.fields), body: c.body)
            let payloadHash = c.unsignedPayload ? SigV4Signer.unsignedPayload : nil
            let canonical = signer.canonicalRequest(for: request, date: c.date, payloadHash: payloadHash)
            signer.sign(&request, date: c.date, payloadHash: payloadHash)
            #expect(canonical == result["canonicalRequest"] as? String, "\(c.name): canonical request")
            #expect(request.headers["Authorization"] == result["authorization"] as? String, "\(c.name): Authorization")
            let theirs = (result["fields"] as? [[String]] ?? []).filter { $0[0].lowercased().hasPrefix("x-amz-") }
            for field in theirs where !["x-amz-meta-a", "x-amz-expected-bucket-owner"].contains(field[0].lowercased()) {
                #expect(request.headers[field[0]] == field[1], "\(c.name): \(field[0])")
            }
        }
    }
}

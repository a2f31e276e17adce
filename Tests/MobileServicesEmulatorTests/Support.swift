import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MobileServicesEmulator
import Testing

let appId = "com.example.demo"
let connectionsPath = "/odata/applications/latest/com.example.demo/Connections"
let testUsers = ["alice": "s3cret:with-colon", "bob": "hunter2"]

func makeConfiguration(adminToken: String? = nil, maxBodySize: Int = EmulatorConfiguration.defaultMaxBodySize) throws
    -> EmulatorConfiguration
{
    try EmulatorConfiguration(appId: appId, users: testUsers, adminToken: adminToken, maxBodySize: maxBodySize)
}

/// Runs the emulator in process (HummingbirdTesting `.router`) with a state the test can inspect.
func withEmulator<Value>(
    adminToken: String? = nil,
    maxBodySize: Int = EmulatorConfiguration.defaultMaxBodySize,
    state: EmulatorState = EmulatorState(),
    _ test: @Sendable (any TestClientProtocol, EmulatorState) async throws -> Value
) async throws -> Value {
    let app = buildEmulatorApplication(configuration: try makeConfiguration(adminToken: adminToken, maxBodySize: maxBodySize), state: state)
    return try await app.test(.router) { client in try await test(client, state) }
}

func basic(_ user: String, _ password: String) -> String {
    "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
}

func headers(_ pairs: [(String, String)]) -> HTTPFields {
    var fields = HTTPFields()
    for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    return fields
}

let aliceAuth = basic("alice", "s3cret:with-colon")
let bobAuth = basic("bob", "hunter2")

func registrationBody(_ json: String = #"{"DeviceType":"x86_64","DeviceModel":"Debian 12","UserName":"alice@host"}"#) -> ByteBuffer {
    ByteBuffer(string: json)
}

/// The JSON body as a dictionary (fails the test when it is not a JSON object).
func jsonObject(_ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    let data = Data(response.body.readableBytesView)
    let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
    return try #require(object, "body is not a JSON object: \(String(buffer: response.body))", sourceLocation: sourceLocation)
}

/// Checks the OData error shape and returns its code.
func odataErrorCode(_ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
    let root = try jsonObject(response, sourceLocation: sourceLocation)
    let error = try #require(root["error"] as? [String: Any], sourceLocation: sourceLocation)
    let message = try #require(error["message"] as? [String: Any], sourceLocation: sourceLocation)
    #expect(message["lang"] as? String == "en", sourceLocation: sourceLocation)
    #expect((message["value"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
    return try #require(error["code"] as? String, sourceLocation: sourceLocation)
}

/// Registers as `auth` and returns the appcid from `d.ApplicationConnectionId`.
func register(_ client: any TestClientProtocol, auth: String = aliceAuth) async throws -> String {
    let response = try await client.execute(
        uri: connectionsPath, method: .post,
        headers: headers([("Authorization", auth), ("Content-Type", "application/json"), ("Accept", "application/json")]),
        body: registrationBody())
    #expect(response.status == .created)
    let d = try #require(try jsonObject(response)["d"] as? [String: Any])
    return try #require(d["ApplicationConnectionId"] as? String)
}

func serviceRootHeaders(auth: String?, appcid: String?) -> HTTPFields {
    var pairs: [(String, String)] = [("Accept", "application/json")]
    if let auth { pairs.append(("Authorization", auth)) }
    if let appcid { pairs.append(("X-SMP-APPCID", appcid)) }
    return headers(pairs)
}

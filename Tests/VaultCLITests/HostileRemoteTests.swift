import Foundation
import Testing
import VaultTestSupport

/// Issue 33 §5: a remote URL or a remote's answers that try to take a secret elsewhere or exhaust memory.
@Suite(.serialized, .processTimeLimit) struct HostileRemoteTests {
    /// The number of requests a ``PythonServer`` in scripted mode has answered (`GET /_count`).
    static func requestCount(_ server: PythonServer) throws -> String {
        try runTool("/usr/bin/curl", ["-s", server.origin + "/_count"]).1
    }

    /// `bao://A#@B/…`, `bao://A?@B/…` and `bao://USER:PW@A/…` are refused before anything is sent (a server at A
    /// counts no request), with a message that does not repeat the URL (it may hold a password).
    @Test func baoURLsWithUserInfoAQueryOrAFragmentAreRefusedBeforeAnythingIsSent() throws {
        let server = try PythonServer(.scripted(status: 200, body: Data("{}".utf8)))
        defer { server.stop() }
        let box = try Sandbox()
        try box.initVault()
        let environment = ["HOME": box.directory, "XDG_STATE_HOME": box.directory + "/state", "BAO_TOKEN": "token-must-stay-home"]
        let host = "127.0.0.1:\(server.port)"
        let cases = [
            ("bao://\(host)#@example.invalid/secret/x", "a bao:// URL has no fragment ('#'): bao://HOST[:PORT]/MOUNT/PATH"),
            ("bao://\(host)?@example.invalid/secret/x", "a bao:// URL has no query ('?'): bao://HOST[:PORT]/MOUNT/PATH"),
            ("bao://\(host)/secret/x#frag", "a bao:// URL has no fragment ('#'): bao://HOST[:PORT]/MOUNT/PATH"),
            ("bao://user:hunter2@\(host)/secret/x", "a bao:// URL names no user ('USER[:PASSWORD]@HOST'): the token comes from BAO_TOKEN, VAULT_TOKEN or --credentials-entry"),
            ("bao://example.invalid@\(host)/secret/x", "a bao:// URL names no user ('USER[:PASSWORD]@HOST'): the token comes from BAO_TOKEN, VAULT_TOKEN or --credentials-entry"),
            ("bao://\(host)%2f/secret/x", "'bao://\(host)%2f/secret/x' is not bao://HOST[:PORT]/MOUNT/PATH: '\(host)%2f' is not a host name or address and an optional port"),
        ]
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        for (remote, message) in cases {
            let result = try box.vault(["sync", remote, "--allow-insecure-http"], extraEnvironment: environment)
            #expect(result.status == 64, "\(remote): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr == "vault: not a remote location: \(message)\n", "\(remote)")
            #expect(!result.stderr.contains("hunter2"))
        }
        #expect(try Self.requestCount(server) == "0", "no request reached the server")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
    }
}

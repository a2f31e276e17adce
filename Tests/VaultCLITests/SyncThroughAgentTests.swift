import Foundation
import Testing
import VaultTestSupport

/// Issue 34 §2: through the agent a sync is one operation. With the vault unlocked in the agent (no passphrase
/// given), `vault sync s3://…` merges the object in one agent request and sends the file the agent wrote, as the
/// agent answered it: the object is then byte for byte the vault on disk, and the other machine receives what this
/// one added. (That the CLI does not read the file again is the engine's: SyncEngineTests.)
@Suite(.serialized, .processTimeLimit) struct SyncThroughAgentTests {
    @Test func aSyncThroughTheAgentMergesAndSendsTheFileTheAgentWrote() throws {
        let moto = try MotoS3(buckets: ["vault"])
        defer { moto.stop() }
        let a = try AgentBox(), b = try AgentBox()
        defer {
            a.stopAgents()
            b.stopAgents()
        }
        let aws = [
            "AWS_ACCESS_KEY_ID": moto.accessKeyID, "AWS_SECRET_ACCESS_KEY": moto.secretAccessKey,
            "AWS_ENDPOINT_URL": moto.endpoint, "AWS_REGION": "us-east-1",
        ]
        func sync(_ box: AgentBox, source: Bool) throws -> AgentRun {
            try box.vault(["sync", "s3://vault/shared.vault", "--allow-insecure-http", "--json"], source: source, environment: aws)
        }
        try #require(try a.around(["init"]).status == 0)
        #expect(try a.around(["put", "one"], stdin: Data("1".utf8)).status == 0)
        let created = try sync(a, source: true)
        try #require(created.status == 0, "\(created.stderr)")
        // b: the object adopted with the passphrase, an entry added and sent.
        let adopted = try sync(b, source: true)
        try #require(adopted.status == 0, "\(adopted.stderr)")
        #expect(try b.around(["put", "from-b"], stdin: Data("2".utf8)).status == 0)
        #expect(try sync(b, source: true).status == 0)

        // a: unlocked in its agent, an entry added through it; the sync asks for no passphrase.
        try a.unlock([])
        #expect(try a.vault(["put", "from-a"], stdin: Data("3".utf8)).status == 0)
        let merged = try sync(a, source: false)
        try #require(merged.status == 0, "\(merged.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: merged.stdout) as? [String: Any])
        #expect(report["added"] as? [String] == ["from-b"] && report["pushed"] as? Bool == true, "\(report)")
        #expect(try moto.object("vault", "shared.vault") == Data(contentsOf: URL(fileURLWithPath: a.vaultPath)))

        let received = try sync(b, source: true)
        let other = try #require(try JSONSerialization.jsonObject(with: received.stdout) as? [String: Any])
        #expect(other["added"] as? [String] == ["from-a"], "\(other) \(received.stderr)")
        #expect(try b.around(["get", "from-a"]).stdoutText.trimmingCharacters(in: .newlines) == "3")
    }
}

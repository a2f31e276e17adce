import Foundation
import Testing
@testable import VaultAgent
import VaultCore

/// The requests of format version 2 (docs/AGENT.md: records, apply, merge, merge files, describe file), answered by
/// the service called directly, and what each answers for a version-1 vault, a vault not held, a malformed request.
@Suite struct AgentServiceDocumentTests {
    let fixture = AgentFixture()

    /// A version-2 vault with `k` = `VALUE-CANARY`, unlocked; its path.
    func unlockedDocument() throws -> String {
        let path = try fixture.makeVault("two.vault", version: 2, entries: [("k", "VALUE-CANARY")])
        try #require(status(try fixture.unlock(path)) == .ok)
        return path
    }

    /// A copy of the vault at `path` (another replica: its own state directory) with `fromCopy` added; its bytes.
    func changedCopy(of path: String) throws -> [UInt8] {
        let copy = fixture.directory.file("copy.vault")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        var options = SecureKeyValueStore.Options.insecureForTesting
        options.rollbackProtection = RollbackProtection(stateDirectory: fixture.directory.file("copy-state"))
        let vault = try VaultOpener.open(path: copy, passphrase: SecureBytes(string: AgentFixture.passphrase), options: options)
        try vault.put("from the copy", forKey: "fromCopy")
        vault.close()
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: copy)))
    }

    /// A merge request of `other` (named copy.vault) into the vault at `path`.
    func merge(_ other: [UInt8], into path: String, dryRun: Bool, keepFile: Bool = false) throws -> AgentWire.Message {
        try fixture.ask(.merge, path: path) { writer in
            writer.field(.source, "copy.vault")
            other.withUnsafeBytes { writer.field(.value, $0) }
            writer.field(.flags, dryRun)
            if keepFile { writer.field(.code, "keep-file") }
        }
    }

    func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

    @Test func recordsAnswerTheCurrentVersionOrEveryVersionOrNothing() throws {
        let path = try unlockedDocument()
        var batch = SecureKeyValueStore.Changes()
        try batch.put(SecureBytes(string: "second"), forKey: "k")
        #expect(status(try fixture.ask(.apply, path: path) { AgentWire.encode(try! batch.documentChanges(), into: $0) }) == .ok)

        let current = try #require(try AgentWire.records(from: fixture.ask(.records, path: path) { $0.field(.name, "k") }))
        #expect(current.map(\.version) == [0])
        #expect(current[0].fields.map(\.name) == ["password"] && current[0].fields[0].value == SecureBytes(string: "second"))
        let all = try #require(try AgentWire.records(from: fixture.ask(.records, path: path) { $0.field(.name, "k"); $0.field(.flags, true) }))
        #expect(all.map(\.version) == [0, 1])
        #expect(all[1].fields[0].value == SecureBytes(string: "VALUE-CANARY"))
        let first = try #require(try AgentWire.records(from: fixture.ask(.records, path: path) { $0.field(.name, "k"); $0.field(.version, UInt64(1)) }))
        #expect(first.map(\.version) == [1])
        #expect(try AgentWire.records(from: fixture.ask(.records, path: path) { $0.field(.name, "missing") }) == nil)
        let noSuchVersion = try fixture.ask(.records, path: path) { $0.field(.name, "k"); $0.field(.version, UInt64(9)) }
        #expect(ErrorAnswer(noSuchVersion) == .vault(.noSuchVersion(key: "k", version: 9)))
    }

    /// `search` (operation 19, the Secret Service's attribute search): entries by name prefix whose non-secret fields
    /// include every pair given, non-secret fields only; a secret field is never matched nor answered.
    @Test func searchFiltersByPrefixAndNonSecretFieldsAndAnswersNoSecret() throws {
        let path = try unlockedDocument()
        func set(_ entry: String, _ field: String, _ value: String, secret: Bool = false) -> DocumentChange {
            .setField(entry: entry, field: field, value: SecureBytes(string: value), secret: secret)
        }
        let changes = [
            set("secret-service/a", "attribute:user", "alice"), set("secret-service/a", "password", "PW-A", secret: true),
            set("secret-service/b", "attribute:user", "bob"), set("secret-service/b", "attribute:host", "h"),
            set("secret-service/c", "attribute:user", "alice"), set("secret-service/c", "attribute:host", "h"),
            set("other", "attribute:user", "alice"), set("secret-service/d", "token", "alice", secret: true),
        ]
        #expect(status(try fixture.ask(.apply, path: path) { AgentWire.encode(changes, into: $0) }) == .ok)
        func search(_ prefix: String, _ pairs: [(String, String)]) throws -> [EntryRecord] {
            try AgentWire.searchResults(from: fixture.ask(.search, path: path) { writer in
                writer.field(.name, prefix)
                for (field, value) in pairs { writer.field(.field, field); writer.field(.value, value) }
            })
        }
        #expect(try search("secret-service/", []).map(\.name) == ["secret-service/a", "secret-service/b", "secret-service/c", "secret-service/d"])
        let alice = try search("secret-service/", [("attribute:user", "alice")])
        #expect(alice.map(\.name) == ["secret-service/a", "secret-service/c"])
        #expect(alice[0].fields.map(\.name) == ["attribute:user"], "the secret field is not answered")
        #expect(alice[1].fields.map { "\($0.name)=\($0.value.stringValue!)" } == ["attribute:user=alice", "attribute:host=h"])
        #expect(try search("secret-service/", [("attribute:user", "alice"), ("attribute:host", "h")]).map(\.name) == ["secret-service/c"])
        #expect(try search("secret-service/", [("token", "alice")]).isEmpty, "a secret field is never compared")
        #expect(try search("secret-service/", [("password", "PW-A")]).isEmpty)
        #expect(try search("nothing/", []).isEmpty)
        let unpaired = try fixture.ask(.search, path: path) { $0.field(.name, ""); $0.field(.field, "attribute:user") }
        #expect(ErrorAnswer(unpaired) == .badRequest("a search field without its value"), "\(ErrorAnswer(unpaired))")
        #expect(status(try fixture.ask(.search, path: fixture.directory.file("absent.vault")) { $0.field(.name, "") }) == .locked)
    }

    @Test func applyWritesADocumentBatchOrNothing() throws {
        let path = try unlockedDocument()
        let changes: [DocumentChange] = [.setField(entry: "k", field: "user", value: SecureBytes(string: "alice")), .rename(from: "k", to: "renamed")]
        #expect(status(try fixture.ask(.apply, path: path) { AgentWire.encode(changes, into: $0) }) == .ok)
        let record = try #require(try AgentWire.records(from: fixture.ask(.records, path: path) { $0.field(.name, "renamed") }))
        #expect(record[0].fields.map(\.name).sorted() == ["password", "user"])

        let failing: [DocumentChange] = [.setField(entry: "n", field: "password", value: SecureBytes(string: "lost")), .require(entry: "absent", exists: true)]
        let refused = try fixture.ask(.apply, path: path) { AgentWire.encode(failing, into: $0) }
        #expect(ErrorAnswer(refused).errorCase == "noSuchEntry", "\(ErrorAnswer(refused))")
        #expect(try fixture.get(path, "n") == nil)
        let unknown = try fixture.ask(.apply, path: path) { $0.field(.change, byte: 200) }
        #expect(ErrorAnswer(unknown) == .badRequest("an unknown document change"))
    }

    @Test func aVersionOneVaultAnswersEveryDocumentRequestWithNeedsVersion2() throws {
        let path = try fixture.makeVault("one.vault", entries: [("k", "v")])
        try #require(status(try fixture.unlock(path)) == .ok)
        let needs = ErrorAnswer.vault(.needsVersion2(path: path))
        #expect(ErrorAnswer(try fixture.ask(.records, path: path) { $0.field(.name, "k") }) == needs)
        // A change of fields or versions (a version-1 vault takes only what its format holds: AgentServiceTests).
        let field: [DocumentChange] = [.setField(entry: "k", field: "user", value: SecureBytes(string: "alice"), secret: false)]
        #expect(ErrorAnswer(try fixture.ask(.apply, path: path) { AgentWire.encode(field, into: $0) }) == needs)
        #expect(ErrorAnswer(try fixture.ask(.apply, path: path) { AgentWire.encode([.restore(entry: "k", version: 1)], into: $0) }) == needs)
        #expect(try fixture.get(path, "k") == "v")
        let merge = try fixture.ask(.merge, path: path) { writer in
            writer.field(.source, "other")
            try! bytes(path).withUnsafeBytes { writer.field(.value, $0) }
        }
        #expect(ErrorAnswer(merge) == needs)
        let describe = try fixture.ask(.describeFile) { writer in
            try! bytes(path).withUnsafeBytes { writer.field(.value, $0) }
            writer.field(.source, "one.vault")
        }
        #expect(ErrorAnswer(describe) == .vault(.needsVersion2(path: "one.vault")))
    }

    @Test func mergeTakesWhatTheOtherCopyAddedOrOnlySaysSoOnADryRun() throws {
        let path = try unlockedDocument()
        let other = try changedCopy(of: path)
        func merge(dryRun: Bool) throws -> AgentWire.Message { try self.merge(other, into: path, dryRun: dryRun) }
        let dry = try AgentWire.mergeReport(from: merge(dryRun: true))
        #expect(dry.added == ["fromCopy"] && !dry.written)
        #expect(try fixture.get(path, "fromCopy") == nil)
        let report = try AgentWire.mergeReport(from: merge(dryRun: false))
        #expect(report.added == ["fromCopy"] && report.written && report.updated.isEmpty && report.conflicts.isEmpty)
        #expect(try fixture.get(path, "fromCopy") == "from the copy")
        let noFile = try fixture.ask(.merge, path: path) { $0.field(.source, "copy.vault") }
        #expect(ErrorAnswer(noFile) == .badRequest("a request without a required field"))
    }

    /// keep-file (a sync through the agent, issue 34 §2): the answer carries the file the merge wrote, byte for byte
    /// what is on disk, so that the CLI sends it without reading it again; no file when the merge wrote nothing.
    @Test func aMergeAskedToKeepTheFileAnswersTheFileItWrote() throws {
        let path = try unlockedDocument()
        let other = try changedCopy(of: path)
        func merge(dryRun: Bool) throws -> AgentWire.Message { try self.merge(other, into: path, dryRun: dryRun, keepFile: true) }
        let dry = try merge(dryRun: true)
        #expect(status(dry) == .ok && dry.first(.value) == nil)
        let wrote = try merge(dryRun: false)
        #expect(try AgentWire.mergeReport(from: wrote).written)
        let file = try #require(wrote.first(.value))
        #expect(wrote.payload.withUnsafeBytes { Array($0[file]) } == (try bytes(path)))
        // Merged again: nothing new, nothing written, no file.
        let again = try merge(dryRun: false)
        #expect(try !AgentWire.mergeReport(from: again).written && again.first(.value) == nil)
    }

    @Test func mergeFilesMergesTwoFilesOfAHeldVaultWithItsKeyAndTouchesNoFile() throws {
        let path = try unlockedDocument()
        let theirs = try changedCopy(of: path)
        let ours = try bytes(path)
        func mergeFiles(_ files: [[UInt8]]) throws -> AgentWire.Message {
            try fixture.ask(.mergeFiles) { writer in
                for file in files { file.withUnsafeBytes { writer.field(.value, $0) } }
                writer.field(.source, "ours")
                writer.field(.source, "theirs")
            }
        }
        let answer = try mergeFiles([ours, theirs])
        #expect(try AgentWire.mergeReport(from: answer).added == ["fromCopy"])
        let merged = fixture.directory.file("merged.vault")
        let mergedBytes = answer.payload.withUnsafeBytes { Array($0[answer.first(.value)!]) }
        #expect(FileManager.default.createFile(atPath: merged, contents: Data(mergedBytes), attributes: [.posixPermissions: 0o600]))
        let opened = try VaultOpener.open(path: merged, passphrase: SecureBytes(string: AgentFixture.passphrase), options: .insecureForTesting)
        #expect(try opened.getString("fromCopy") == "from the copy" && opened.getString("k") == "VALUE-CANARY")
        opened.close()
        #expect(try bytes(path) == ours, "the vault's own file is neither read nor written")

        #expect(ErrorAnswer(try mergeFiles([ours])) == .badRequest("a merge of two files needs two files"))
        #expect(fixture.ring.lockAll() == 1)
        #expect(status(try mergeFiles([ours, theirs])) == .locked)
    }

    @Test func describeFileNamesWhatAFileHoldsNeverAValue() throws {
        let path = try unlockedDocument()
        fixture.clock.advance(by: 30)
        let answer = try fixture.ask(.describeFile) { writer in
            try! bytes(path).withUnsafeBytes { writer.field(.value, $0) }
            writer.field(.source, "two.vault")
        }
        let lines = answer.strings(.message)
        #expect(lines.count == 5 && lines[0].hasPrefix("vault ") && lines[1] == "k", "\(lines)")
        #expect(lines[3].hasPrefix("  fields password") && lines[4] == "deleted entries 0", "\(lines)")
        #expect(!lines.contains { $0.contains("CANARY") })
        #expect(try fixture.ask(.status).numbers(.idleLeft) == [60], "a file of the vault described is a use of it")
        #expect(ErrorAnswer(try fixture.ask(.describeFile)) == .badRequest("a request without a required field"))
        #expect(fixture.ring.lockAll() == 1)
        let locked = try fixture.ask(.describeFile) { writer in try! bytes(path).withUnsafeBytes { writer.field(.value, $0) } }
        #expect(status(locked) == .locked)
    }
}

import Foundation
import Testing
@testable import VaultAgent
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// Every request of docs/AGENT.md's table (format version 1 and both), answered by the service called directly:
/// what an ok answer carries, the error answers, what counts as activity. Time moves by hand.
@Suite struct AgentServiceTests {
    let fixture = AgentFixture()

    /// A version-1 vault with `k` = `v` and `other` = `x`, unlocked for 60 s idle, 3600 s at most; its path.
    func unlocked(_ name: String = "test.vault", version: Int = 1) throws -> String {
        let path = try fixture.makeVault(name, version: version, entries: [("k", "v"), ("other", "x")])
        try #require(status(try fixture.unlock(path)) == .ok)
        return path
    }

    func idleLeft() throws -> [UInt64] { try fixture.ask(.status).numbers(.idleLeft) }

    // MARK: status, unlock, lock, lock all, probe

    @Test func statusNamesThisProcessItsSocketAndEveryVaultWithItsTimeLeft() throws {
        let empty = try fixture.ask(.status)
        #expect(status(empty) == .ok)
        #expect(empty.number(.pid) == UInt64(getpid()))
        #expect(empty.string(.socket) == fixture.directory.file("agent.sock"))
        #expect(empty.strings(.path).isEmpty)

        let b = try unlocked("b.vault"), a = try unlocked("a.vault")
        fixture.clock.advance(by: 10.5)
        let answer = try fixture.ask(.status)
        #expect(answer.strings(.path) == [a, b])
        #expect(answer.numbers(.idleLeft) == [49, 49])
        #expect(answer.numbers(.maxLeft) == [3589, 3589])
    }

    @Test func unlockOpensEitherFormatAndHoldsItWithItsTimeouts() throws {
        let one = try fixture.makeVault("one.vault", entries: [("k", "1")])
        let two = try fixture.makeVault("two.vault", version: 2, entries: [("k", "2")])
        #expect(status(try fixture.unlock(one, idle: 5, max: 7)) == .ok)
        #expect(status(try fixture.unlock(two, idle: 366 * 86_400, max: 1)) == .ok)
        #expect(try fixture.get(one, "k") == "1")
        #expect(try fixture.get(two, "k") == "2")
        #expect(fixture.ring.status() == [
            KeyRing.Entry(path: one, idleSecondsLeft: 5, maxSecondsLeft: 7), KeyRing.Entry(path: two, idleSecondsLeft: 31_622_400, maxSecondsLeft: 1),
        ])
        #expect(fixture.log == ["unlocked \(one) (idle 5 s, max 7 s)", "unlocked \(two) (idle 31622400 s, max 1 s)"])
    }

    @Test func unlockRefusesWhatIsWrongAndHoldsNothingThen() throws {
        let path = try fixture.makeVault(entries: [("k", "v")])
        #expect(ErrorAnswer(try fixture.unlock(path, passphrase: "wrong")) == .vault(.wrongPassphrase(path: path)))
        let missing = fixture.directory.file("missing.vault")
        #expect(ErrorAnswer(try fixture.unlock(missing)) == .vault(.vaultNotFound(path: missing)))
        for (idle, max) in [(0, 60), (60, 0), (366 * 86_400 + 1, 60), (60, UInt64.max)] as [(UInt64, UInt64)] {
            #expect(ErrorAnswer(try fixture.unlock(path, idle: idle, max: max)) == .badRequest("idle and max must be 1 second to 366 days"))
        }
        let noPassphrase = try fixture.ask(.unlock, path: path) { $0.field(.idleSeconds, UInt64(60)); $0.field(.maxSeconds, UInt64(60)) }
        #expect(ErrorAnswer(noPassphrase) == .badRequest("a request without a required field"))
        let noIdle = try fixture.ask(.unlock, path: path) { $0.field(.passphrase, AgentFixture.passphrase); $0.field(.maxSeconds, UInt64(60)) }
        #expect(ErrorAnswer(noIdle) == .badRequest("a request without a required field"))
        let lockWait = try fixture.ask(.unlock, path: path) { writer in
            writer.field(.passphrase, AgentFixture.passphrase)
            writer.field(.idleSeconds, UInt64(60))
            writer.field(.maxSeconds, UInt64(60))
            writer.field(.lockTimeoutMilliseconds, UInt64(3_600_001))
        }
        #expect(ErrorAnswer(lockWait) == .badRequest("a lock timeout of more than an hour"))
        let shortKey = try fixture.ask(.unlock, path: path) { writer in
            writer.field(.dataKey, SecureBytes([UInt8](repeating: 0, count: 31)))
            writer.field(.idleSeconds, UInt64(60))
            writer.field(.maxSeconds, UInt64(60))
        }
        #expect(ErrorAnswer(shortKey) == .badRequest("a data key of 31 bytes"))
        func unlockKeeping(_ identities: String) throws -> AgentWire.Message {
            try fixture.ask(.unlock, path: path) { writer in
                writer.field(.passphrase, AgentFixture.passphrase)
                writer.field(.value, identities)
                writer.field(.idleSeconds, UInt64(60))
                writer.field(.maxSeconds, UInt64(60))
            }
        }
        #expect(ErrorAnswer(try unlockKeeping("AGE-SECRET-KEY-1NOTAKEY\n")) == .badRequest("malformed identities"))
        // A post-quantum identity in an agent without VaultAgePQ's keys (one that runs from vault, as this test
        // process has none installed): refused, and said so; its status says which identities it can keep.
        #expect(ErrorAnswer(try unlockKeeping("AGE-SECRET-KEY-PQ-1QQQQ\n")) == .badRequest("this agent cannot keep post-quantum identities (it runs from vault, not vault-net)"))
        #expect(try fixture.ask(.status).strings(.identityType) == ["X25519"])
        #expect(ErrorAnswer(try fixture.ask(.unlock) { $0.field(.passphrase, "p") }) == .badRequest("a request without a required field"))
        #expect(fixture.ring.holdsNothing)
    }

    @Test func aDataKeyOpensOnlyAVersionTwoVaultAndOnlyTheRightKey() throws {
        let one = try fixture.makeVault("one.vault")
        let two = try fixture.makeVault("two.vault", version: 2)
        for path in [one, two] {
            let answer = try fixture.ask(.unlock, path: path) { writer in
                writer.field(.dataKey, SecureBytes([UInt8](repeating: 0, count: 32)))
                writer.field(.idleSeconds, UInt64(60))
                writer.field(.maxSeconds, UInt64(60))
                writer.field(.flags, true)
            }
            #expect(ErrorAnswer(answer) == .vault(path == one ? .needsVersion2(path: one) : .wrongPassphrase(path: two)))
        }
        #expect(fixture.ring.holdsNothing)
    }

    @Test func theTestKDFIsRefusedUnlessTheAgentItselfAllowsIt() throws {
        let production = AgentFixture(allowsInsecureKDFForTesting: false)
        let path = try production.makeVault(entries: [("k", "v")])
        let answer = ErrorAnswer(try production.unlock(path, testKDF: true))
        #expect(answer.errorCase == "kdfParametersOutOfRange" && answer.arguments.first == path, "\(answer)")
        #expect(production.ring.holdsNothing)
    }

    @Test func lockAndLockAllSayWhatTheyLocked() throws {
        let a = try unlocked("a.vault"), b = try unlocked("b.vault")
        #expect(try fixture.ask(.lock, path: a).bool(.bool) == true)
        #expect(status(try fixture.ask(.lock, path: a)) == .ok)
        #expect(try fixture.ask(.lock, path: a).bool(.bool) == false)
        #expect(status(try fixture.ask(.get, path: a) { $0.field(.name, "k") }) == .locked)
        #expect(try fixture.get(b, "k") == "v")
        #expect(ErrorAnswer(try fixture.ask(.lock)) == .badRequest("a request without a required field"))
        let all = try fixture.ask(.lockAll)
        #expect(status(all) == .ok && all.number(.count) == 1)
        #expect(try fixture.ask(.lockAll).number(.count) == 0)
        #expect(status(try fixture.ask(.get, path: b) { $0.field(.name, "k") }) == .locked)
    }

    @Test func probeSaysUnlockedOrLockedAndIsNoActivity() throws {
        let path = try unlocked()
        fixture.clock.advance(by: 30)
        #expect(status(try fixture.ask(.probe, path: path)) == .ok)
        #expect(try idleLeft() == [30])
        #expect(status(try fixture.ask(.probe, path: fixture.directory.file("other.vault"))) == .locked)
        fixture.clock.advance(by: 30)
        #expect(status(try fixture.ask(.probe, path: path)) == .locked)
    }

    @Test func aPassphraseChangedAroundTheAgentLocksTheVaultThere() throws {
        let path = try unlocked()
        let elsewhere = try VaultOpener.open(path: path, passphrase: SecureBytes(string: AgentFixture.passphrase), options: fixture.storeOptions)
        try elsewhere.changePassphrase(to: SecureBytes(string: "new passphrase"), parameters: nil)
        elsewhere.close()
        #expect(status(try fixture.ask(.get, path: path) { $0.field(.name, "k") }) == .locked)
        #expect(fixture.ring.holdsNothing)
        #expect(fixture.log.last == "re-keyed elsewhere, locked \(path)")
        // And the probe finds it the same way.
        #expect(status(try fixture.unlock(path, passphrase: "new passphrase")) == .ok)
        let again = try VaultOpener.open(path: path, passphrase: SecureBytes(string: "new passphrase"), options: fixture.storeOptions)
        try again.changePassphrase(to: SecureBytes(string: AgentFixture.passphrase), parameters: nil)
        again.close()
        #expect(status(try fixture.ask(.probe, path: path)) == .locked)
        #expect(fixture.ring.holdsNothing)
    }

    // MARK: entries

    @Test func getAnswersTheValueOrNoValueAndCountsAsActivity() throws {
        let path = try unlocked()
        fixture.clock.advance(by: 30)
        #expect(try fixture.get(path, "k") == "v")
        #expect(try idleLeft() == [60])
        #expect(try fixture.get(path, "missing") == nil)
        let invalid = try fixture.ask(.get, path: path) { writer in [UInt8(ascii: "k"), 0xFF].withUnsafeBytes { writer.field(.name, $0) } }
        #expect(ErrorAnswer(invalid) == .vault(.invalidEntryName(reason: "the name is not valid UTF-8")))
        #expect(ErrorAnswer(try fixture.ask(.get, path: path)) == .badRequest("a request without a required field"))
        #expect(status(try fixture.ask(.get, path: fixture.directory.file("other.vault")) { $0.field(.name, "k") }) == .locked)
    }

    @Test func listAnswersEveryNameWithItsTimesAndSize() throws {
        let path = try unlocked()
        let answer = try fixture.ask(.list, path: path)
        #expect(answer.strings(.name) == ["k", "other"])
        #expect(answer.numbers(.size) == [1, 1])
        let store = try VaultOpener.open(path: path, passphrase: SecureBytes(string: AgentFixture.passphrase), options: fixture.storeOptions)
        defer { store.close() }
        let expected = try store.listing().map { UInt64(bitPattern: Int64(($0.attributes.created.timeIntervalSince1970 * 1000).rounded())) }
        #expect(answer.numbers(.created) == expected)
        #expect(answer.numbers(.modified).count == 2)
    }

    @Test func namesForCompletionAreNoActivityAndNamesForListAre() throws {
        let path = try unlocked()
        fixture.clock.advance(by: 30)
        let completion = try fixture.ask(.names, path: path) { $0.field(.flags, true) }
        #expect(completion.strings(.name) == ["k", "other"])
        #expect(try idleLeft() == [30])
        #expect(try fixture.ask(.names, path: path).strings(.name) == ["k", "other"])
        #expect(try idleLeft() == [60])
    }

    /// Version 5's one write, `apply`, on a version-1 vault: a batch of its own terms (puts, removes, copies,
    /// requirements) as document changes, at once or not at all; a change it cannot hold writes nothing.
    @Test func applyWritesAVersionOneBatchAtOnceOrNothing() throws {
        let path = try unlocked()
        func apply(_ changes: [DocumentChange]) throws -> AgentWire.Message {
            try fixture.ask(.apply, path: path) { AgentWire.encode(changes, into: $0) }
        }
        var batch = SecureKeyValueStore.Changes()
        try batch.put(SecureBytes(string: "new"), forKey: "n")
        batch.remove("other")
        try batch.copy("k", to: "copy", keepCreated: false)
        #expect(status(try apply(try batch.documentChanges())) == .ok)
        #expect(try fixture.ask(.names, path: path).strings(.name) == ["copy", "k", "n"])
        #expect(try fixture.get(path, "copy") == "v" && fixture.get(path, "n") == "new")

        var refused = SecureKeyValueStore.Changes()
        try refused.put(SecureBytes(string: "lost"), forKey: "lost")
        refused.require("k", exists: false)
        #expect(ErrorAnswer(try apply(try refused.documentChanges())) == .vault(.entryExists(key: "k", path: path)))
        #expect(try fixture.get(path, "lost") == nil)

        // A field other than the password, a restore: not a version-1 vault's; the batch writes nothing.
        let fields: [DocumentChange] = [
            .setField(entry: "lost", field: "password", value: SecureBytes(string: "lost")),
            .setField(entry: "lost", field: "username", value: SecureBytes(string: "alice"), secret: false)]
        #expect(ErrorAnswer(try apply(fields)) == .vault(.needsVersion2(path: path)))
        #expect(ErrorAnswer(try apply([.restore(entry: "k", version: 1)])) == .vault(.needsVersion2(path: path)))
        // A requirement after a change: version 1 checks requirements before any change, so it cannot say it.
        let late: [DocumentChange] = [.delete(entry: "k", ifPresent: true), .require(entry: "k", exists: false)]
        #expect(ErrorAnswer(try apply(late)) == .vault(.needsVersion2(path: path)))
        #expect(try fixture.get(path, "lost") == nil && fixture.get(path, "k") == "v")
    }

    /// A batch of 30,000 puts through the agent: streamed from the client's one region, and its values slices of the
    /// request's region in the agent (a region each was past the kernel's 65,530 mappings).
    @Test func oneBatchOfManyPutsThroughTheAgent() throws {
        let path = try unlocked()
        var batch = SecureKeyValueStore.Changes()
        for index in 0..<30_000 { try batch.put("value-\(index)", forKey: "entry-\(index)") }
        #expect(status(try fixture.ask(.apply, path: path) { try! AgentWire.encode(batch, into: $0) }) == .ok)
        #expect(try fixture.ask(.names, path: path).strings(.name).count == 30_002)
        #expect(try fixture.get(path, "entry-29999") == "value-29999")
    }

    @Test func removeSaysWhetherThereWasAnEntry() throws {
        let path = try unlocked()
        #expect(try fixture.ask(.remove, path: path) { $0.field(.name, "k") }.bool(.bool) == true)
        #expect(try fixture.ask(.remove, path: path) { $0.field(.name, "k") }.bool(.bool) == false)
        #expect(try fixture.get(path, "k") == nil)
        #expect(ErrorAnswer(try fixture.ask(.remove, path: path)) == .badRequest("a request without a required field"))
    }

    @Test func passwdChangesThePassphraseOfTheFileAndKeepsTheVaultUnlocked() throws {
        let path = try unlocked()
        #expect(status(try fixture.ask(.passwd, path: path) { $0.field(.passphrase, "second passphrase") }) == .ok)
        #expect(try fixture.get(path, "k") == "v")
        let store = SecureKeyValueStore(path: path, options: fixture.storeOptions)
        #expect(throws: VaultError.wrongPassphrase(path: path)) { try store.open(with: SecureBytes(string: AgentFixture.passphrase)) }
        try store.open(with: SecureBytes(string: "second passphrase"))
        store.close()
        #expect(ErrorAnswer(try fixture.ask(.passwd, path: path)) == .badRequest("a request without a required field"))
    }

    @Test func entriesAnswersEachNameInOrder() throws {
        let path = try unlocked()
        let answer = try fixture.ask(.entries, path: path) { writer in
            for name in ["other", "missing", "k"] { writer.field(.name, name) }
        }
        let fields = answer.fields.compactMap { AgentWire.Tag(rawValue: $0.tag) }
        #expect(fields == [.bool, .created, .modified, .size, .value, .bool, .bool, .created, .modified, .size, .value])
        #expect(answer.fields.filter { $0.tag == AgentWire.Tag.bool.rawValue }.map { answer.bool($0.range) } == [true, false, true])
        #expect(answer.fields.filter { $0.tag == AgentWire.Tag.value.rawValue }.map { answer.secret($0.range) } == [SecureBytes(string: "x"), SecureBytes(string: "v")])
    }

    // MARK: what is not a request

    @Test func anUnknownOperationOrAnotherVersionIsRefused() throws {
        let unknown = AgentWire.Writer(kind: 99)
        #expect(ErrorAnswer(try fixture.answer(unknown)) == .badRequest("unknown operation 99"))
        let other = AgentWire.Writer(version: AgentWire.version + 1, kind: AgentOperation.status.rawValue)
        let (reply, ends) = fixture.service.answer(try AgentWire.Message(payload: other.buffer.secureBytes()))
        #expect(ends)
        #expect(reply.buffer.secureBytes() == SecureBytes([AgentWire.version, AgentStatus.error.rawValue]))
    }

    @Test func errorAnswersCarryThePresentationTheAgentIsGiven() throws {
        var configuration = fixture.service.configuration
        configuration.present = { error in AgentFailure(code: "presented", exitCode: 7, message: "said \(error)", hint: "do this") }
        let service = AgentService(ring: fixture.ring, configuration: configuration)
        let path = try unlocked()
        let request = AgentWire.Writer(kind: AgentOperation.apply.rawValue)
        request.field(.path, path)
        AgentWire.encode([.require(entry: "k", exists: false)], into: request)
        let answer = try AgentWire.Message(payload: service.answer(try AgentWire.Message(payload: request.buffer.secureBytes())).reply.buffer.secureBytes())
        let error = VaultError.entryExists(key: "k", path: path)
        #expect(ErrorAnswer(answer) == ErrorAnswer(
            code: "presented", exitCode: 7, message: "said \(error)", errorCase: "entryExists", arguments: ["k", path]).withHint("do this"))
    }

    @Test func theLogNamesPathsAndTimeoutsNeverASecret() throws {
        let path = try unlocked()
        _ = try fixture.ask(.apply, path: path) { writer in
            AgentWire.encode([.setField(entry: "n", field: "password", value: SecureBytes(string: "VALUE-CANARY"))], into: writer)
        }
        _ = try fixture.ask(.passwd, path: path) { $0.field(.passphrase, "PASSPHRASE-CANARY") }
        _ = try fixture.unlock(path, passphrase: "WRONG-CANARY")
        fixture.clock.advance(by: 3600)
        _ = try fixture.ask(.status)
        let log = fixture.log.joined(separator: "\n")
        #expect(!log.contains("CANARY") && !log.contains(AgentFixture.passphrase))
        #expect(fixture.log == ["unlocked \(path) (idle 60 s, max 3600 s)", "locked \(path) (timeout)"])
    }
}

extension ErrorAnswer {
    func withHint(_ hint: String) -> ErrorAnswer {
        var copy = self
        copy.hint = hint
        return copy
    }
}

import Foundation
import Testing
@testable import VaultAgent
import VaultAge
import VaultCore

/// What the agent holds and when it lets go, on a clock moved by hand: no test waits for a timeout.
@Suite struct KeyRingTests {
    let fixture = AgentFixture()
    var ring: KeyRing { fixture.ring }
    var clock: TestClock { fixture.clock }

    /// A real store of a new vault holding `k` = `v`, open.
    func openStore(_ name: String = "test.vault") throws -> any KeyValueVault {
        let path = try fixture.makeVault(name, entries: [("k", "v")])
        return try VaultOpener.open(path: path, passphrase: SecureBytes(string: AgentFixture.passphrase), options: fixture.storeOptions)
    }

    @Test func aVaultLocksAtItsIdleTimeoutAndItsKeyIsZeroed() throws {
        let store = try openStore()
        ring.hold(store, at: store.path, idleSeconds: 60, maxSeconds: 3600)
        clock.advance(by: 59.999)
        #expect(ring.vault(at: store.path, touch: false) === store)
        clock.advance(by: 0.001)
        #expect(ring.vault(at: store.path, touch: false) == nil)
        #expect(throws: VaultError.notOpen) { try store.getBytes("k") }
        #expect(fixture.log == ["locked \(store.path) (timeout)"])
        #expect(ring.holdsNothing)
    }

    @Test func activityPushesTheIdleTimeoutBackAndAQuestionDoesNot() throws {
        let store = try openStore()
        ring.hold(store, at: store.path, idleSeconds: 60, maxSeconds: 3600)
        clock.advance(by: 50)
        #expect(ring.vault(at: store.path, touch: true) != nil)  // activity at 50
        clock.advance(by: 50)
        #expect(ring.status() == [KeyRing.Entry(path: store.path, idleSecondsLeft: 10, maxSecondsLeft: 3500)])
        #expect(ring.vault(at: store.path, touch: false) != nil)  // a question at 100: not activity
        clock.advance(by: 10)
        #expect(ring.vault(at: store.path, touch: false) == nil, "locked 60 s after the last activity")
    }

    @Test func theHardLimitCountsFromTheUnlockWhateverTheActivity() throws {
        let store = try openStore()
        ring.hold(store, at: store.path, idleSeconds: 60, maxSeconds: 100)
        for _ in 0..<9 {
            clock.advance(by: 11)
            #expect(ring.vault(at: store.path, touch: true) != nil)
        }
        #expect(ring.status().map(\.maxSecondsLeft) == [1])
        clock.advance(by: 1)
        #expect(ring.vault(at: store.path, touch: true) == nil)
        #expect(throws: VaultError.notOpen) { try store.getBytes("k") }
    }

    @Test func theSweepLocksEveryExpiredVaultAndOnlyThose() throws {
        let short = try openStore("short.vault"), long = try openStore("long.vault")
        ring.hold(short, at: short.path, idleSeconds: 10, maxSeconds: 3600)
        ring.hold(long, at: long.path, idleSeconds: 20, maxSeconds: 3600)
        clock.advance(by: 15)
        ring.sweep()
        #expect(ring.status() == [KeyRing.Entry(path: long.path, idleSecondsLeft: 5, maxSecondsLeft: 3585)])
        #expect(fixture.log == ["locked \(short.path) (timeout)"])
        #expect(try long.getBytes("k") == SecureBytes(string: "v"))
    }

    @Test func holdingAgainReplacesAndClosesTheFormerStore() throws {
        let first = try openStore()
        ring.hold(first, at: first.path, idleSeconds: 10, maxSeconds: 20)
        clock.advance(by: 15)
        let second = try VaultOpener.open(path: first.path, passphrase: SecureBytes(string: AgentFixture.passphrase), options: fixture.storeOptions)
        ring.hold(second, at: first.path, idleSeconds: 10, maxSeconds: 20)
        #expect(throws: VaultError.notOpen) { try first.getBytes("k") }
        #expect(ring.status() == [KeyRing.Entry(path: first.path, idleSecondsLeft: 10, maxSecondsLeft: 20)], "the timeouts start again")
    }

    @Test func lockAndLockAllCloseWhatTheyLockAndSayWhetherThereWasAnything() throws {
        let a = try openStore("a.vault"), b = try openStore("b.vault"), c = try openStore("c.vault")
        for store in [a, b, c] { ring.hold(store, at: store.path, idleSeconds: 60, maxSeconds: 60) }
        #expect(ring.lock(a.path))
        #expect(!ring.lock(a.path))
        #expect(throws: VaultError.notOpen) { try a.getBytes("k") }
        #expect(try b.getBytes("k") == SecureBytes(string: "v"))
        #expect(ring.lockAll() == 2)
        #expect(ring.lockAll() == 0)
        #expect(throws: VaultError.notOpen) { try c.getBytes("k") }
        #expect(fixture.log == ["locked \(a.path)", "locked \(b.path)", "locked \(c.path)"])
        #expect(ring.holdsNothing)
    }

    @Test func keptIdentitiesOpenASharedVaultOnDemandUntilTheirLimitOrAnyLock() throws {
        let path = try fixture.makeVault("shared.vault", version: 2, entries: [("k", "shared")])
        let identity = AgeIdentity.generate()
        let owner = try VaultOpener.open(path: path, passphrase: SecureBytes(string: AgentFixture.passphrase), options: fixture.storeOptions)
        try #require(owner as? DocumentVault).setRecipients { current, dataKey in current + [try VaultRecipientStanza.wrap(dataKey, for: identity.recipient)] }
        owner.close()
        #expect(ring.vault(at: path, touch: false) == nil, "nothing kept: nothing opens it")

        ring.keep([identity], idleSeconds: 30, maxSeconds: 100, options: fixture.storeOptions)
        #expect(!ring.holdsNothing)
        let opened = try #require(ring.vault(at: path, touch: false))
        #expect(try opened.getBytes("k") == SecureBytes(string: "shared"))
        #expect(ring.status() == [KeyRing.Entry(path: path, idleSecondsLeft: 30, maxSecondsLeft: 100)])
        // Any lock forgets the identities: the vault is not opened again behind it.
        #expect(ring.lock(path))
        #expect(ring.vault(at: path, touch: false) == nil)
        #expect(ring.holdsNothing)

        // Kept again, then past their limit: forgotten, and a vault opened with them never outlives them.
        ring.keep([identity], idleSeconds: 300, maxSeconds: 100, options: fixture.storeOptions)
        clock.advance(by: 40)
        #expect(ring.vault(at: path, touch: false) != nil)
        #expect(ring.status().map(\.maxSecondsLeft) == [60])
        clock.advance(by: 60)
        #expect(ring.vault(at: path, touch: false) == nil)
        #expect(ring.holdsNothing)
        #expect(fixture.log.contains("forgot the kept identities (timeout)"))
    }

    @Test func aVersionOneVaultIsNotOpenedByAnIdentity() throws {
        let path = try fixture.makeVault("one.vault", entries: [("k", "v")])
        ring.keep([AgeIdentity.generate()], idleSeconds: 30, maxSeconds: 100, options: fixture.storeOptions)
        #expect(ring.vault(at: path, touch: true) == nil)
        #expect(ring.status().isEmpty)
    }

    @Test func documentVaultsAreTheVersionTwoVaultsHeldAndNotExpired() throws {
        let one = try openStore("one.vault")
        let twoPath = try fixture.makeVault("two.vault", version: 2)
        let two = try VaultOpener.open(path: twoPath, passphrase: SecureBytes(string: AgentFixture.passphrase), options: fixture.storeOptions)
        ring.hold(one, at: one.path, idleSeconds: 60, maxSeconds: 60)
        ring.hold(two, at: two.path, idleSeconds: 10, maxSeconds: 60)
        #expect(ring.documentVaults().map(\.path) == [twoPath])
        clock.advance(by: 10)
        #expect(ring.documentVaults().isEmpty)
    }
}

import Foundation
import Testing
import VaultCore
import VaultTestSupport

/// kill -9 at random moments of `vault put`: the vault always opens with the correct passphrase and holds the
/// old or the new value; temporary files a killed writer leaves are removed by the next write.
///
/// CI runs 200 kills; `VAULT_CRASH_ITERATIONS=1000 swift test --filter CrashTests` runs the long version.
@Suite(.timeLimit(.minutes(10))) struct CrashTests {
    @Test func sigkillDuringPutLeavesTheOldOrTheNewVault() throws {
        let iterations = Adversarial.environmentInt("VAULT_CRASH_ITERATIONS", default: 200)
        let box = try Sandbox()
        try box.initVault()
        let valueFile = box.directory + "/value"
        let arguments = ["put", "k", "--passphrase-file", box.passphraseFile]
        try box.write("v0", to: valueFile)
        #expect(try box.vault(["put", "k"], stdin: Data("v0".utf8)).status == 0)

        // The kill window: 0 to 1.1 times the duration of an uninterrupted put (process start included).
        var durations = [Double]()
        for _ in 0..<5 {
            let started = monotonicNow()
            let process = try Adversarial.start(arguments, stdinFile: valueFile, environment: box.environment)
            process.waitForExit()
            #expect(process.terminationStatus == 0)
            durations.append(monotonicNow() - started)
        }
        let window = durations.sorted()[2] * 1.1

        var old = "v0"
        var (keptOld, tookNew, finished, strayCount, cleanups) = (0, 0, 0, 0, 0)
        var generator = SystemRandomNumberGenerator()
        for iteration in 1...iterations {
            // Values of varying size, so that the file grows and shrinks across 256-byte blocks.
            let new = "v\(iteration)-" + String(repeating: "x", count: Int.random(in: 0..<600, using: &generator))
            try box.write(new, to: valueFile)
            let process = try Adversarial.start(arguments, stdinFile: valueFile, environment: box.environment)
            usleep(UInt32(Double.random(in: 0..<window, using: &generator) * 1_000_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitForExit()
            let killed = process.terminationReason == .uncaughtSignal
            if !killed {
                finished += 1
                #expect(process.terminationStatus == 0, "iteration \(iteration): put failed on its own")
            }

            let contents: [String: String]
            do {
                contents = try Adversarial.contents(of: box.vaultPath)
            } catch {
                Issue.record("iteration \(iteration): the vault does not open after kill -9: \(error)")
                break
            }
            let value = contents["k"]
            #expect(value == old || value == new, "iteration \(iteration): neither the old nor the new value")
            #expect(contents.count == 1 + (cleanups > 0 ? 1 : 0))
            if value == new {
                if killed { tookNew += 1 }
                old = new
            } else {
                #expect(killed, "a put that exited 0 must have written its value")
                keptOld += 1
            }
            // A killed writer may leave its temporary file; the next write (here: another process's) removes it.
            let stray = Adversarial.strayTemporaryFiles(box.vaultPath)
            if !stray.isEmpty {
                strayCount += 1
                cleanups += 1
                let put = try box.vault(["put", "cleanup"], stdin: Data("\(iteration)".utf8))
                #expect(put.status == 0)
                #expect(Adversarial.strayTemporaryFiles(box.vaultPath) == [], "the next write left stray files")
            }
        }
        print("""
            CrashTests: \(iterations) kill -9 of 'vault put' (window \(Int(window * 1000)) ms): \
            \(keptOld) old, \(tookNew) new after the kill, \(finished) finished first; \
            \(strayCount) left a temporary file, all removed by the next write
            """)
        #expect(keptOld > 0, "no kill landed before the rename: the window is wrong")
        #expect(tookNew + finished > 0)
        // Finally a clean put still works and the lock is free.
        #expect(try box.vault(["put", "k"], stdin: Data("final".utf8)).status == 0)
        #expect(try Adversarial.contents(of: box.vaultPath)["k"] == "final")
    }
}

import Foundation
import Testing
@testable import VaultTerminal

@Suite struct WaitingLineTests {
    @Test func theLineHasTheLabelAndTheTimeTaken() {
        #expect(WaitingLine.text(label: "re-encrypting...", elapsed: 0.5) == "re-encrypting... 0:00")
        #expect(WaitingLine.text(label: "re-encrypting...", elapsed: 75.9) == "re-encrypting... 1:15")
    }

    struct Refused: Error, Equatable {}

    /// The work's result or error comes back as it is (a fast one draws nothing, on a terminal or not; the CLI's pty
    /// test shows a slow one).
    @Test func theWorksResultAndErrorComeBackAsTheyAre() throws {
        #expect(WaitingLine.during("waiting") { 42 } == 42)
        #expect(throws: Refused()) { try WaitingLine.during("waiting") { throw Refused() } }
    }
}

extension WaitingLineTests {
    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// As on a terminal (its thread and pipe run; the line goes to stderr): fast, slow (drawn, then erased) and failing
    /// work leave no descriptor open once the thread has ended, and the result comes back. In a process of its own:
    /// the tests running beside it open and close descriptors of their own (CI counted 71 for 37 once).
    @Test func onATerminalTheThreadAndItsPipeEndWithTheWork() async {
        await #expect(processExitsWith: .success) {
            let before = WaitingLineTests.openDescriptors()
            for _ in 0..<20 where WaitingLine.during("waiting", onTerminal: true, { 7 }) != 7 { exit(2) }
            do {
                try WaitingLine.during("waiting", onTerminal: true) { throw Refused() }
                exit(3)
            } catch {
                if !(error is Refused) { exit(4) }
            }
            let slow = WaitingLine.during("waiting", onTerminal: true) { () -> Int in
                usleep(700_000)  // past the half second: the line is drawn
                return 8
            }
            if slow != 8 { exit(5) }
            // The drawing threads close their end when woken: poll for it, with a deadline.
            let deadline = Date().addingTimeInterval(5)
            while WaitingLineTests.openDescriptors() != before && Date() < deadline { usleep(10_000) }
            exit(WaitingLineTests.openDescriptors() == before ? 0 : 6)
        }
    }
}

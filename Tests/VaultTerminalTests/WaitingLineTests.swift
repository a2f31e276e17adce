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

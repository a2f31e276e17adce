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
    /// The inode of the pipe behind `fd`, or nil when `fd` is closed.
    static func pipeInode(_ fd: Int32) -> ino_t? {
        var info = stat()
        return fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO ? info.st_ino : nil
    }

    /// Runs `work` as `during` does on a terminal (its thread and pipe; the line goes to stderr) and returns what it
    /// returned or threw once both ends of that line's pipe are closed (polled, 5 s at most; a number taken again by
    /// another test's descriptor meanwhile is another pipe or file: not this one), or nil if one stays open.
    static func showing<T>(_ work: () throws -> T) throws -> Result<T, any Error>? {
        let line = try #require(WaitingLine(label: "waiting"))
        let ends = [line.wake.read, line.wake.write].map { ($0, pipeInode($0)) }
        let result = Result { try line.showing(work) }
        let deadline = Date().addingTimeInterval(5)
        func open() -> Bool { ends.contains { fd, inode in inode != nil && pipeInode(fd) == inode } }
        while open() && Date() < deadline { usleep(10_000) }
        return open() ? nil : result
    }

    /// On a terminal: fast, slow (drawn, then erased) and failing work leave both ends of the line's pipe closed once
    /// its thread has ended, and the result comes back. Only this line's own descriptors are checked (CI counted
    /// every descriptor of the process once, 71 for 37, the tests beside it opening their own).
    @Test func onATerminalTheThreadAndItsPipeEndWithTheWork() throws {
        for _ in 0..<20 { #expect(try Self.showing { 7 }?.get() == 7) }
        let failed = try #require(try Self.showing { () throws -> Int in throw Refused() }, "the pipe stayed open")
        #expect(throws: Refused()) { try failed.get() }
        let slow = try Self.showing { () -> Int in
            usleep(700_000)  // past the half second: the line is drawn
            return 8
        }
        #expect(try slow?.get() == 8)
        // The public entry point on a terminal: the result, through `during`.
        #expect(WaitingLine.during("waiting", onTerminal: true) { 9 } == 9)
    }
}

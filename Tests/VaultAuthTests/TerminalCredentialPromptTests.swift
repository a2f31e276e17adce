import Foundation
import Testing
import VaultCore
import VaultTerminal
@testable import VaultAuth

// Glibc declares these only with _XOPEN_SOURCE, which the Swift module map does not set.
@_silgen_name("posix_openpt") private func c_posix_openpt(_ flags: Int32) -> Int32
@_silgen_name("grantpt") private func c_grantpt(_ fd: Int32) -> Int32
@_silgen_name("unlockpt") private func c_unlockpt(_ fd: Int32) -> Int32
@_silgen_name("ptsname_r") private func c_ptsname_r(_ fd: Int32, _ buffer: UnsafeMutablePointer<CChar>, _ length: Int) -> Int32

/// The terminal prompt on a pseudo-terminal: the test plays the user on the master side.
///
/// Ctrl-C while the password is typed is tested on the `vault` binary (VaultCLITests, `TerminalPromptTests` and
/// `LoginTerminalTests`), not here: signal dispositions are process-wide, and the in-process servers of the other
/// suites (HummingbirdTesting's ServiceGroup) set SIGINT to SIG_IGN while they run.
@Suite("TerminalCredentialPrompt on a pseudo-terminal", .serialized)
struct TerminalCredentialPromptTests {
    static let space = ProtectionSpace(origin: Origin(scheme: "https", host: "example.com", port: 443), realm: "R")

    final class PseudoTerminal: @unchecked Sendable {
        let master: Int32
        let slavePath: String
        private var transcript: [UInt8] = []

        init() throws {
            master = c_posix_openpt(O_RDWR | O_NOCTTY)
            var name = [CChar](repeating: 0, count: 128)
            guard master >= 0, c_grantpt(master) == 0, c_unlockpt(master) == 0,
                  c_ptsname_r(master, &name, name.count) == 0
            else { throw POSIXError(.ENODEV) }
            slavePath = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }

        deinit { close(master) }

        /// Reads until `text` has appeared in the output (bounded by `seconds`), without blocking a thread of the
        /// cooperative pool (the prompt needs one to deliver its answer).
        func waitFor(_ text: String, seconds: Double = 60) async throws -> String {
            let deadline = Date().addingTimeInterval(seconds)
            while !String(decoding: transcript, as: UTF8.self).contains(text) {
                guard Date() < deadline else { throw TimedOut(seconds: seconds) }
                var pollfd = Glibc.pollfd(fd: master, events: Int16(POLLIN), revents: 0)
                if poll(&pollfd, 1, 0) > 0 {
                    var buffer = [UInt8](repeating: 0, count: 256)
                    let n = read(master, &buffer, buffer.count)
                    if n > 0 { transcript += buffer[..<n] }
                } else {
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            return String(decoding: transcript, as: UTF8.self)
        }

        func type(_ text: String) {
            _ = text.utf8CString.withUnsafeBufferPointer { write(master, $0.baseAddress, $0.count - 1) }
        }

        var echoIsOn: Bool {
            var settings = termios()
            tcgetattr(master, &settings)
            return settings.c_lflag & tcflag_t(ECHO) != 0
        }

        var output: String { String(decoding: transcript, as: UTF8.self) }
    }

    @Test func usernameIsEchoedPasswordIsNotAndEchoIsRestored() async throws {
        let pty = try PseudoTerminal()
        #expect(pty.echoIsOn)
        let prompt = TerminalCredentialPrompt(ttyPath: pty.slavePath)
        let answer = Task {
            try await prompt.credential(for: Self.space, reason: .noStoredCredential, suggestedUsername: nil)
        }
        _ = try await pty.waitFor("Username: ")
        pty.type("alice\n")
        _ = try await pty.waitFor("Password for 'alice': ")
        #expect(!pty.echoIsOn)  // off before the password prompt appeared
        pty.type("s3cret-pw\n")
        let credential = try await withTimeout(60) { try await answer.value }
        #expect(credential?.username == "alice")
        #expect(password(of: credential) == "s3cret-pw")
        _ = try? await pty.waitFor("\n", seconds: 0.3)
        #expect(pty.output.contains("Log in to https://example.com:443 (realm \"R\")"))
        #expect(pty.output.contains("alice"))  // echoed
        #expect(!pty.output.contains("s3cret"))  // not echoed
        #expect(pty.echoIsOn)  // restored
    }

    @Test func suggestedUsernameAndEndOfInputAtThePasswordRestoresEcho() async throws {
        let pty = try PseudoTerminal()
        let prompt = TerminalCredentialPrompt(ttyPath: pty.slavePath)
        let answer = Task {
            try await prompt.credential(
                for: Self.space, reason: .storedCredentialRejected(username: "bob"), suggestedUsername: "bob")
        }
        let shown = try await pty.waitFor("Username [bob]: ")
        #expect(shown.contains("The stored password for 'bob' was rejected"))
        pty.type("\n")  // take the suggestion
        _ = try await pty.waitFor("Password for 'bob': ")
        pty.type("\u{04}")  // ^D: end of input, the user declines
        let credential = try await withTimeout(60) { try await answer.value }
        #expect(credential == nil)
        #expect(pty.echoIsOn)
    }

    @Test func noTerminalFailsAtOnce() async throws {
        let prompt = TerminalCredentialPrompt(ttyPath: "/nonexistent/tty")
        let started = Date()
        await #expect {
            _ = try await prompt.credential(for: Self.space, reason: .noStoredCredential, suggestedUsername: nil)
        } throws: { error in
            guard case let .noPromptAvailable(space, detail) = error as? AuthenticationError else { return false }
            return space == Self.space && detail == "cannot open terminal '/nonexistent/tty': No such file or directory"
        }
        #expect(Date().timeIntervalSince(started) < 30)  // a hang would never return; the bound only guards against one
    }
}

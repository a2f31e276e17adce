import Foundation
import Testing
import VaultCore
import VaultSSH
@testable import VaultSSHAgent

/// A key's `confirm`: each signature asks the SSH_ASKPASS program as ssh-add -c makes OpenSSH's agent do.
struct ConfirmationTests {
    /// An askpass program that records its prompt variable and question, and answers with `exitCode`.
    static func askpass(in directory: String, exitCode: Int) throws -> (program: String, record: String) {
        let program = directory + "/askpass-\(exitCode)", record = directory + "/asked-\(exitCode)"
        try "#!/bin/sh\nprintf '%s|%s\\n' \"$SSH_ASKPASS_PROMPT\" \"$1\" >> '\(record)'\nexit \(exitCode)\n"
            .write(toFile: program, atomically: false, encoding: .utf8)
        chmod(program, 0o700)
        return (program, record)
    }

    @Test func aConfirmedKeySignsOnlyWhenTheAskpassProgramSaysYes() throws {
        let probe = try SSHAgentFixture()
        let yes = try Self.askpass(in: probe.directory, exitCode: 0), no = try Self.askpass(in: probe.directory, exitCode: 1)
        let key = try SSHPrivateKey.generate(.ed25519, comment: "careful")
        for (program, signs) in [(yes.program, true), (no.program, false), ("/nonexistent/askpass", false)] {
            let fixture = try SSHAgentFixture(askpass: program)
            try fixture.add("careful", key, confirm: true)
            try fixture.unlock()
            let signature = try fixture.sign(key.publicKey, [1, 2], on: fixture.service.connection(0))
            #expect((signature != nil) == signs, "\(program)")
        }
        let asked = try String(contentsOfFile: yes.record, encoding: .utf8)
        #expect(asked == "confirm|Allow use of the key \"careful\" (\(key.publicKey.fingerprint))?\n")
        #expect(try String(contentsOfFile: no.record, encoding: .utf8) == asked)
    }

    /// A plain passphrase box that ignores SSH_ASKPASS_PROMPT prints what was typed and exits 0: "no" is not a yes
    /// (OpenSSH takes only an empty answer or "yes").
    @Test func anAskpassThatPrintsNoIsANoWhateverItsExitStatus() throws {
        let probe = try SSHAgentFixture()
        let key = try SSHPrivateKey.generate(.ed25519, comment: "careful")
        for (answer, signs) in [("no", false), ("yes", true), ("YES", true), ("", true), ("sure", false)] {
            let program = probe.directory + "/askpass-says-\(answer.isEmpty ? "nothing" : answer)"
            try "#!/bin/sh\nprintf '%s\\n' '\(answer)'\nexit 0\n".write(toFile: program, atomically: false, encoding: .utf8)
            chmod(program, 0o700)
            let fixture = try SSHAgentFixture(askpass: program)
            try fixture.add("careful", key, confirm: true)
            try fixture.unlock()
            #expect((try fixture.sign(key.publicKey, [1], on: fixture.service.connection(0)) != nil) == signs, "askpass said '\(answer)'")
        }
    }

    @Test func withoutAnAskpassProgramAConfirmedKeyNeverSignsAndOthersDo() throws {
        let fixture = try SSHAgentFixture(askpass: nil)
        let careful = try SSHPrivateKey.generate(.ed25519, comment: "careful"), plain = try SSHPrivateKey.generate(.ed25519, comment: "plain")
        try fixture.add("careful", careful, confirm: true)
        try fixture.add("plain", plain)
        try fixture.unlock()
        let connection = fixture.service.connection(0)
        #expect(try fixture.sign(careful.publicKey, [1], on: connection) == nil)
        #expect(try fixture.sign(plain.publicKey, [1], on: connection) != nil)
    }
}

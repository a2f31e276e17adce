import Foundation
import Testing
import VaultTestSupport

/// An X server of the test's own (Xvfb, display number chosen by the server itself: `-displayfd`).
final class XvfbFixture: @unchecked Sendable {
    let display: String
    private let process: Process

    init() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/Xvfb") else {
            throw TestFailure("Xvfb is not installed (scripts/install-deps --test installs xvfb)")
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/Xvfb")
        process.arguments = ["-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "320x200x24"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        while !text.hasSuffix("\n") {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw TestFailure("Xvfb ended before naming its display") }
            text += String(decoding: chunk, as: UTF8.self)
        }
        display = ":" + text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit {
        // SIGKILL: the test process may hand its children a blocked SIGTERM. The clipboard tools' servers lose
        // their display with it and exit.
        kill(process.processIdentifier, SIGKILL)
        process.waitForExit()
    }
}

/// What the X clipboard of `display` holds (xclip).
func clipboardText(_ display: String) throws -> String {
    try CLI.exec("/usr/bin/xclip", ["-selection", "clipboard", "-out"], environment: ["DISPLAY": display]).stdoutText
}

/// Polls `condition` every 50 ms for at most `seconds`.
func eventually(within seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return try condition()
}

/// `vault clip` (issue 21) with real clipboards: xclip and xsel on an Xvfb display, OSC 52 into a tmux pane.
@Suite(.processTimeLimit, .serialized) struct ClipTests {
    let box: Sandbox
    static let value = "clip-S3cret-value-42"

    init() throws {
        box = try Sandbox()
        try box.initVault()
        let put = try box.vault(["put", "web"], stdin: Data(Self.value.utf8))
        #expect(put.status == 0, "\(put.stderr)")
    }

    /// A directory whose only programs are `tools` (links to /usr/bin), as PATH: which clipboard tool vault
    /// finds is then the test's choice.
    func path(with tools: [String]) throws -> String {
        let bin = box.directory + "/bin-" + tools.joined(separator: "-")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        for tool in tools { try FileManager.default.createSymbolicLink(atPath: bin + "/" + tool, withDestinationPath: "/usr/bin/" + tool) }
        return bin
    }

    func clipboard(_ display: String) throws -> String { try clipboardText(display) }

    @Test(arguments: ["xclip", "xsel"])
    func copiesThenClearsWhatItStillHolds(tool: String) throws {
        let x = try XvfbFixture()
        let environment = ["DISPLAY": x.display, "PATH": try path(with: [tool])]
        // 3 s: time for the read below on a loaded machine (with 1 s it was sometimes cleared before it was read).
        let result = try box.vault(["clip", "web", "--clear", "3"], extraEnvironment: environment)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "copied 'web' to the clipboard (\(tool)); cleared in 3 s if it still holds it\n")
        #expect(try clipboard(x.display) == Self.value)
        #expect(try eventually(within: 10) { try clipboard(x.display).isEmpty }, "the clipboard was not cleared")
    }

    @Test func aValueCopiedOverItStays() throws {
        let x = try XvfbFixture()
        let result = try box.vault(["clip", "web", "--clear", "1", "--json"], extraEnvironment: ["DISPLAY": x.display])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutText == #"{"clear_seconds":1,"clipboard":"xclip","name":"web"}"# + "\n")
        // xclip leaves a server behind that would hold every descriptor it inherited (the harness's pipes among
        // them): started from Python with close_fds, as vault itself starts it (closefrom).
        let other = try CLI.exec("/usr/bin/python3", ["-c", """
            import subprocess
            subprocess.run(["xclip", "-selection", "clipboard", "-in"], input=b"mine", close_fds=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            """], environment: ["DISPLAY": x.display])
        #expect(other.status == 0)
        Thread.sleep(forTimeInterval: 2.5)
        #expect(try clipboard(x.display) == "mine")
    }

    /// The processes vault leaves running (xclip's server, the clearing check) hold neither the value nor the
    /// passphrase: not in their command lines, not in their environments.
    @Test func whatStaysBehindHoldsNoSecretOnItsCommandLineOrEnvironment() throws {
        let x = try XvfbFixture()
        let result = try box.vault(
            ["clip", "web", "--clear", "30"],
            extraEnvironment: ["DISPLAY": x.display, "VAULT_PASSPHRASE": Adversarial.passphrase])
        #expect(result.status == 0, "\(result.stderr)")
        var seen: [String] = []
        for entry in try FileManager.default.contentsOfDirectory(atPath: "/proc") where Int(entry) != nil {
            guard let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                  let environment = FileManager.default.contents(atPath: "/proc/\(entry)/environ") else { continue }
            let argv = String(decoding: command, as: UTF8.self)
            let env = String(decoding: environment, as: UTF8.self)
            guard env.contains("DISPLAY=\(x.display)\0"), argv.contains("xclip") || argv.contains("clip-clear") else { continue }
            seen.append(argv.replacingOccurrences(of: "\0", with: " "))
            #expect(!argv.contains(Self.value) && !env.contains(Self.value))
            #expect(!env.contains("VAULT_PASSPHRASE"), "\(argv)")
        }
        #expect(seen.contains { $0.hasPrefix("xclip -selection clipboard -in") }, "\(seen)")
        #expect(seen.contains { $0.contains(" clip-clear --after 30 --clipboard xclip") }, "\(seen)")
    }

    @Test func withoutAGraphicalSessionItSaysWhatToDoAndAsksNothing() throws {
        // No passphrase source at all: the clipboard is checked before the vault is opened.
        // No tool either: install one, or OSC 52.
        let result = try box.vault(["clip", "web"], passphrase: false, extraEnvironment: ["PATH": try path(with: [])])
        #expect(result.status == 1)
        #expect(result.stderr == """
            vault: cannot copy to the clipboard: there is no display to copy to (neither WAYLAND_DISPLAY nor DISPLAY is set)
            hint: install wl-clipboard, xclip or xsel; or use --osc52 in a terminal that supports it (also over ssh)

            """)
        // xclip installed, but no display (walkthrough finding 12): not "install …".
        let installed = try box.vault(["clip", "web"], passphrase: false, extraEnvironment: ["PATH": try path(with: ["xclip"])])
        #expect(installed.status == 1)
        #expect(installed.stderr == """
            vault: cannot copy to the clipboard: there is no display to copy to (neither WAYLAND_DISPLAY nor DISPLAY is set)
            hint: xclip copies to a graphical session's clipboard: run vault clip in that session; or use --osc52 in a terminal that supports it (also over ssh)

            """)
        let both = try box.vault(["clip", "web"], passphrase: false, extraEnvironment: ["PATH": try path(with: ["xclip", "xsel"])])
        #expect(both.status == 1 && both.stderr.hasSuffix("hint: xclip and xsel copy to a graphical session's clipboard: run vault clip in that session; or use --osc52 in a terminal that supports it (also over ssh)\n"), "\(both.stderr)")
        let x = try XvfbFixture()
        let none = try box.vault(["clip", "web"], extraEnvironment: ["DISPLAY": x.display, "PATH": try path(with: [])])
        #expect(none.status == 1)
        #expect(none.stderr.hasPrefix("vault: cannot copy to the clipboard: no clipboard tool found (wl-copy for Wayland, xclip or xsel for X11)\n"))
        let missing = try box.vault(["clip", "nope"], extraEnvironment: ["DISPLAY": x.display])
        #expect(missing.status == 2)
        #expect(try clipboard(x.display).isEmpty)
        let bad = try box.vault(["clip", "web", "--clear", "-1"])
        #expect(bad.status == 64)
    }

    @Test func osc52ReachesTmuxsClipboard() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") else {
            Issue.record("tmux is not installed (scripts/install-deps --test installs it)")
            return
        }
        let socket = box.directory + "/tmux.sock"
        // tmux's server outlives the client: started from Python with close_fds, so that it holds none of the
        // harness's descriptors (the harness would wait for it).
        func tmux(_ arguments: [String]) throws -> CLIResult {
            try CLI.exec("/usr/bin/python3", ["-c", """
                import subprocess, sys
                r = subprocess.run(sys.argv[1:], close_fds=True, stdin=subprocess.DEVNULL, capture_output=True)
                sys.stdout.buffer.write(r.stdout); sys.stderr.buffer.write(r.stderr); sys.exit(r.returncode)
                """, "/usr/bin/tmux", "-S", socket, "-f", "/dev/null"] + arguments)
        }
        defer { _ = try? tmux(["kill-server"]) }
        let environment = box.environment.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        let command = "\(environment) \(CLI.vault) clip web --osc52 --passphrase-file \(box.passphraseFile); echo rc=$?; sleep 30"
        // set-clipboard on before the pane's command runs: one tmux invocation, commands separated by ";".
        #expect(try tmux(["start-server", ";", "set", "-s", "set-clipboard", "on", ";",
                          "new-session", "-d", "-x", "120", "-y", "20", "/bin/sh", "-c", command]).status == 0)
        #expect(try eventually(within: 10) { try tmux(["capture-pane", "-p"]).stdoutText.contains("rc=0") })
        #expect(try tmux(["capture-pane", "-p"]).stdoutText.contains("copied 'web' to the clipboard (osc52) (OSC 52: the terminal keeps it; vault cannot clear it)"))
        #expect(try tmux(["show-buffer"]).stdoutText == Self.value)
    }
}

import Foundation
import Testing

/// `vault run --mask` (issue 21): a real command's stdout and stderr reach the caller with every injected value
/// replaced by ******, also when the command writes a value in pieces with pauses between them.
@Suite(.processTimeLimit) struct RunMaskTests {
    let box: Sandbox

    init() throws {
        box = try Sandbox()
        try box.initVault()
        for (name, value) in [("token", "ghp_0123456789abcdef"), ("db", "hunter2-db-pass\n")] {
            let put = try box.vault(["put", name], stdin: Data(value.utf8))
            #expect(put.status == 0, "put \(name): \(put.stderr)")
        }
    }

    func run(_ arguments: [String]) throws -> CLIResult {
        try box.vault(["run", "--passphrase-file", box.passphraseFile] + arguments, passphrase: false)
    }

    @Test func injectedValuesNeverReachTheCallersStdoutOrStderr() throws {
        let script = #"""
            echo "token is $T, again:$T."; env | grep -c '^T=ghp_'; printf 'db=%s' "$D" >&2
            printf 'ghp_0123'; sleep 0.4; printf '456789abcdef|\n'
            printf 'half %s' "${T%cdef}"; exit 3
            """#
        let result = try run(["--mask", "--env", "T=token", "--env", "D=db", "--", "/bin/sh", "-c", script])
        #expect(result.status == 3, "\(result.stderr)")
        // The command saw the real values (grep counts one T=ghp_…); the caller sees none, nor the start of one.
        #expect(result.stdoutText == "token is ******, again:******.\n1\n******|\nhalf ******")
        #expect(result.stderr == "db=******")
        #expect(!result.stdoutText.contains("ghp_0123") && !result.stderr.contains("hunter2"))
    }

    @Test func withoutMaskTheOutputIsUntouched() throws {
        let result = try run(["--env", "T=token", "--", "/bin/sh", "-c", #"printf '%s' "$T""#])
        #expect(result.status == 0)
        #expect(result.stdoutText == "ghp_0123456789abcdef")
    }

    @Test func aLargeOutputPassesWhole() throws {
        // 4 MiB of plain text with a value every 64 KiB: nothing lost, nothing reordered, every value masked.
        let script = #"i=0; while [ $i -lt 64 ]; do head -c 65000 /dev/zero | tr '\0' x; printf '%s\n' "$T"; i=$((i+1)); done"#
        let result = try run(["--mask", "--env", "T=token", "--", "/bin/sh", "-c", script])
        #expect(result.status == 0)
        let expected = String(repeating: String(repeating: "x", count: 65000) + "******\n", count: 64)
        #expect(result.stdoutText == expected)
    }
}

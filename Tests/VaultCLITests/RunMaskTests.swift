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

    /// A value written one byte every 150 ms, or its first 1 to 3 bytes, a pause, then the rest (issue 33 §4): every
    /// byte that could still begin it is held as long as it could, whatever the pause, and the value is masked.
    @Test func aValueWrittenSlowlyNeverShowsWhateverThePause() throws {
        let script = #"""
            v=$T; i=1
            while [ $i -le ${#v} ]; do printf '%s' "$(printf '%s' "$v" | cut -c$i)"; sleep 0.15; i=$((i+1)); done
            printf '|'
            for n in 1 2 3; do printf '%s' "$(printf '%s' "$v" | cut -c1-$n)"; sleep 0.3; printf '%s|' "$(printf '%s' "$v" | cut -c$((n+1))-)"; done
            printf 'g'; sleep 0.3; printf 'x\n'
            """#
        let result = try run(["--mask", "--env", "T=token", "--", "/bin/sh", "-c", script])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == Data("******|******|******|******|gx\n".utf8), "\(result.stdoutText)")
    }

    /// Output that can never begin a value is not held: the command sees its own line on vault's stdout (a file)
    /// while it is still running.
    @Test func outputThatCannotBeginAValueIsNotDelayed() throws {
        let out = box.directory + "/out"
        let script = #"""
            printf 'plain line\n'
            i=0; while [ $i -lt 50 ] && ! grep -q 'plain line' "$OUT"; do sleep 0.1; i=$((i+1)); done
            [ $i -lt 50 ] && echo seen || echo late
            """#
        let result = try CLI.exec(
            "/bin/sh", ["-c", #"exec "$0" "$@" > "$OUT""#, CLI.vault, "run", "--passphrase-file", box.passphraseFile, "--mask", "--env", "T=token", "--", "/bin/sh", "-c", script],
            environment: box.environment.merging(["OUT": out]) { $1 })
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "plain line\nseen\n")
    }
}

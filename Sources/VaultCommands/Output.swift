import ArgumentParser
import FoundationEssentials
import Glibc
import VaultCore
import VaultTerminal

/// Writes `error` to stderr as the CLI presents errors: `PROGRAM: message` and `hint: …` lines, their control
/// characters, newlines and bidirectional controls escaped (``TerminalText``), or with `json` one object
/// `{"error":{"code","exit_code","message","hint"}}` (exact text, JSON-escaped). Returns the exit code.
@discardableResult
package func report(_ error: Error, json: Bool, program: String = "vault") -> Int32 {
    let reportable = error as? any CLIReportable
    let exitCode = reportable?.exitCode ?? Exit.failure
    let message = reportable?.message ?? String(describing: error)
    let hint = reportable?.hint
    if json {
        var object: [String: Any] = [
            "code": reportable?.code ?? "error", "exit_code": Int(exitCode), "message": message,
        ]
        if let hint { object["hint"] = hint }
        for (key, value) in reportable?.details ?? [:] where object[key] == nil { object[key] = value }
        writeToStderr(JSONText.encode(["error": object]) + "\n")
    } else {
        // One line each, whatever a server's text or a name put in them (``TerminalText``).
        var text = "\(program): \(TerminalText.escaped(message, keepingBackslashes: true))\n"
        if let hint { text += "hint: \(TerminalText.escaped(hint, keepingBackslashes: true))\n" }
        writeToStderr(Data(text.utf8))
    }
    return exitCode
}

/// Writes `data` to stderr, ignoring failure: a closed (`EBADF`), broken (`EPIPE`) or full (`ENOSPC`) stderr
/// must not change the exit code (`FileHandle.write` traps on those).
package func writeToStderr(_ data: Data) {
    _ = data.withUnsafeBytes { Posix.writeAll(2, $0) }
}

package func writeToStderr(_ text: String) {
    writeToStderr(Data(text.utf8))
}

/// Runs a verb's work; any error is reported on stderr (text or JSON) and turned into its exit code.
///
/// The vault's own verbs are synchronous: `vault` then never starts Swift's concurrency threads, which cost
/// about a millisecond of every start (Benchmarks/README.md).
package func reportingErrors(json: Bool, _ body: () throws -> Void) throws {
    do {
        try body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        throw ExitCode(report(error, json: json))
    }
}

/// ``reportingErrors(json:_:)`` for verbs that await (the network verbs).
package func reportingErrors(json: Bool, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        throw ExitCode(report(error, json: json))
    }
}

/// Writes bytes to stdout exactly, from wherever they are (guarded memory included).
package func writeToStdout(_ bytes: UnsafeRawBufferPointer) throws {
    let code = Posix.writeAll(1, bytes)
    guard code == 0 else { throw VaultError.io(operation: "cannot write", path: "stdout", errno: code) }
}

package func writeToStdout(_ text: String) throws {
    try Array(text.utf8).withUnsafeBytes { try writeToStdout($0) }
}

/// One JSON value on stdout with sorted keys and a newline.
package func writeJSON(_ object: Any) throws {
    try writeToStdout(JSONText.encode(object) + "\n")
}

import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The CLI at the edges of the system (issue 11): a closed or full stderr, a hostile umask, huge files at the
/// vault path, passphrase files and pipes of other users, names that are not UTF-8, values at the limit.
@Suite(.serialized, .timeLimit(.minutes(5))) struct EdgeCLITests {
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode : nil
    }

    /// `bash -c script` with `$VAULT` set (for `<(...)` and `$'...'`).
    static func bash(_ script: String, stdin: Data = Data(), environment: [String: String]) throws -> CLIResult {
        try CLI.exec("/bin/bash", ["-c", script], stdin: stdin, environment: environment.merging(["VAULT": CLI.vault]) { $1 })
    }

    // MARK: - Item 4: stderr closed or full

    @Test("an error with stderr closed or on /dev/full still exits with its documented code (2), no SIGILL",
        arguments: ["2>&-", "2>/dev/full"])
    func stderrClosedOrFull(_ redirect: String) throws {
        let box = try Sandbox()
        try box.initVault()
        for json in ["", " --json"] {
            let result = try CLI.shell(
                "exec \"$VAULT\" get missing-name\(json) --passphrase-file '\(box.passphraseFile)' \(redirect)",
                environment: box.environment)
            #expect(result.status == 2, "\(redirect)\(json): exit \(result.status)")
            #expect(result.stdout.isEmpty)
        }
    }
}

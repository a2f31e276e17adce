import CVaultSystem
import FoundationEssentials
import Glibc
import VaultCore

/// git run in one directory with no terminal: its status, standard output (bytes) and standard error.
package struct Git {
    package let directory: String

    package init(directory: String) { self.directory = directory }

    package struct Result {
        package let status: Int32
        package let output: Data
        /// git's standard error, its lines but the hints joined by "; ", as git wrote them (not escaped).
        package let errorText: String
        package var text: String { String(decoding: output, as: UTF8.self) }
    }

    package func run(_ arguments: [String]) throws -> Result {
        var environment = ProcessInfo.processInfo.environment
        // Never a prompt on the terminal from inside `vault sync`: git fails instead, and says why.
        environment["GIT_TERMINAL_PROMPT"] = "0"
        // git runs the repository's hooks (project code): no secret of ours goes with it.
        environment["VAULT_PASSPHRASE"] = nil
        // The vault's path is a path, not a pattern (glob characters, a leading ':').
        environment["GIT_LITERAL_PATHSPECS"] = "1"
        // git's messages as git writes them in English: the push rejection is recognised by its words.
        environment["LC_ALL"] = "C"
        // No line-ending conversion from this user's configuration either (the vault's attributes say none).
        let configuration = ["-c", "core.autocrlf=false", "-c", "core.eol=lf"]
        let (status, out, err) = try Self.capture(["git"] + configuration + ["-C", directory] + arguments, environment: environment)
        let message = String(decoding: err, as: UTF8.self).split(separator: "\n").map { $0.trimming(.whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("hint:") }.joined(separator: "; ")
        return Result(status: status, output: Data(out), errorText: message)
    }

    /// Runs `arguments` (looked up on PATH) with stdin on /dev/null and waits for it: its exit status (128 + signal
    /// when killed), standard output and standard error, both read as they come (a large output on one pipe never
    /// blocks the other).
    private static func capture(_ arguments: [String], environment: [String: String]) throws -> (Int32, [UInt8], [UInt8]) {
        var output: [Int32] = [-1, -1], errors: [Int32] = [-1, -1]
        guard pipe(&output) == 0, pipe(&errors) == 0 else {
            let code = errno
            for fd in output + errors where fd >= 0 { close(fd) }
            throw SyncError.git(.cannotRun(reason: String(cString: strerror(code))))
        }
        for fd in output + errors { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        let pid = vault_spawn_tool(arguments[0], argv, envp, -1, output[1], errors[1], 0)
        let spawnError = errno
        (argv + envp).forEach { free($0) }
        close(output[1])
        close(errors[1])
        var readEnds = [output[0], errors[0]]
        // Closed before the wait too: a child still writing to a full pipe then ends with EPIPE, never blocks it.
        func closeReadEnds() { for index in readEnds.indices where readEnds[index] >= 0 { close(readEnds[index]); readEnds[index] = -1 } }
        defer { closeReadEnds() }
        guard pid > 0 else {
            throw SyncError.git(.cannotRun(reason: String(cString: strerror(spawnError))))
        }
        var collected: [[UInt8]] = [[], []]
        var open = [output[0], errors[0]]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while open.contains(where: { $0 >= 0 }) {
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            guard Posix.retryingEINTR({ poll(&fds, nfds_t(fds.count), -1) }) >= 0 else { break }
            for index in fds.indices where fds[index].fd >= 0 && fds[index].revents != 0 {
                switch Posix.valueOrErrno({ read(fds[index].fd, &buffer, buffer.count) }) {
                case .success(let count) where count > 0: collected[index] += buffer[0..<count]
                default: open[index] = -1  // the end, or a failure: nothing more from this pipe
                }
            }
        }
        closeReadEnds()
        var status: Int32 = 0
        guard Posix.retryingEINTR({ waitpid(pid, &status, 0) }) == pid else {
            throw SyncError.git(.cannotWait(reason: String(cString: strerror(errno))))
        }
        let exit = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return (exit, collected[0], collected[1])
    }

    /// git's standard output; a failure is ``GitFailure/failed(command:detail:)`` with git's own message.
    package func output(_ arguments: [String]) throws -> String {
        let result = try run(arguments)
        guard result.status == 0 else {
            throw SyncError.git(.failed(command: arguments.prefix(2).joined(separator: " "), detail: result.errorText))
        }
        return result.text
    }

    package func check(_ arguments: [String]) throws { _ = try output(arguments) }

    /// The bytes of blob `sha` (at most a vault's largest size: a larger blob is refused by its size, unread).
    package func blob(_ sha: String) throws -> [UInt8] {
        let largestFile = VaultFileShape.largestFile
        let size = try output(["cat-file", "-s", sha]).trimming(.whitespacesAndNewlines)
        if let size = Int(size), size > largestFile { throw VaultError.vaultTooLarge(path: sha, byteCount: size) }
        let result = try run(["cat-file", "blob", sha])
        guard result.status == 0 else { throw SyncError.git(.failed(command: "cat-file", detail: result.errorText)) }
        guard result.output.count <= largestFile else { throw VaultError.vaultTooLarge(path: sha, byteCount: result.output.count) }
        return [UInt8](result.output)
    }
}

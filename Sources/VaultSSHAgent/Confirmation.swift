import VaultCore
import VaultSSH
#if canImport(Glibc)
import Glibc
#endif

/// A key's `confirm`: each signature asks through `SSH_ASKPASS`, as `ssh-add -c` makes OpenSSH's agent do
/// (`SSH_ASKPASS_PROMPT=confirm`, the question as its argument, found on PATH). Yes is what OpenSSH takes for yes:
/// exit status 0 and an answer on stdout that is empty or `yes` (a plain passphrase box that ignores the prompt
/// kind prints what was typed, and "no" must not be a yes). Refused when no askpass program is set, when it
/// cannot run, says anything else, or does not answer within a minute.
enum Confirmation {
    static let timeoutSeconds = 60.0

    /// Whether the program `askpass` (the agent's `SSH_ASKPASS`; `nil`: none) says yes to a signature with `key`.
    static func ask(_ askpass: String?, key: SSHEntry, host: String?, forwarded: Bool) -> Bool {
        guard let askpass, !askpass.isEmpty else { return false }
        let question = "Allow use of the key \(key.name.debugDescription) (\(key.publicKey.fingerprint))"
            + (host.map { " for \($0.debugDescription)" } ?? "") + (forwarded ? " through a forwarded connection" : "") + "?"
        var environment: [String] = ["SSH_ASKPASS_PROMPT=confirm"]
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if !text.hasPrefix("SSH_ASKPASS_PROMPT=") { environment.append(text) }
            cursor += 1
        }
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(askpass), strdup(question), nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var answer: [Int32] = [-1, -1]
        guard pipe(&answer) == 0 else { return false }
        for fd in answer { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(answer[0]) }
        posix_spawn_file_actions_adddup2(&actions, answer[1], 1)
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, askpass, &actions, nil, argv, envp)
        close(answer[1])
        guard spawned == 0 else { return false }
        let deadline = Posix.monotonicSeconds() + timeoutSeconds
        var status: Int32 = 0
        var said: [UInt8] = []
        _ = fcntl(answer[0], F_SETFL, O_NONBLOCK)
        while true {
            var chunk = [UInt8](repeating: 0, count: 256)
            let n = read(answer[0], &chunk, chunk.count)
            if n > 0, said.count < 1024 { said += chunk[0..<n] }
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid { break }
            if done < 0 && errno != EINTR { return false }
            if Posix.monotonicSeconds() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                return false
            }
            usleep(20_000)
        }
        while true {  // what it wrote before it exited
            var chunk = [UInt8](repeating: 0, count: 256)
            let n = read(answer[0], &chunk, chunk.count)
            guard n > 0, said.count < 1024 else { break }
            said += chunk[0..<n]
        }
        // WIFEXITED and WEXITSTATUS, which Swift does not import.
        guard status & 0x7F == 0 && (status >> 8) & 0xFF == 0 else { return false }
        return isYes(said)
    }

    /// OpenSSH's test of askpass's answer (ssh-agent.c, `confirm_key`): empty or `yes` (any case), the trailing
    /// newline aside.
    static func isYes(_ output: [UInt8]) -> Bool {
        var text = String(decoding: output, as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        return text.isEmpty || text.lowercased() == "yes"
    }
}

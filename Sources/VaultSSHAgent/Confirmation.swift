import VaultCore
import VaultSSH
#if canImport(Glibc)
import Glibc
#endif

/// A key's `confirm`: each signature asks through `SSH_ASKPASS`, as `ssh-add -c` makes OpenSSH's agent do
/// (`SSH_ASKPASS_PROMPT=confirm`, the question as its argument, exit status 0 for yes). Refused when no
/// askpass program is set, when it cannot run, says no, or does not answer within a minute.
enum Confirmation {
    static let timeoutSeconds = 60.0

    static func ask(key: SSHEntry, host: String?) -> Bool {
        guard let askpass = Posix.environment("SSH_ASKPASS"), !askpass.isEmpty else { return false }
        let question = "Allow use of the key '\(key.name)' (\(key.publicKey.fingerprint))" + (host.map { " for \($0)" } ?? "") + "?"
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
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        guard posix_spawn(&pid, askpass, &actions, nil, argv, envp) == 0 else { return false }
        let deadline = Posix.monotonicSeconds() + timeoutSeconds
        var status: Int32 = 0
        while true {
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
        // WIFEXITED and WEXITSTATUS, which Swift does not import.
        return status & 0x7F == 0 && (status >> 8) & 0xFF == 0
    }
}

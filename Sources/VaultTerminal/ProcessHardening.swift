import CVaultSystem

/// Hardening for a process that holds secrets: call it first thing in `main`.
public enum ProcessHardening {
    /// Turns off core dumps (`RLIMIT_CORE` 0) and ptrace attachment by the same user (`PR_SET_DUMPABLE` 0),
    /// and unblocks every signal in the calling thread (a parent may hand down a blocked mask; Ctrl-C and
    /// SIGTERM must still reach us, and the terminal is restored on them).
    ///
    /// Returns `false` if the kernel refused any of it (the process then runs unhardened).
    ///
    /// The corresponding C functions are `setrlimit`, `prctl` and `sigprocmask`.
    @discardableResult
    public static func apply() -> Bool {
        let hardened = vault_harden_process() == 0
        let unblocked = vault_unblock_signals() == 0
        return hardened && unblocked
    }

    /// Whether the process is dumpable (`prctl(PR_GET_DUMPABLE)`): `false` after ``apply()``.
    public static var isDumpable: Bool { vault_get_dumpable() != 0 }
}

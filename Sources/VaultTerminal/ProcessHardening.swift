import CVaultSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Hardening for a process that holds secrets: call it first thing in `main`.
public enum ProcessHardening {
    /// Turns off core dumps (`RLIMIT_CORE` 0) and ptrace attachment by the same user (`PR_SET_DUMPABLE` 0),
    /// turns off the Swift runtime's crash reports, and unblocks every signal in the calling thread (a parent
    /// may hand down a blocked mask; Ctrl-C and SIGTERM must still reach us, and the terminal is restored on them).
    ///
    /// Crash reports: the runtime's backtracer, installed before `main` on SIGQUIT, SIGABRT, SIGBUS, SIGFPE,
    /// SIGILL, SIGSEGV and SIGTRAP, prints the registers and the memory around them (a value being written, a
    /// passphrase), offers an interactive session on a terminal, and after a SIGSEGV sent by `kill` lets the
    /// program go on. Those signals get back their default action: the process ends by the signal (status
    /// 128 + N in a shell), prints nothing, and leaves no core. It runs first thing in `main`, before any secret
    /// exists; `SWIFT_BACKTRACE` cannot be set from inside (the runtime reads it before `main`) and a re-exec
    /// would cost every start a second process start.
    ///
    /// Returns `false` if the kernel refused any of it (the process then runs unhardened).
    ///
    /// The corresponding C functions are `sigaction`, `setrlimit`, `prctl` and `sigprocmask`.
    ///
    /// First, a closed stdin, stdout or stderr is opened on `/dev/null` (``openClosedStandardDescriptors()``).
    @discardableResult
    public static func apply() -> Bool {
        openClosedStandardDescriptors()
        let quiet = vault_default_crash_signals() == 0
        let hardened = vault_harden_process() == 0
        let unblocked = vault_unblock_signals() == 0
        return quiet && hardened && unblocked
    }

    /// Opens `/dev/null` on each of descriptors 0, 1 and 2 that is closed (started with `2>&-`, say), so that
    /// no file the process opens later (the vault, its lock) becomes its stdout or stderr and receives a value
    /// or an error message. Output to such a descriptor is lost; the exit code still tells.
    public static func openClosedStandardDescriptors() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            let null = open("/dev/null", O_RDWR)
            if null >= 0 && null != fd {
                dup2(null, fd)
                close(null)
            }
        }
    }

    /// Whether the process is dumpable (`prctl(PR_GET_DUMPABLE)`): `false` after ``apply()``.
    public static var isDumpable: Bool { vault_get_dumpable() != 0 }
}

#ifndef VAULT_CVAULTSYSTEM_H
#define VAULT_CVAULTSYSTEM_H

/// Small wrappers for what Swift's Glibc module does not expose.

/// Turns off core dumps (RLIMIT_CORE = 0) and makes the process non-dumpable
/// (PR_SET_DUMPABLE = 0), which also refuses ptrace attachment by the same user.
/// Returns 0 on success, -1 with errno set.
int vault_harden_process(void);

/// Returns the current value of prctl(PR_GET_DUMPABLE), or -1 with errno set.
int vault_get_dumpable(void);

/// Unblocks every signal in the calling thread: a parent may hand us a blocked mask (posix_spawn from a
/// thread that blocks signals), and then Ctrl-C or SIGTERM would not reach us. Returns 0 or -1.
int vault_unblock_signals(void);

#endif

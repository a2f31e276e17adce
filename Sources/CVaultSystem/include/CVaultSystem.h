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

/// The user id of the peer of a connected Unix-domain socket (SO_PEERCRED). Returns 0 or -1 with errno set.
int vault_peer_uid(int fd, unsigned int *uid);

/// Starts `path` with `argv` and the current environment in a new session (setsid), with stdin, stdout and
/// stderr on /dev/null and no other descriptor of ours, and does not wait for it (a daemon: it outlives us). Returns its pid or -1 with errno.
int vault_spawn_detached(const char *path, char *const argv[]);

/* An in-memory file (memfd_create, no disk) holding `count` bytes, sealed against any change, its offset at 0,
   inherited by children (no close-on-exec): `vault run --file`. -1 with errno on failure. */
int vault_secret_memfd(const char *name, const void *bytes, unsigned long count);

#endif

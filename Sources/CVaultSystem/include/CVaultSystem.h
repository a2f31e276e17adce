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
/* The pid and uid of the process at the other end of Unix socket `fd` (SO_PEERCRED); 0, or -1 with errno. */
int vault_peer_credentials(int fd, int *pid, unsigned int *uid);


/// Sets SIGQUIT, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV, SIGTRAP and SIGSYS to their default action (the
/// kernel ends the process; no core with vault_harden_process), replacing the Swift runtime's backtracer, which
/// prints registers and the memory near them. Returns 0 or -1.
int vault_default_crash_signals(void);

/// Starts a no-echo prompt on terminal `fd`: saves its settings, installs handlers for SIGINT, SIGTERM, SIGHUP,
/// SIGQUIT, SIGTSTP and SIGCONT (those not ignored), and turns echo off (canonical mode on, pending input
/// flushed). A handled signal puts back the echo and canonical-mode bits and ends the process: by the same
/// signal, or by SIGINT for SIGTSTP and SIGCONT (a SIGCONT before echo is off, as after `vault get &` stopped
/// by SIGTTOU and then `fg`, is let through). One prompt at a
/// time per process. Returns 0, or -1 with errno (nothing changed then).
int vault_prompt_begin(int fd);

/// Ends the prompt begun by vault_prompt_begin: puts back the bits it changed (input not yet read is flushed)
/// and the previous signal dispositions.
void vault_prompt_end(void);

/* An in-memory file (memfd_create, no disk) holding `count` bytes, sealed against any change, its offset at 0,
   inherited by children (no close-on-exec): `vault run --file`. -1 with errno on failure. */
int vault_secret_memfd(const char *name, const void *bytes, unsigned long count);

/* Starts `file` (looked up on PATH) with `argv` and `envp` (the current environment when NULL): stdin from
   `input_fd`, stdout to `output_fd` and stderr to `error_fd` (/dev/null for -1), no other descriptor of ours,
   default signal handling; with `detach`, in a new session (a daemon: it outlives us). Does not wait. For the
   agent, the clipboard tools of `vault clip` (which outlive their caller: nothing of the caller's, a passphrase
   descriptor or a pipe a parent reads to its end, may stay open in them) and git. Returns the pid or -1 with
   errno. */
int vault_spawn_tool(const char *file, char *const argv[], char *const envp[], int input_fd, int output_fd, int error_fd,
                     int detach);

/* Raises the soft RLIMIT_NOFILE to the hard limit (the agent: one descriptor per client). Returns the soft
   limit now in force, or -1 with errno. */
long vault_raise_open_files_limit(void);

/* The directory vault looks for vault-net in before its own (as git keeps its helpers in git-core), set at build time
   (VAULT_LIBEXECDIR=lib/vault swift build ...: Package.swift; relative to the installation prefix, or absolute);
   "" when not set: vault-net is next to vault. */
const char *vault_libexec_directory(void);

/// The type of the file system `path` is on (statfs(2)'s f_type: 0x01021994 tmpfs, 0x858458f6 ramfs), or -1 with
/// errno. The corresponding C function is `statfs`.
long vault_filesystem_type(const char *path);

#endif

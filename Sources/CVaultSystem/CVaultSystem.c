#define _GNU_SOURCE
#include "CVaultSystem.h"
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/socket.h>
#include <spawn.h>
#include <fcntl.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

extern char **environ;

int vault_harden_process(void) {
    struct rlimit limit = { 0, 0 };
    if (setrlimit(RLIMIT_CORE, &limit) != 0) {
        return -1;
    }
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        return -1;
    }
    return 0;
}

int vault_get_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}

int vault_unblock_signals(void) {
    sigset_t none;
    sigemptyset(&none);
    return sigprocmask(SIG_SETMASK, &none, NULL);
}

int vault_peer_uid(int fd, unsigned int *uid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
        return -1;
    }
    *uid = credentials.uid;
    return 0;
}

int vault_peer_credentials(int fd, int *pid, unsigned int *uid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
        return -1;
    }
    *pid = credentials.pid;
    *uid = credentials.uid;
    return 0;
}

/* ---- Crash reports ---------------------------------------------------------------------------------------- */

int vault_default_crash_signals(void) {
    /* The signals the Swift runtime's backtracer installs itself on (stdlib/public/runtime/CrashHandlerLinux.cpp):
       back to the kernel's default action, so a crash or a SIGQUIT ends the process without a report that
       prints registers and the memory around them. RLIMIT_CORE 0 and PR_SET_DUMPABLE 0 leave no core. */
    static const int signals[] = { SIGQUIT, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV, SIGTRAP, SIGSYS };
    int result = 0;
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_handler = SIG_DFL;
        sigemptyset(&action.sa_mask);
        if (sigaction(signals[i], &action, NULL) != 0) result = -1;
    }
    return result;
}

/* ---- The no-echo prompt guard ------------------------------------------------------------------------------ */

/* One prompt at a time per process (the Swift caller holds a mutex around begin...end); the handler reads only
   these, written before the handlers are installed. */
static const int prompt_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT };
#define PROMPT_SIGNAL_COUNT (sizeof(prompt_signals) / sizeof(prompt_signals[0]))
static const tcflag_t prompt_mask = ECHO | ECHOE | ECHOK | ECHONL | ICANON;
static volatile sig_atomic_t prompt_fd = -1;
static volatile sig_atomic_t prompt_changed = 0;
/* Set once echo is known to be off (tcsetattr returned): a continue after that means a stop during the prompt. */
static volatile sig_atomic_t prompt_quiet = 0;
static struct termios prompt_saved;
static struct sigaction prompt_previous[PROMPT_SIGNAL_COUNT];
static int prompt_installed[PROMPT_SIGNAL_COUNT];

/* Puts back the local-mode bits the prompt changed (echo, canonical mode), and only those: whatever else another
   program set meanwhile stays. Async-signal-safe (tcgetattr, tcsetattr). */
static void prompt_restore(int action) {
    int fd = prompt_fd;
    if (fd < 0 || !prompt_changed) return;
    struct termios now;
    if (tcgetattr(fd, &now) != 0) now = prompt_saved;
    now.c_lflag = (now.c_lflag & ~prompt_mask) | (prompt_saved.c_lflag & prompt_mask);
    while (tcsetattr(fd, action, &now) != 0 && errno == EINTR) {}
}

/* Whether our process group is the terminal's foreground group. Once it is not (the shell took the terminal back:
   under git, git died of the same Ctrl-C first; or we were stopped and the shell runs readline), the terminal's
   modes are the shell's, saved and set by it: writing ours back would leave the shell without echo, or with
   readline's raw modes as its "cooked" ones (Enter prints ^M). Async-signal-safe (tcgetpgrp, getpgrp). */
static int prompt_in_foreground(int fd) {
    pid_t foreground = tcgetpgrp(fd);
    return foreground < 0 || foreground == getpgrp();
}

static void prompt_handler(int signal_number) {
    /* A continue before echo was off (`vault get &`: stopped by SIGTTOU inside tcsetattr, then `fg`): carry on. */
    if (signal_number == SIGCONT && !prompt_quiet) return;
    int fd = prompt_fd;
    if (prompt_changed && fd >= 0 && prompt_in_foreground(fd)) {
        /* What was typed and not read yet is dropped first: echo must not show it once it is back on. */
        tcflush(fd, TCIFLUSH);
        /* The prompt's line ends before whatever the shell prints next ("Quit", its prompt). */
        if (signal_number == SIGINT || signal_number == SIGQUIT || signal_number == SIGTSTP) {
            ssize_t ignored = write(fd, "\n", 1);
            (void)ignored;
        }
        prompt_restore(TCSANOW);
    }
    /* End as the signal asks, never go on reading with echo back on. A stop (Ctrl-Z) or a continue after a
       stop ends the prompt as Ctrl-C does: by SIGINT. */
    int end = (signal_number == SIGTSTP || signal_number == SIGCONT) ? SIGINT : signal_number;
    struct sigaction fallback;
    memset(&fallback, 0, sizeof(fallback));
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(end, &fallback, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, end);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(end);
    _exit(128 + end);
}

int vault_prompt_begin(int fd) {
    struct termios saved;
    if (tcgetattr(fd, &saved) != 0) return -1;
    prompt_saved = saved;
    prompt_changed = 0;
    prompt_fd = fd;
    for (size_t i = 0; i < PROMPT_SIGNAL_COUNT; i++) {
        int signal_number = prompt_signals[i];
        prompt_installed[i] = 0;
        if (sigaction(signal_number, NULL, &prompt_previous[i]) != 0) continue;
        /* A signal the parent set to be ignored (nohup's SIGHUP) stays ignored: it cannot interrupt the prompt. */
        if (signal_number != SIGCONT && prompt_previous[i].sa_handler == SIG_IGN
            && !(prompt_previous[i].sa_flags & SA_SIGINFO)) continue;
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_handler = prompt_handler;
        sigemptyset(&action.sa_mask);
        /* Restoring the terminal from the handler must not stop us (tcsetattr in a background process). */
        sigaddset(&action.sa_mask, SIGTTOU);
        for (size_t j = 0; j < PROMPT_SIGNAL_COUNT; j++) sigaddset(&action.sa_mask, prompt_signals[j]);
        action.sa_flags = SA_RESTART;
        if (sigaction(signal_number, &action, NULL) == 0) prompt_installed[i] = 1;
    }
    struct termios quiet = saved;
    quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHONL);
    quiet.c_lflag |= ICANON;
    /* Marked changed before the change: a signal in between restores what is already the saved state. */
    prompt_changed = 1;
    int result;
    while ((result = tcsetattr(fd, TCSAFLUSH, &quiet)) != 0 && errno == EINTR) {}
    if (result != 0) {
        int code = errno;
        vault_prompt_end();
        errno = code;
        return -1;
    }
    prompt_quiet = 1;
    return 0;
}

void vault_prompt_end(void) {
    int code = errno;
    prompt_restore(TCSAFLUSH);
    for (size_t i = 0; i < PROMPT_SIGNAL_COUNT; i++) {
        if (prompt_installed[i]) sigaction(prompt_signals[i], &prompt_previous[i], NULL);
        prompt_installed[i] = 0;
    }
    prompt_quiet = 0;
    prompt_changed = 0;
    prompt_fd = -1;
    errno = code;
}

#include <sys/mman.h>
#include <unistd.h>

int vault_secret_memfd(const char *name, const void *bytes, unsigned long count) {
    int fd = memfd_create(name, MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    const char *cursor = bytes;
    unsigned long left = count;
    while (left > 0) {
        ssize_t written = write(fd, cursor, left);
        if (written < 0) {
            if (errno == EINTR) continue;
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        cursor += written;
        left -= (unsigned long)written;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0 ||
        lseek(fd, 0, SEEK_SET) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* ---- A tool on a pipe ------------------------------------------------------------------------------------- */

int vault_spawn_tool(const char *file, char *const argv[], char *const envp[], int input_fd, int output_fd, int error_fd,
                     int detach) {
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_t actions;
    if (posix_spawnattr_init(&attributes) != 0) return -1;
    if (posix_spawn_file_actions_init(&actions) != 0) {
        posix_spawnattr_destroy(&attributes);
        return -1;
    }
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, (detach ? POSIX_SPAWN_SETSID : 0) | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (input_fd >= 0) posix_spawn_file_actions_adddup2(&actions, input_fd, 0);
    else posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (output_fd >= 0) posix_spawn_file_actions_adddup2(&actions, output_fd, 1);
    else posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    if (error_fd >= 0) posix_spawn_file_actions_adddup2(&actions, error_fd, 2);
    else posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    pid_t pid = -1;
    int result = posix_spawnp(&pid, file, &actions, &attributes, argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (result != 0) {
        errno = result;
        return -1;
    }
    return pid;
}

/* ---- The agent's descriptor limit --------------------------------------------------------------------------- */

long vault_raise_open_files_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    }
    return limit.rlim_cur == RLIM_INFINITY ? 1L << 20 : (long)limit.rlim_cur;
}

/* ---- Where vault-net is installed --------------------------------------------------------------------------- */

#ifndef VAULT_LIBEXECDIR
#define VAULT_LIBEXECDIR ""
#endif

const char *vault_libexec_directory(void) {
    return VAULT_LIBEXECDIR;
}

#include <sys/vfs.h>

long vault_filesystem_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long)info.f_type;
}

#define _GNU_SOURCE
#include "CVaultSystem.h"
#include <sys/prctl.h>
#include <sys/resource.h>
#include <signal.h>

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

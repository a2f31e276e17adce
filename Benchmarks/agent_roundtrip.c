/* The agent's own share of a `vault get`: connect, send the frame `vault get NAME` sends, read the answer, close;
 * RUNS times, no process start (Benchmarks/README.md, "The last figure").
 *
 *     cc -O2 Benchmarks/agent_roundtrip.c -o /tmp/agent_roundtrip
 *     VAULT_AGENT_SOCK=… VAULT_PATH=/absolute/canonical/path.vault /tmp/agent_roundtrip RUNS NAME
 *
 * The frame is wire version 5's get (docs/AGENT.md): a 4-byte big-endian length, then the version (5), the request
 * kind (6: a request on a vault), the path field (tag 1, a 4-byte length, the bytes) and the name field (tag 2).
 * The first answer is checked: version 5 and status 0 (ok; 1 is an error, 2 a locked vault), else it exits 1.
 * Prints the mean connect time, the mean and the median, 10th and 90th percentiles of the whole round trip, in µs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double microseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1e6 + now.tv_nsec / 1e3;
}

static size_t field(uint8_t *at, uint8_t tag, const char *text) {
    size_t n = strlen(text);
    at[0] = tag, at[1] = n >> 24, at[2] = n >> 16, at[3] = n >> 8, at[4] = n;
    memcpy(at + 5, text, n);
    return 5 + n;
}

static int ascending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const char *socket_path = getenv("VAULT_AGENT_SOCK"), *vault = getenv("VAULT_PATH");
    if (argc != 3 || !socket_path || !vault || strlen(socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)
        || strlen(vault) > 4000 || strlen(argv[2]) > 4000) {
        fprintf(stderr, "usage: VAULT_AGENT_SOCK=… VAULT_PATH=… agent_roundtrip RUNS NAME\n");
        return 2;
    }
    int runs = atoi(argv[1]);
    if (runs < 1) return 2;
    uint8_t frame[8192];
    size_t n = 4;
    frame[n++] = 5, frame[n++] = 6;
    n += field(frame + n, 1, vault);
    n += field(frame + n, 2, argv[2]);
    uint32_t payload = n - 4;
    frame[0] = payload >> 24, frame[1] = payload >> 16, frame[2] = payload >> 8, frame[3] = payload;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strcpy(address.sun_path, socket_path);
    double *totals = malloc(runs * sizeof *totals), connecting = 0, sum = 0;
    for (int i = 0; i < runs; i++) {
        double start = microseconds();
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) { perror("connect"); return 1; }
        double connected = microseconds();
        uint8_t answer[65536];
        ssize_t got = 0, length = -1;
        if (write(fd, frame, n) != (ssize_t)n) { perror("write"); return 1; }
        while (length < 0 || got < 4 + length) {
            ssize_t r = read(fd, answer + got, sizeof answer - got);
            if (r <= 0) { fprintf(stderr, "the agent closed the connection\n"); return 1; }
            got += r;
            if (length < 0 && got >= 4) length = (ssize_t)answer[0] << 24 | answer[1] << 16 | answer[2] << 8 | answer[3];
            if (length > (ssize_t)sizeof answer - 4) { fprintf(stderr, "an answer of %zd bytes\n", length); return 1; }
        }
        totals[i] = microseconds() - start;
        connecting += connected - start, sum += totals[i];
        close(fd);
        if (i == 0 && (length < 2 || answer[4] != 5 || answer[5] != 0)) {
            fprintf(stderr, "not an ok answer:");
            for (ssize_t j = 4; j < 4 + length && j < 64; j++) fprintf(stderr, " %02x", answer[j]);
            fprintf(stderr, "\n");
            return 1;
        }
    }
    qsort(totals, runs, sizeof *totals, ascending);
    printf("%d round trips: connect %.1f µs mean; whole %.1f µs mean, median %.1f, p10 %.1f, p90 %.1f\n", runs,
           connecting / runs, sum / runs, totals[runs / 2], totals[runs / 10], totals[runs * 9 / 10]);
    return 0;
}

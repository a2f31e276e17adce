#!/usr/bin/env bash
# Format version 3 against version 1 through the agent, paired: each run times the v1 command and then the v3
# command (the same entries: v3 = `vault upgrade` of the v1 fixture), so that drift of a shared machine hits both.
#
#     VAULT_BIN=.build-bench-static/release/vault SIZES="1 10000 100000" RUNS=30 Benchmarks/agent-formats.sh
#
# Prints, per size and verb (get, put, list), the medians of v1 and v3 and the median of the per-pair ratios
# (the issue's target: ≤ 1.2), then the agent's CPU time (from /proc/PID/stat) and the wall time per merge of a
# 10,000-entry copy, each of FRESH_MERGES merges with 100 new changes on each side (issue 19's target: ≤ 50 ms).
set -euo pipefail

SIZES=${SIZES:-"1 10000"}
RUNS=${RUNS:-30}
# Merges measured, each after 100 puts on each side (the other copy's without the agent: one KDF each, slow).
FRESH_MERGES=${FRESH_MERGES:-5}
source "$(dirname "$0")/agent-fixtures.sh"

python3 - "$VAULT_BIN" "$WORK" "$RUNS" $SIZES <<'EOF'
import statistics, subprocess, sys, time
vault, work, runs, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def timed(argv, stdin=None):
    with open(stdin, "rb") if stdin else open("/dev/null", "rb") as source:
        start = time.perf_counter()
        subprocess.run(argv, stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        return (time.perf_counter() - start) * 1000
print(f"{'op':<5} {'entries':>7} | {'v1 ms':>7} | {'v3 ms':>7} | {'v3/v1 (paired median)':>22}")
for n in sizes:
    for op in ("get", "put", "list"):
        def argv(store):
            path = f"{work}/{store}{n}/bench.vault"
            return {"get": [vault, "get", "--vault", path, "entry-000000"],
                    "put": [vault, "put", "--vault", path, "entry-000000"],
                    "list": [vault, "list", "--vault", path]}[op]
        stdin = f"{work}/value" if op == "put" else None
        for _ in range(3):
            timed(argv("v"), stdin), timed(argv("w"), stdin)
        ones, threes = [], []
        for _ in range(runs):
            ones.append(timed(argv("v"), stdin))
            threes.append(timed(argv("w"), stdin))
        ratio = statistics.median(b / a for a, b in zip(ones, threes))
        print(f"{op:<5} {int(n):>7} | {statistics.median(ones):7.2f} | {statistics.median(threes):7.2f} | {ratio:22.2f}")
EOF

# Merge: a 10,000-entry copy with 100 changes of its own (another replica: another state directory) merged into
# the vault the agent holds, which has 100 changes of its own; the agent's CPU per merge.
if [ -d "$WORK/w10000" ]; then
    prepare_merge
    fresh_merges
fi

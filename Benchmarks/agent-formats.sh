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
    cpu() { awk '{print $14 + $15}' "/proc/$AGENT_PID/stat"; }
    ticks=$(getconf CLK_TCK)
    # Each merge measured brings 100 changes from the other copy (another replica: another state directory), made
    # since the last merge, into the vault the agent holds, which has 100 changes of its own since then (100 puts
    # on each side between merges: not measured).
    cpu_total=0 wall_total=0
    for round in $(seq 1 "$FRESH_MERGES"); do
        for i in $(seq 0 99); do
            printf 'other-%d-%d' "$round" "$i" | XDG_STATE_HOME="$WORK/state-b" VAULT_AGENT_SOCK="$WORK/none.sock" \
                "$VAULT_BIN" put --vault "$WORK/other.vault" --passphrase-file "$WORK/passphrase" \
                "entry-$(printf %06d $(((i * 7 + round * 1000 + 1) % 10000)))" >/dev/null
            printf 'mine-%d-%d' "$round" "$i" | "$VAULT_BIN" put --vault "$WORK/w10000/bench.vault" \
                "entry-$(printf %06d $(((i * 11 + round * 1000 + 5) % 10000)))" >/dev/null
        done
        before=$(cpu)
        start=$(date +%s%N)
        "$VAULT_BIN" merge --vault "$WORK/w10000/bench.vault" "$WORK/other.vault" >/dev/null
        end=$(date +%s%N)
        after=$(cpu)
        cpu_total=$((cpu_total + after - before)) wall_total=$((wall_total + end - start))
    done
    python3 -c "print(f'merge of a 10,000-entry copy, 100 new changes on each side each time: agent CPU {$cpu_total * 1000 / $ticks / $FRESH_MERGES:.1f} ms per merge, wall {$wall_total / 1e6 / $FRESH_MERGES:.1f} ms per vault merge ({$FRESH_MERGES} merges)')"
fi

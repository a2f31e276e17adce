# Sourced by agent-formats.sh and agent-cpu.sh: for each size in SIZES, a format-1 vault ($WORK/v<n>/bench.vault)
# and the same entries as format 3 ($WORK/w<n>/bench.vault, `vault upgrade` of it), both unlocked in one agent
# (AGENT_PID), everything in a temporary $WORK removed on exit. `prepare_merge` makes $WORK/other.vault, a copy
# of the 10,000-entry vault with 100 changes of its own, after 100 changes of the vault's own, and merges it once;
# `fresh_merges` then measures FRESH_MERGES merges that each bring 100 new changes on both sides.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VAULT_BIN=${VAULT_BIN:?"VAULT_BIN: a release build of vault"}
export BENCH_PASSPHRASE="correct horse battery staple"

WORK=$(mktemp -d /tmp/vault-formats.XXXXXX)
chmod 700 "$WORK"
export VAULT_AGENT_SOCK="$WORK/agent/agent.sock" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config"
trap '"$VAULT_BIN" lock --all >/dev/null 2>&1 || true; [ -n "${AGENT_PID:-}" ] && kill "$AGENT_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
printf '%s\n' "$BENCH_PASSPHRASE" > "$WORK/passphrase"
chmod 600 "$WORK/passphrase"
printf 'pw-999999-abcdefghijklmnopqrstuv' > "$WORK/value"

for n in $SIZES; do
    mkdir -m 700 "$WORK/v$n" "$WORK/w$n"
    python3 "$ROOT/Benchmarks/fixtures.py" vault "$WORK/v$n/bench.vault" "$n"
    cp "$WORK/v$n/bench.vault" "$WORK/w$n/bench.vault"
    "$VAULT_BIN" upgrade --vault "$WORK/w$n/bench.vault" --passphrase-file "$WORK/passphrase" >/dev/null
    for store in "v$n" "w$n"; do
        "$VAULT_BIN" unlock --vault "$WORK/$store/bench.vault" --passphrase-file "$WORK/passphrase" --idle 7h >/dev/null
    done
done
AGENT_PID=$("$VAULT_BIN" agent status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')

prepare_merge() {
    cp "$WORK/w10000/bench.vault" "$WORK/other.vault"
    for i in $(seq 1 100); do
        printf 'other-%03d' "$i" | XDG_STATE_HOME="$WORK/state-b" VAULT_AGENT_SOCK="$WORK/none.sock" \
            "$VAULT_BIN" put --vault "$WORK/other.vault" --passphrase-file "$WORK/passphrase" "entry-$(printf %06d $((i * 7)))" >/dev/null
        printf 'mine-%03d' "$i" | "$VAULT_BIN" put --vault "$WORK/w10000/bench.vault" "entry-$(printf %06d $((i * 11)))" >/dev/null
    done
    "$VAULT_BIN" merge --vault "$WORK/w10000/bench.vault" "$WORK/other.vault" >/dev/null  # the first: writes
}

# FRESH_MERGES merges (after prepare_merge), each bringing 100 changes from the other copy (another replica: another
# state directory), made since the last merge, into the vault the agent holds, which has 100 changes of its own since
# then (100 puts on each side between merges: not measured). Prints the agent's CPU and the wall time per merge.
# PERF_OUT=FILE: `perf record -g` of the agent during the merges only (perf's control fifo), into FILE.
fresh_merges() {
    local ticks cpu_total=0 wall_total=0 before after start end perf_pid= walls=
    ticks=$(getconf CLK_TCK)
    if [ -n "${PERF_OUT:-}" ]; then
        mkfifo "$WORK/perf-ctl" "$WORK/perf-ack"
        perf record -F 2000 -g --call-graph dwarf,16384 -D -1 --control "fifo:$WORK/perf-ctl,$WORK/perf-ack" \
            -p "$AGENT_PID" -o "$PERF_OUT" 2>"$PERF_OUT.log" &
        perf_pid=$!
        exec 7>"$WORK/perf-ctl" 8<"$WORK/perf-ack"
    fi
    perf_control() { [ -z "$perf_pid" ] || { echo "$1" >&7; read -r -u 8 _; }; }
    for round in $(seq 1 "$FRESH_MERGES"); do
        for i in $(seq 0 99); do
            printf 'other-%d-%d' "$round" "$i" | XDG_STATE_HOME="$WORK/state-b" VAULT_AGENT_SOCK="$WORK/none.sock" \
                "$VAULT_BIN" put --vault "$WORK/other.vault" --passphrase-file "$WORK/passphrase" \
                "entry-$(printf %06d $(((i * 7 + round * 1000 + 1) % 10000)))" >/dev/null
            printf 'mine-%d-%d' "$round" "$i" | "$VAULT_BIN" put --vault "$WORK/w10000/bench.vault" \
                "entry-$(printf %06d $(((i * 11 + round * 1000 + 5) % 10000)))" >/dev/null
        done
        perf_control enable
        before=$(awk '{print $14 + $15}' "/proc/$AGENT_PID/stat")
        start=$(date +%s%N)
        "$VAULT_BIN" merge --vault "$WORK/w10000/bench.vault" "$WORK/other.vault" >/dev/null
        end=$(date +%s%N)
        after=$(awk '{print $14 + $15}' "/proc/$AGENT_PID/stat")
        perf_control disable
        cpu_total=$((cpu_total + after - before)) wall_total=$((wall_total + end - start))
        walls="$walls $((end - start))"
    done
    if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
    python3 -c "print(f'merge of a 10,000-entry copy, 100 new changes on each side each time: agent CPU {$cpu_total * 1000 / $ticks / $FRESH_MERGES:.1f} ms per merge, wall {$wall_total / 1e6 / $FRESH_MERGES:.1f} ms per vault merge ({$FRESH_MERGES} merges)')"
    # The median too: on a shared machine one merge stalled by another process moves the mean of ten by tens of ms.
    python3 -c "import statistics, sys; print(f'wall per vault merge: median {statistics.median(int(w) for w in sys.argv[1:]) / 1e6:.1f} ms, min {min(int(w) for w in sys.argv[1:]) / 1e6:.1f} ms')" $walls
}

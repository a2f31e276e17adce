#!/usr/bin/env bash
# The agent's CPU time (utime + stime from /proc/PID/stat, not wall time: a shared machine's load hardly moves it)
# per `vault put` on a format-1 and a format-3 vault of the same entries, and per `vault merge` of a 10,000-entry
# copy with 100 changes on each side (as agent-formats.sh, whose wall-clock figures this complements).
#
#     VAULT_BIN=.build-rel/release/vault SIZES="10000 100000" PUTS=40 ROUNDS=3 Benchmarks/agent-cpu.sh
#
# Each round runs PUTS puts on the v1 vault, then PUTS on the v3 vault; prints each round's ms per put and the
# medians of the rounds.
set -euo pipefail

SIZES=${SIZES:-"10000"}
PUTS=${PUTS:-40}
ROUNDS=${ROUNDS:-3}
MERGES=${MERGES:-20}
source "$(dirname "$0")/agent-fixtures.sh"
TICKS=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$AGENT_PID/stat"; }
# Agent CPU ms per command: "$@" run COUNT times.
per() {
    local count=$1 before after
    shift
    before=$(cpu)
    for _ in $(seq 1 "$count"); do "$@" >/dev/null; done
    after=$(cpu)
    python3 -c "print(f'{($after - $before) * 1000 / $TICKS / $count:.2f}')"
}
put() { "$VAULT_BIN" put --vault "$WORK/$1/bench.vault" entry-000000 < "$WORK/value"; }

for n in $SIZES; do
    put "v$n" >/dev/null; put "w$n" >/dev/null  # warm
    ones=() threes=()
    for _ in $(seq 1 "$ROUNDS"); do
        ones+=("$(per "$PUTS" put "v$n")")
        threes+=("$(per "$PUTS" put "w$n")")
    done
    python3 - "$n" "${ones[*]}" "${threes[*]}" <<'EOF'
import statistics, sys
n, ones, threes = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
print(f"put {int(n):>7}: agent CPU ms/put v1 {ones} v3 {threes}; medians v1 {statistics.median(ones):.2f} "
      f"v3 {statistics.median(threes):.2f} v3/v1 {statistics.median(threes) / statistics.median(ones):.2f}")
EOF
done

if [ -d "$WORK/w10000" ] && [ "$MERGES" -gt 0 ]; then
    prepare_merge
    merge() { "$VAULT_BIN" merge --vault "$WORK/w10000/bench.vault" "$WORK/other.vault"; }
    rounds=()
    for _ in $(seq 1 "$ROUNDS"); do rounds+=("$(per "$MERGES" merge)"); done
    python3 -c "import statistics; r = [float(x) for x in '${rounds[*]}'.split()]; print(f'merge of a 10,000-entry copy (nothing new after the first): agent CPU ms/merge {r}, median {statistics.median(r):.2f}')"
fi

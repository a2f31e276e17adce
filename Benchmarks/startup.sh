#!/usr/bin/env bash
# Start-up and size of the installed (static PIE, stripped) `vault`, side by side in one run with the floors it is
# judged against: a static Swift hello world that imports Foundation, the same with FoundationEssentials, and a
# static C program.
#
#     Benchmarks/startup.sh                    # builds what it needs, RUNS=200
#     VAULT_BIN=/path/to/vault Benchmarks/startup.sh    # an already built binary instead
#
# Prints hyperfine means for `--version` and for `get` through the agent (a test-hook vault unlocked in an agent of
# its own, in a temporary directory), `perf stat` page faults and task-clock, and the stripped sizes.
# Targets (issue 22): `vault --version` ≤ 1.5× the Swift+Foundation hello world; `vault get` through the agent ≤ 2×
# it; `vault` stripped ≤ 25 MB.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-200}
work=$(mktemp -d)
# The agent started below is this run's own (its socket is in $work): stopped by the pid that listens there.
stop_agent() {
    local pid
    pid=$(ss -xlpn 2>/dev/null | grep -F "$work/agent.sock" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
}
trap 'stop_agent; rm -rf "$work"' EXIT
say() { printf '== %s\n' "$*" >&2; }

command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }

if [ -z "${VAULT_BIN:-}" ]; then
    # As scripts/install builds it: a static PIE (scripts/static-pie.flags).
    mapfile -t static_pie < <(grep -v '^#' "$ROOT/scripts/static-pie.flags")
    say "swift build -c release --static-swift-stdlib ${static_pie[*]} --product vault"
    swift build -c release -q --static-swift-stdlib "${static_pie[@]}" --package-path "$ROOT" \
        --scratch-path "$ROOT/.build-bench-static-pie" --product vault >&2
    install -s -m 0755 "$ROOT/.build-bench-static-pie/release/vault" "$work/vault"
    VAULT_BIN="$work/vault"
fi

say "floors: static hello worlds (Swift + Foundation, Swift + FoundationEssentials, C)"
printf 'import Foundation\nprint(Date().timeIntervalSince1970 > 0 ? "hello" : "")\n' >"$work/hello-foundation.swift"
printf 'import FoundationEssentials\nprint(Date().timeIntervalSince1970 > 0 ? "hello" : "")\n' >"$work/hello-essentials.swift"
printf '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n' >"$work/hello.c"
swiftc -O -static-stdlib "$work/hello-foundation.swift" -o "$work/hello-foundation" 2>/dev/null
swiftc -O -static-stdlib "$work/hello-essentials.swift" -o "$work/hello-essentials" 2>/dev/null
cc -O2 -static "$work/hello.c" -o "$work/hello-c"
strip "$work/hello-foundation" "$work/hello-essentials" "$work/hello-c"

say "a test-hook vault unlocked in an agent of its own"
export VAULT_TESTING_INSECURE_KDF=1 VAULT_AGENT_SOCK="$work/agent.sock" VAULT_PATH="$work/bench.vault"
printf 'pw\n' >"$work/pass" && chmod 600 "$work/pass"
"$VAULT_BIN" init --force --passphrase-file "$work/pass" >/dev/null  # a weak passphrase on purpose (the timing is the point)
printf 's3cret' | "$VAULT_BIN" put github --passphrase-file "$work/pass" >/dev/null
"$VAULT_BIN" unlock --passphrase-file "$work/pass" >/dev/null 2>&1
[ "$("$VAULT_BIN" get github)" = s3cret ] || { echo "startup.sh: get through the agent failed" >&2; exit 1; }

say "hyperfine -N --warmup 20 --runs $RUNS"
hyperfine -N --warmup 20 --runs "$RUNS" --export-json "$work/h.json" \
    "$work/hello-c" "$work/hello-essentials" "$work/hello-foundation" "$VAULT_BIN --version" "$VAULT_BIN get github" >/dev/null 2>&1
python3 - "$work/h.json" <<'EOF'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
base = next(r["mean"] for r in results if r["command"].endswith("hello-foundation"))
print(f'{"command":<34} {"mean ms":>8} {"σ ms":>6} {"× Swift+Foundation hello":>26}')
for r in results:
    name = r["command"].split("/")[-1]
    print(f'{name:<34} {r["mean"]*1e3:8.2f} {r["stddev"]*1e3:6.2f} {r["mean"]/base:26.2f}')
EOF

say "perf stat -r 50 -e page-faults,task-clock"
for command in "$work/hello-foundation" "$VAULT_BIN --version" "$VAULT_BIN get github"; do
    perf stat -r 50 -e page-faults,task-clock $command 2>&1 >/dev/null \
        | awk -v c="${command##*/}" '/page-faults/ {pf=$1} /task-clock/ {tc=$1} END {printf "%-34s %6s page faults %8s ms CPU\n", c, pf, tc}'
done

say "sizes (stripped)"
for file in "$VAULT_BIN" "$work/hello-foundation" "$work/hello-essentials"; do
    printf '%-34s %6.1f MB\n' "${file##*/}" "$(echo "$(stat -c %s "$file") / 1000000" | bc -l)"
done

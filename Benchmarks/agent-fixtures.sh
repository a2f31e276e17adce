# Sourced by agent-formats.sh and agent-cpu.sh: for each size in SIZES, a format-1 vault ($WORK/v<n>/bench.vault)
# and the same entries as format 3 ($WORK/w<n>/bench.vault, `vault upgrade` of it), both unlocked in one agent
# (AGENT_PID), everything in a temporary $WORK removed on exit. `prepare_merge` makes $WORK/other.vault, a copy
# of the 10,000-entry vault with 100 changes of its own, after 100 changes of the vault's own, and merges it once.
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

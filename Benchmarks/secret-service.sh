#!/usr/bin/env bash
# `secret-tool lookup` of one item against `vault secret-service` and against gnome-keyring-daemon, on the same
# private session bus, in one run: the same item (attributes, label, secret) in each, lookups alternated in ROUNDS
# rounds of LOOKUPS each, so that the machine's load falls on both alike. Prints each round's mean milliseconds
# per lookup for each provider and the ratio vault/gnome-keyring (goal: no slower, a ratio of 1 or less).
#
#     VAULT_BIN=.build/release/vault LOOKUPS=50 ROUNDS=5 Benchmarks/secret-service.sh
#
# Needs dbus-daemon, secret-tool and gnome-keyring-daemon (scripts/install-deps --test). Each lookup is a new
# secret-tool process: its connection, its Diffie-Hellman session (libsecret's default), SearchItems, GetSecrets.
set -euo pipefail

VAULT_BIN=${VAULT_BIN:-.build/release/vault}
LOOKUPS=${LOOKUPS:-50}
ROUNDS=${ROUNDS:-5}
for tool in dbus-daemon secret-tool gnome-keyring-daemon; do
    command -v "$tool" >/dev/null || { echo "secret-service.sh: $tool is missing (scripts/install-deps --test)" >&2; exit 1; }
done
[ -x "$VAULT_BIN" ] || { echo "secret-service.sh: no $VAULT_BIN (VAULT_BIN=path/to/vault)" >&2; exit 1; }
VAULT_BIN=$(cd "$(dirname "$VAULT_BIN")" && pwd)/$(basename "$VAULT_BIN")

WORK=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; sleep 0.2; rm -rf "$WORK"; }
trap cleanup EXIT
mkdir -m 0700 "$WORK/runtime" "$WORK/vault-bus" "$WORK/gnome-bus"
export HOME="$WORK" XDG_RUNTIME_DIR="$WORK/runtime" XDG_DATA_HOME="$WORK/data" XDG_STATE_HOME="$WORK/state"
export VAULT_PATH="$WORK/bench.vault" VAULT_AGENT_SOCK="$WORK/agent/agent.sock"
printf 'benchmark passphrase\n' >"$WORK/passphrase"
chmod 600 "$WORK/passphrase"

# A bus each (the name can have one owner on a bus); each lookup asks its provider's bus.
bus() {
    dbus-daemon --session --nofork --nopidfile --address="unix:path=$WORK/$1/bus" &
    pids+=($!)
    for _ in $(seq 100); do [ -S "$WORK/$1/bus" ] && return; sleep 0.05; done
    echo "secret-service.sh: dbus-daemon did not start" >&2; exit 1
}
bus vault-bus
bus gnome-bus
VAULT_BUS="unix:path=$WORK/vault-bus/bus"
GNOME_BUS="unix:path=$WORK/gnome-bus/bus"

# vault: a vault (the cheap test KDF: the unlock is not what is measured), unlocked in the agent, and the provider.
VAULT_TESTING_INSECURE_KDF=1 "$VAULT_BIN" init --passphrase-file "$WORK/passphrase" >/dev/null 2>&1
VAULT_TESTING_INSECURE_KDF=1 "$VAULT_BIN" unlock --passphrase-file "$WORK/passphrase" >/dev/null 2>&1
DBUS_SESSION_BUS_ADDRESS=$VAULT_BUS "$VAULT_BIN" secret-service 2>"$WORK/vault.log" &
pids+=($!)
# gnome-keyring: its login keyring made and unlocked with a password on stdin, its secrets component on its bus.
printf 'benchmark' | DBUS_SESSION_BUS_ADDRESS=$GNOME_BUS gnome-keyring-daemon --unlock --components=secrets \
    >"$WORK/gnome.env" 2>"$WORK/gnome.log"
pids+=($(sed -n 's/^GNOME_KEYRING_PID=//p' "$WORK/gnome.env"))
DBUS_SESSION_BUS_ADDRESS=$GNOME_BUS gnome-keyring-daemon --start --components=secrets >/dev/null 2>&1 || true

store() { printf 'the benchmark secret' | DBUS_SESSION_BUS_ADDRESS=$1 secret-tool store --label=bench service bench.example user alice; }
for _ in $(seq 50); do store "$VAULT_BUS" 2>/dev/null && break; sleep 0.1; done
store "$GNOME_BUS"
for address in "$VAULT_BUS" "$GNOME_BUS"; do
    got=$(DBUS_SESSION_BUS_ADDRESS=$address secret-tool lookup service bench.example user alice)
    [ "$got" = "the benchmark secret" ] || { echo "secret-service.sh: a lookup on $address gave '$got'" >&2; exit 1; }
done

# Mean ms per lookup over LOOKUPS lookups on bus $1.
per() {
    python3 - "$1" "$LOOKUPS" <<'PY'
import os, subprocess, sys, time
env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=sys.argv[1])
count = int(sys.argv[2])
start = time.perf_counter()
for _ in range(count):
    subprocess.run(["secret-tool", "lookup", "service", "bench.example", "user", "alice"], env=env, check=True, stdout=subprocess.DEVNULL)
print(f"{(time.perf_counter() - start) * 1000 / count:.2f}")
PY
}
printf '%-6s %12s %12s %8s\n' round vault-ms gnome-ms ratio
ratios=()
for round in $(seq 1 "$ROUNDS"); do
    v=$(per "$VAULT_BUS")
    g=$(per "$GNOME_BUS")
    r=$(python3 -c "print(f'{$v / $g:.3f}')")
    ratios+=("$r")
    printf '%-6s %12s %12s %8s\n' "$round" "$v" "$g" "$r"
done
python3 -c "import statistics, sys; print('median ratio vault/gnome-keyring:', statistics.median(map(float, sys.argv[1:])))" "${ratios[@]}"

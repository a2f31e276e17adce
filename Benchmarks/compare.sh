#!/usr/bin/env bash
# The vault CLI side by side with keepassxc-cli and pass, in one run, on equal stores.
#
#     Benchmarks/compare.sh                 # sizes 1 and 10000
#     SIZES="1 10000 100000" RUNS=20 Benchmarks/compare.sh
#
# Installs what it needs (hyperfine, keepassxc, pass, gnupg, time, libsodium-dev via apt; pykeepass and
# PyNaCl via pip), builds `vault` in release mode, makes the stores, and prints medians and ratios to the floor:
#   - the floor is one Argon2id (2 ops, 64 MiB, 1 lane) in a fresh process: argon2_floor.c, a tiny C program
#     calling libsodium's crypto_pwhash (the code vault itself calls);
#   - vault: `vault init --kdf interactive` parameters (Argon2id 2 ops, 64 MiB, 1 lane);
#   - KDBX 4 built with pykeepass, Argon2id t=2, m=64 MiB, p=1 (keepassxc-cli 2.7.4 cannot set Argon2
#     parameters); keepassxc-cli reads the database password from stdin when stdin is not a terminal;
#   - pass: one gpg file per entry, a passphrase-less gpg key (no KDF at all: it is not a passphrase unlock).
# get = print one entry's secret; put = replace that existing entry's secret; list = all names.
# Also prints the peak RSS of `vault get` (/usr/bin/time -v).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SIZES=${SIZES:-"1 10000"}
RUNS=${RUNS:-15}
OPS=2
MEM=$((64 << 20))
export BENCH_PASSPHRASE="correct horse battery staple"

say() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }

# --- what it needs ---------------------------------------------------------------------------------
need_apt=()
command -v hyperfine >/dev/null || need_apt+=(hyperfine)
command -v keepassxc-cli >/dev/null || need_apt+=(keepassxc)
command -v pass >/dev/null || need_apt+=(pass)
command -v gpg >/dev/null || need_apt+=(gnupg)
[ -x /usr/bin/time ] || need_apt+=(time)
command -v tree >/dev/null || need_apt+=(tree)
pkg-config --exists libsodium || need_apt+=(libsodium-dev pkg-config)
pkg-config --exists libcurl || need_apt+=(libcurl4-openssl-dev)  # static Foundation links libcurl
if [ ${#need_apt[@]} -gt 0 ]; then
    say "apt-get install ${need_apt[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
python3 -c 'import pykeepass, nacl' 2>/dev/null || { say "pip install pykeepass pynacl"; pip install -q pykeepass pynacl; }

# --- builds ----------------------------------------------------------------------------------------
# VAULT_LINK=static (default): --static-swift-stdlib, the Swift runtime and Foundation linked in (the dynamic
# loader's symbol resolution over ~50 shared libraries costs ~12 ms of CPU per run); VAULT_LINK=dynamic: plain.
VAULT_LINK=${VAULT_LINK:-static}
if [ "$VAULT_LINK" = static ]; then
    say "swift build -c release --static-swift-stdlib (vault)"
    for product in vault-net vault; do
        swift build -c release -q --static-swift-stdlib --package-path "$ROOT" --scratch-path "$ROOT/.build-bench-static" --product $product >&2
    done
    VAULT_BIN="$ROOT/.build-bench-static/release/vault"
else
    say "swift build -c release (vault)"
    for product in vault-net vault; do
        swift build -c release -q --package-path "$ROOT" --scratch-path "$ROOT/.build-bench-main" --product $product >&2
    done
    VAULT_BIN="$ROOT/.build-bench-main/release/vault"
fi

WORK=$(mktemp -d /tmp/vault-compare.XXXXXX)
chmod 700 "$WORK"
trap '[ -n "${AGENT_PID:-}" ] && VAULT_AGENT_SOCK="$WORK/agent/agent.sock" "$VAULT_BIN" lock --all >/dev/null 2>&1; [ -n "${AGENT_PID:-}" ] && kill "$AGENT_PID" 2>/dev/null; gpgconf --homedir "$WORK/gnupg" --kill gpg-agent 2>/dev/null || true; rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/argon2_floor" "$ROOT/Benchmarks/argon2_floor.c" $(pkg-config --cflags --libs libsodium)
printf '%s\n' "$BENCH_PASSPHRASE" > "$WORK/passphrase"
chmod 600 "$WORK/passphrase"
printf 'pw-999999-abcdefghijklmnopqrstuv' > "$WORK/value"

# --- pass: a passphrase-less gpg key ----------------------------------------------------------------
export GNUPGHOME="$WORK/gnupg"
mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --passphrase '' --quick-gen-key "vault bench <bench@example.invalid>" default default never 2>/dev/null
KEYID=$(gpg --list-keys --with-colons | awk -F: '/^fpr/ {print $10; exit}')

# --- stores -----------------------------------------------------------------------------------------
for n in $SIZES; do
    say "stores with $n entries"
    mkdir -m 700 "$WORK/v$n"
    python3 "$ROOT/Benchmarks/fixtures.py" vault "$WORK/v$n/bench.vault" "$n"
    python3 "$ROOT/Benchmarks/fixtures.py" kdbx "$WORK/k$n.kdbx" "$n"
    python3 "$ROOT/Benchmarks/fixtures.py" pass "$WORK/p$n" "$n"
    (cd "$WORK/p$n" && gpg --batch --quiet --yes --trust-model always -r "$KEYID" --encrypt-files entry-* && rm -f entry-*[0-9])
    echo "$KEYID" > "$WORK/p$n/.gpg-id"
    # Check every store answers the same.
    want="pw-000000-abcdefghijklmnopqrstuv"
    got_v=$("$VAULT_BIN" get --vault "$WORK/v$n/bench.vault" --passphrase-file "$WORK/passphrase" entry-000000)
    got_k=$(keepassxc-cli show -q -s -a password "$WORK/k$n.kdbx" entry-000000 < "$WORK/passphrase")
    got_p=$(PASSWORD_STORE_DIR="$WORK/p$n" pass show entry-000000)
    [ "$got_v" = "$want" ] && [ "$got_k" = "$want" ] && [ "$got_p" = "$want" ] \
        || { echo "stores disagree: vault '$got_v' keepassxc '$got_k' pass '$got_p'" >&2; exit 1; }
    [ "$("$VAULT_BIN" list --vault "$WORK/v$n/bench.vault" --passphrase-file "$WORK/passphrase" | wc -l)" -eq "$n" ]
    # The same store in format version 2 (vault upgrade: ids, fields, clocks; no history yet).
    mkdir -m 700 "$WORK/w$n"
    cp "$WORK/v$n/bench.vault" "$WORK/w$n/bench.vault"
    "$VAULT_BIN" upgrade --vault "$WORK/w$n/bench.vault" --passphrase-file "$WORK/passphrase" >/dev/null
    [ "$("$VAULT_BIN" get --vault "$WORK/w$n/bench.vault" --passphrase-file "$WORK/passphrase" entry-000000)" = "$want" ]
    stat -c %s "$WORK/v$n/bench.vault" > "$WORK/size1-$n"
    stat -c %s "$WORK/w$n/bench.vault" > "$WORK/size2-$n"
done

# --- the agent: every store unlocked once, then verbs with no passphrase source ----------------------
# Only the agent's rows see the socket: with it, the other rows would go through the agent too.
AGENT_ENV="VAULT_AGENT_SOCK=$WORK/agent/agent.sock"
for n in $SIZES; do
    env "$AGENT_ENV" "$VAULT_BIN" unlock --vault "$WORK/v$n/bench.vault" --passphrase-file "$WORK/passphrase" --idle 8h >/dev/null
    env "$AGENT_ENV" "$VAULT_BIN" unlock --vault "$WORK/w$n/bench.vault" --passphrase-file "$WORK/passphrase" --idle 8h >/dev/null
done
AGENT_PID=$(env "$AGENT_ENV" "$VAULT_BIN" agent status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
export VAULT_AGENT_SOCK="$WORK/no-agent/agent.sock"

# --- timings ----------------------------------------------------------------------------------------
export PASSWORD_STORE_GPG_OPTS="--quiet"
hf() {  # hf NAME COMMAND
    hyperfine --style none --warmup 2 --runs "$RUNS" --export-json "$WORK/$1.json" "$2" >/dev/null 2>&1 \
        || { echo "hyperfine failed: $2" >&2; sh -c "$2" >&2; exit 1; }
}
say "floor: one Argon2id ($OPS ops, $((MEM >> 20)) MiB, 1 lane) in a fresh process"
hf floor "$WORK/argon2_floor $OPS $MEM"
for n in $SIZES; do
    say "timings at $n entries ($RUNS runs each)"
    O="--vault $WORK/v$n/bench.vault --passphrase-file $WORK/passphrase"
    K="$WORK/k$n.kdbx"
    # The floor again right before and right after vault's runs: on a shared machine the cost of one Argon2id
    # drifts by 10 % within minutes, and vault's ratios use the mean of these two.
    hf "floor-before-$n" "$WORK/argon2_floor $OPS $MEM"
    hf "vault-get-$n" "$VAULT_BIN get $O entry-000000 >/dev/null"
    hf "vault-put-$n" "$VAULT_BIN put $O entry-000000 < $WORK/value"
    hf "vault-list-$n" "$VAULT_BIN list $O >/dev/null"
    hf "floor-after-$n" "$WORK/argon2_floor $OPS $MEM"
    A="--vault $WORK/v$n/bench.vault"
    hf "agent-get-$n" "$AGENT_ENV $VAULT_BIN get $A entry-000000 >/dev/null"
    hf "agent-put-$n" "$AGENT_ENV $VAULT_BIN put $A entry-000000 < $WORK/value"
    hf "agent-list-$n" "$AGENT_ENV $VAULT_BIN list $A >/dev/null"
    hf "agent-version-$n" "$VAULT_BIN --version >/dev/null"
    W="--vault $WORK/w$n/bench.vault"
    hf "agent2-get-$n" "$AGENT_ENV $VAULT_BIN get $W entry-000000 >/dev/null"
    hf "agent2-put-$n" "$AGENT_ENV $VAULT_BIN put $W entry-000000 < $WORK/value"
    hf "agent2-list-$n" "$AGENT_ENV $VAULT_BIN list $W >/dev/null"

    hf "keepassxc-get-$n" "keepassxc-cli show -q -s -a password $K entry-000000 < $WORK/passphrase >/dev/null"
    hf "keepassxc-put-$n" "(cat $WORK/passphrase; cat $WORK/value; echo) | keepassxc-cli edit -q -p $K entry-000000 >/dev/null"
    hf "keepassxc-list-$n" "keepassxc-cli ls -q -R -f $K < $WORK/passphrase >/dev/null"
    hf "pass-get-$n" "PASSWORD_STORE_DIR=$WORK/p$n pass show entry-000000 >/dev/null"
    hf "pass-put-$n" "PASSWORD_STORE_DIR=$WORK/p$n pass insert -m -f entry-000000 < $WORK/value >/dev/null"
    hf "pass-list-$n" "PASSWORD_STORE_DIR=$WORK/p$n pass ls >/dev/null"
    # Paired: the floor and vault alternated run by run (Benchmarks/paired.py), the ratio taken per pair.
    for op in get put list; do
        case $op in
            get) args="get $O entry-000000"; input="" ;;
            put) args="put $O entry-000000"; input="$WORK/value" ;;
            list) args="list $O"; input="" ;;
        esac
        python3 "$ROOT/Benchmarks/paired.py" "$RUNS" "$WORK/argon2_floor $OPS $MEM" "$VAULT_BIN $args" $input \
            > "$WORK/paired-$op-$n.json"
    done
    /usr/bin/time -v $VAULT_BIN get $O entry-000000 2> "$WORK/rss-$n.txt" >/dev/null
    # put must still leave every store readable
    "$VAULT_BIN" get --vault "$WORK/v$n/bench.vault" --passphrase-file "$WORK/passphrase" entry-000000 | grep -q pw-999999
done

grep -E '^(VmRSS|VmHWM)' "/proc/$AGENT_PID/status" > "$WORK/agent-rss.txt"

# --- report -----------------------------------------------------------------------------------------
python3 - "$WORK" "$SIZES" "$MEM" <<'EOF'
import json, re, sys
work, sizes, mem = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
def median(name):
    return json.load(open(f"{work}/{name}.json"))["results"][0]["median"]
floor = median("floor")
print(f"\nfloor (argon2_floor.c, libsodium crypto_pwhash, 2 ops, 64 MiB, 1 lane, fresh process): "
      f"median {floor * 1000:.1f} ms\n")
local = {n: (median(f"floor-before-{n}") + median(f"floor-after-{n}")) / 2 for n in sizes}
for n in sizes:
    print(f"floor measured around vault's runs at {int(n)} entries: before {median(f'floor-before-{n}') * 1000:.1f} ms, "
          f"after {median(f'floor-after-{n}') * 1000:.1f} ms (vault ×floor uses their mean)")
print()
print(f"{'op':<5} {'entries':>7} | {'vault ms':>9} {'×floor':>7} | {'keepassxc ms':>12} {'×floor':>7} | "
      f"{'pass ms':>8} {'×floor':>7} | {'keepassxc/vault':>15}")
print("-" * 96)
for op in ("get", "put", "list"):
    for n in sizes:
        v, k, p = (median(f"{tool}-{op}-{n}") for tool in ("vault", "keepassxc", "pass"))
        print(f"{op:<5} {int(n):>7} | {v*1000:>9.1f} {v/local[n]:>7.2f} | {k*1000:>12.1f} {k/floor:>7.2f} | "
              f"{p*1000:>8.1f} {p/floor:>7.2f} | {k/v:>15.2f}")
print()
print("through the agent (vault unlock once; no passphrase source, no KDF per command):")
print(f"{'op':<5} {'entries':>7} | {'vault+agent ms':>14} | {'pass ms':>8} | {'vault+agent/pass':>16}")
for op in ("get", "put", "list"):
    for n in sizes:
        a, p = median(f"agent-{op}-{n}"), median(f"pass-{op}-{n}")
        print(f"{op:<5} {int(n):>7} | {a*1000:>14.1f} | {p*1000:>8.1f} | {a/p:>16.2f}")
for n in sizes:
    print(f"vault --version (process start, no vault work), run beside {int(n)} entries: {median(f'agent-version-{n}')*1000:.1f} ms")
print()
print("format version 2 against version 1, both through the agent (the same entries; v2 = vault upgrade of v1):")
print(f"{'op':<5} {'entries':>7} | {'v1 ms':>7} | {'v2 ms':>7} | {'v2/v1':>6} | target ≤ 1.2")
for op in ("get", "put", "list"):
    for n in sizes:
        one, two = median(f"agent-{op}-{n}"), median(f"agent2-{op}-{n}")
        print(f"{op:<5} {int(n):>7} | {one*1000:>7.2f} | {two*1000:>7.2f} | {two/one:>6.2f} | {'ok' if two/one <= 1.2 else 'MISSED'}")
for n in sizes:
    one, two = (int(open(f"{work}/size{v}-{n}").read()) for v in (1, 2))
    print(f"file size at {int(n)} entries (no history): v1 {one:,} B, v2 {two:,} B, v2/v1 {two/one:.2f} (target ≤ 1.25)")
print("agent memory with every store unlocked:", " ".join(open(f"{work}/agent-rss.txt").read().split()))
print()
print("paired (the floor and vault alternated run by run; median of the per-pair ratios):")
for op in ("get", "put", "list"):
    for n in sizes:
        paired = json.load(open(f"{work}/paired-{op}-{n}.json"))
        print(f"{op:<5} {int(n):>7} | vault {paired['median'] * 1000:6.1f} ms, floor {paired['floor_median'] * 1000:6.1f} ms"
              f" | ×floor {paired['ratio_median']:.2f}")
print()
for n in sizes:
    text = open(f"{work}/rss-{n}.txt").read()
    kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    limit = mem // 1024 + 24 * 1024
    print(f"peak RSS of vault get, {int(n):>6} entries: {kib / 1024:.1f} MiB "
          f"(target ≤ memlimit + 24 MiB = {limit / 1024:.0f} MiB: {'ok' if kib <= limit else 'MISSED'})")
EOF
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "versions: vault $("$VAULT_BIN" --version) ($VAULT_LINK) (git $(git -C "$ROOT" rev-parse --short HEAD)), keepassxc-cli $(keepassxc-cli --version), pass $(pass version | grep -o 'v[0-9.]*' | head -1), $(gpg --version | head -1), $(hyperfine --version)"

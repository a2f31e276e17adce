#!/usr/bin/env bash
# An Ed25519 signature through the vault agent's ssh-agent socket against OpenSSH's own ssh-agent, on the same
# key, in one run: each agent gets the same sign request (one connection each, as ssh and git hold), alternating
# rounds of ROUNDS requests so that both see the same machine load; prints the median round trip of each and
# their ratio (the goal, issue 36: vault ≤ 1.2× ssh-agent).
#   Benchmarks/ssh-agent-sign.sh            # release build of vault and vault-net (built if missing)
#   BUILD=debug ROUNDS=200 PAIRS=20 Benchmarks/ssh-agent-sign.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD:-release}"
rounds="${ROUNDS:-500}"
pairs="${PAIRS:-20}"
cd "$here"
bin="$here/.build/$build"
if ! [ -x "$bin/vault" ] || ! [ -x "$bin/vault-net" ]; then
    swift build -c "$build" --product vault-net >/dev/null
    swift build -c "$build" --product vault >/dev/null
fi
work="$(mktemp -d)"
agent_pid=""
cleanup() {
    [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null || true
    VAULT_AGENT_SOCK="$work/run/agent.sock" "$bin/vault" agent stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
export HOME="$work" VAULT_PATH="$work/bench.vault" VAULT_AGENT_SOCK="$work/run/agent.sock" XDG_STATE_HOME="$work/state"
export VAULT_TESTING_INSECURE_KDF=1 VAULT_PASSPHRASE=bench   # the KDF is paid once, at unlock: not what is measured
"$bin/vault" init --force >/dev/null   # --force: the short bench passphrase is weak on purpose
ssh-keygen -q -t ed25519 -N '' -C bench -f "$work/id"
"$bin/vault" ssh import bench "$work/id" >/dev/null
"$bin/vault" unlock >/dev/null
eval "$(ssh-agent -a "$work/openssh-agent.sock" -s)" >/dev/null
agent_pid="$SSH_AGENT_PID"
SSH_AUTH_SOCK="$work/openssh-agent.sock" ssh-add -q "$work/id"
vault_pid="$("$bin/vault" agent status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')"
python3 - "$("$bin/vault" ssh socket)" "$work/openssh-agent.sock" "$work/id.pub" "$rounds" "$pairs" "$vault_pid" "$agent_pid" <<'PY'
import base64, os, socket, statistics, struct, sys, time
vault_sock, openssh_sock, pub, rounds, pairs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
pids = {"vault": int(sys.argv[6]), "ssh-agent": int(sys.argv[7])}
def cpu_seconds(pid):  # utime + stime of the agent process (all its threads), /proc/PID/stat fields 14 and 15
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
blob = base64.b64decode(open(pub).read().split()[1])
def s(b): return struct.pack(">I", len(b)) + b
data = s(b"\x20" * 32) + b"\x32" + s(b"git") + s(b"ssh-connection") + s(b"publickey") + b"\x01" + s(b"ssh-ed25519") + s(blob)
body = b"\x0d" + s(blob) + s(data) + struct.pack(">I", 0)
request = struct.pack(">I", len(body)) + body
def connect(path):
    c = socket.socket(socket.AF_UNIX); c.connect(path); return c
def recv(c, n):
    out = b""
    while len(out) < n:
        part = c.recv(n - len(out))
        if not part: raise SystemExit("the agent closed the connection")
        out += part
    return out
def once(c):
    c.sendall(request)
    length = struct.unpack(">I", recv(c, 4))[0]
    answer = recv(c, length)
    if answer[0] != 14: raise SystemExit("sign failed: answer type %d" % answer[0])
    return answer
ours, theirs = connect(vault_sock), connect(openssh_sock)
sig_ours, sig_theirs = once(ours), once(theirs)
assert sig_ours == sig_theirs, "Ed25519 is deterministic: both agents must give the same signature"
times = {"vault": [], "ssh-agent": []}
cpu = {"vault": 0.0, "ssh-agent": 0.0}
for _ in range(pairs):
    for name, c in (("vault", ours), ("ssh-agent", theirs)):
        before = cpu_seconds(pids[name])
        for _ in range(rounds):
            t = time.perf_counter_ns(); once(c); times[name].append(time.perf_counter_ns() - t)
        cpu[name] += cpu_seconds(pids[name]) - before
v, o = statistics.median(times["vault"]), statistics.median(times["ssh-agent"])
print("Ed25519 sign round trip, %d requests each (%d alternating rounds of %d), same key, same signature:" % (rounds * pairs, pairs, rounds))
print("  vault agent  median %7.1f us  p90 %7.1f us" % (v / 1000, statistics.quantiles(times["vault"], n=10)[8] / 1000))
print("  ssh-agent    median %7.1f us  p90 %7.1f us" % (o / 1000, statistics.quantiles(times["ssh-agent"], n=10)[8] / 1000))
print("  ratio vault/ssh-agent: %.2f (goal <= 1.2)" % (v / o))
n = rounds * pairs
print("  agent CPU per signature (utime+stime, 10 ms ticks): vault %.1f us, ssh-agent %.1f us, ratio %.2f" % (
    cpu["vault"] / n * 1e6, cpu["ssh-agent"] / n * 1e6, cpu["vault"] / cpu["ssh-agent"] if cpu["ssh-agent"] else float("nan")))
PY

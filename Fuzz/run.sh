#!/usr/bin/env bash
# Builds the libFuzzer targets (ASan + libFuzzer, debug) and runs each for SECONDS (default 60), seeded with the
# malformed-file vectors (Tests/Vectors/v1/*.vault), generated plaintexts (FuzzOpen) and the committed
# regressions, which are also replayed first. Exits non-zero on any crash, sanitizer report, leak or timeout.
#   Fuzz/run.sh [SECONDS] [TARGET...]      targets: FuzzHeader FuzzOpen FuzzDocument FuzzAgentWire FuzzSSHAgent (default all)
# Working corpora go to Fuzz/.build/fuzz/ (kept between runs, not committed); Fuzz/corpus/TARGET (committed: a
# minimized corpus, `Fuzz/run.sh --minimize` rewrites it) seeds every run. A crashing input is saved in Fuzz/crashes/
# (to commit to Fuzz/regressions once fixed) and printed in base64, so that a CI log alone reproduces it.
#   Fuzz/run.sh --minimize                  merges the working corpora into Fuzz/corpus (libFuzzer -merge=1)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
minimize=0
if [ "${1:-}" = "--minimize" ]; then minimize=1; shift; fi
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(FuzzHeader FuzzOpen FuzzDocument FuzzAgentWire FuzzSSHAgent)
export SWIFT_BACKTRACE=enable=no

# SwiftPM applies -sanitize=fuzzer (coverage) only to the fuzz targets themselves: ask for coverage of every
# module explicitly, so that VaultCore is instrumented. Changing these flags needs a clean build (rm -rf .build).
flags=(-c debug --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer)
swift build "${flags[@]}"
bin="$(swift build "${flags[@]}" --show-bin-path)"
work="$here/.build/fuzz"
mkdir -p "$work"

# FuzzOpen reads header ‖ nonce ‖ plaintext and seals the plaintext under its fixed key: give it well-formed
# plaintexts (entries after the 32-byte header hash, which the target fills in) behind a valid header.
python3 - "$here/../Tests/Vectors/v1/success-entries.vault" "$work/seeds-open" <<'PY'
import os, struct, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
head = open(src, "rb").read()[:148] if os.path.exists(src) else None
if head is None:
    sys.exit(0)
def entry(name, value, created=1, modified=2):
    return struct.pack("<H", len(name)) + name + struct.pack("<I", len(value)) + value + struct.pack("<qq", created, modified)
cases = {
    "empty": [],
    "one": [(b"k", b"v")],
    "three": [(b"alpha", b"1"), (b"beta", b"x" * 300), (b"\xc3\xa9t\xc3\xa9", b"")],
    "dup": [(b"a", b"1"), (b"a", b"2")],
    "long-name": [(b"n" * 4096, b"v")],
}
for label, entries in cases.items():
    body = b"\0" * 32 + struct.pack("<I", len(entries)) + b"".join(entry(n, v) for n, v in entries)
    open(os.path.join(out, label), "wb").write(head + body)
PY

# FuzzDocument reads a whole version-2 file, then the input as a version-2 body plaintext behind a fixed header
# (docs/FORMAT.md, "Plaintext"): give it well-formed plaintexts (the target fills in the 32-byte binding).
python3 - "$work/seeds-document" <<'PY'
import os, struct, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
def uvar(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
def stamp(ms, counter=0, index=0):  # time u64 || replica index in the table
    return struct.pack("<Q", ms << 16 | counter) + uvar(index)
WELL_KNOWN = {b"password": 1, b"username": 2, b"url": 3, b"notes": 4, b"otp": 5}
def field(name, value, secret=0):
    code = WELL_KNOWN.get(name, 0)
    out = bytes([code | (0x80 if secret else 0)])
    if code == 0:
        out += bytes([len(name)]) + name
    return out + uvar(len(value)) + value
def entry(ident, name, fields, history=()):
    # modified at 2000 ms by replica 0, created 1000 ms earlier (age in time units) by replica 0
    out = ident + uvar(len(name)) + name + stamp(2000) + uvar(1000 << 16) + uvar(0) + uvar(len(fields)) + b"".join(fields)
    out += bytes([len(history)])
    for when, flags, version_fields in history:
        out += when + bytes([flags]) + uvar(len(version_fields)) + b"".join(version_fields)
    return out
def body(replicas, entries, tombstones):
    out = b"\0" * 32 + uvar(len(replicas)) + b"".join(struct.pack("<QQ", r, t << 16) for r, t in replicas)
    out += uvar(len(entries)) + b"".join(entries)
    out += uvar(len(tombstones)) + b"".join(i + stamp(3000, index=len(replicas) - 1) for i in tombstones)
    return out
cases = {
    "empty": body([], [], []),
    "one": body([(1, 2000)], [entry(b"\1" * 16, b"k", [field(b"password", b"v", 1)])], []),
    "fields-history-tombstone": body([(1, 2000), (2, 3000)], [
        entry(b"\2" * 16, b"github", [field(b"password", b"t", 1), field(b"username", b"alice"), field(b"otp", b"otpauth://totp/x", 1)],
              [(stamp(1500, index=1), 1, [field(b"password", b"old", 1)]), (stamp(1200), 0, [])]),
        entry(b"\3" * 16, b"\xc3\xa9t\xc3\xa9", [field(b"notes", b"\xff\xfe")]),
    ], [b"\4" * 16]),
}
for label, data in cases.items():
    open(os.path.join(out, label), "wb").write(data)
PY

# FuzzAgentWire reads a request payload (docs/AGENT.md, "Wire protocol"): give it well-formed apply requests
# (version 5, operation 13) with every kind of document change, and the other operations' shapes.
python3 - "$work/seeds-agent" <<'PY'
import os, struct, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
PATH, NAME, VALUE, PASSPHRASE, IDLE, MAX, FLAGS, CODE, CHANGE, BOOL, SOURCE, VERSION, FIELD, SECRET = 1, 2, 3, 4, 5, 6, 7, 9, 17, 21, 24, 26, 29, 30
def field(tag, data):
    return struct.pack(">BI", tag, len(data)) + data
def request(kind, *fields):
    return bytes([5, kind]) + b"".join(fields)
def change(kind, *fields):
    return field(CHANGE, bytes([kind])) + b"".join(fields)
path = field(PATH, b"/home/u/.local/share/vault/default.vault")
yes, no = field(BOOL, b"\1"), field(BOOL, b"\0")
cases = {
    "apply-put": request(13, path, change(1, field(NAME, b"k"), field(FIELD, b"password"), field(VALUE, b"v"))),
    "apply-all": request(13, path,
        change(7, field(NAME, b"a"), yes), change(7, field(NAME, b"b"), no), change(9),
        change(1, field(NAME, b"c"), field(FIELD, b"username"), field(SECRET, b"\0"), field(VALUE, b"x" * 40)),
        change(2, field(NAME, b"c"), field(FIELD, b"url")), change(3, field(NAME, b"d"), yes),
        change(4, field(SOURCE, b"c"), field(NAME, b"e"), yes), change(5, field(SOURCE, b"a"), field(NAME, b"f"), no),
        change(6, field(NAME, b"e"), field(VERSION, struct.pack(">Q", 1))), change(8, field(NAME, b"e"), field(FIELD, b"otp"), no),
        change(11, field(NAME, b"gone"))),
    "get": request(6, path, field(NAME, b"github.com")),
    "unlock": request(2, path, field(PASSPHRASE, b"pw"), field(IDLE, struct.pack(">Q", 900)), field(MAX, struct.pack(">Q", 28800)), field(FLAGS, b"\0")),
    "names": request(11, path),
    "merge": request(15, path, field(SOURCE, b"other"), field(VALUE, b"\x89VAULT\r\n"), field(FLAGS, b"\1"), field(CODE, b"keep-file")),
}
for label, data in cases.items():
    open(os.path.join(out, label), "wb").write(data)
PY

# FuzzSSHAgent reads what a client sends on one ssh-agent connection (RFC 9987 frames): give it each request's
# shape, a session bind, an oversize header and a frame cut short.
python3 - "$work/seeds-ssh" <<'PY'
import os, struct, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
def s(data):
    return struct.pack(">I", len(data)) + data
def frame(body):
    return struct.pack(">I", len(body)) + body
ed = s(b"ssh-ed25519") + s(b"\x11" * 32)
cases = {
    "identities": frame(b"\x0b"),
    "sign": frame(b"\x0b") + frame(b"\x0d" + s(ed) + s(b"data") + struct.pack(">I", 0)),
    "sign-rsa-flags": frame(b"\x0d" + s(s(b"ssh-rsa") + s(b"\x01\x00\x01") + s(b"\x00" + b"\xc1" * 256)) + s(b"data") + struct.pack(">I", 4)),
    "query": frame(b"\x1b" + s(b"query")),
    "bind": frame(b"\x1b" + s(b"session-bind@openssh.com") + s(ed) + s(b"\x22" * 32) + s(s(b"ssh-ed25519") + s(b"\x33" * 64)) + b"\x01") + frame(b"\x0b"),
    "signatures": frame(b"\x1b" + s(b"signatures@vault")),
    "add-remove": frame(b"\x11" + s(b"ssh-ed25519")) + frame(b"\x12" + s(ed)) + frame(b"\x13") + frame(b"\x17" + s(b"pw")),
    "oversize": struct.pack(">I", 256 * 1024 + 1) + b"\x0b",
    "truncated": struct.pack(">I", 9) + b"\x0d\x00",
}
for label, data in cases.items():
    open(os.path.join(out, label), "wb").write(data)
PY

if [ "$minimize" = 1 ]; then
    for target in "${targets[@]}"; do
        committed="$here/corpus/$target"
        mkdir -p "$committed" "$work/minimized-$target"
        "$bin/$target" -merge=1 "$work/minimized-$target" "$committed" "$work/corpus-$target" > "$work/$target-merge.log" 2>&1
        rm -rf "$committed" && mv "$work/minimized-$target" "$committed"
        echo "== $target: $(ls "$committed" | wc -l) inputs in Fuzz/corpus/$target"
    done
    exit 0
fi

status=0
crashes="$here/crashes"
for target in "${targets[@]}"; do
    corpus="$work/corpus-$target"
    mkdir -p "$corpus" "$crashes"
    [ -d "$here/corpus/$target" ] && seeds_committed=("$here/corpus/$target") || seeds_committed=()
    seeds=("$here/../Tests/Vectors/v1")
    [ "$target" = FuzzOpen ] && [ -d "$work/seeds-open" ] && seeds+=("$work/seeds-open")
    if [ "$target" = FuzzDocument ]; then
        seeds=("$work/seeds-document")
        [ -d "$here/../Tests/Vectors/v2" ] && seeds+=("$here/../Tests/Vectors/v2")
    fi
    [ "$target" = FuzzAgentWire ] && seeds=("$work/seeds-agent")
    [ "$target" = FuzzSSHAgent ] && seeds=("$work/seeds-ssh")
    regressions=()
    for file in "$here"/regressions/*; do
        case "$(basename "$file")" in README.md | '*') ;; *) regressions+=("$file") ;; esac
    done
    if [ ${#regressions[@]} -gt 0 ]; then
        echo "== $target: replaying ${#regressions[@]} regression inputs"
        "$bin/$target" -runs=1 "${regressions[@]}" > "$work/$target-regressions.log" 2>&1 || {
            echo "$target: a regression input fails again (see $work/$target-regressions.log)"; status=1; }
    fi
    echo "== $target: fuzzing for $seconds s"
    if "$bin/$target" "$corpus" "${seeds_committed[@]}" "${seeds[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=8192 -print_final_stats=1 -artifact_prefix="$crashes/$target-" > "$work/$target.log" 2>&1; then
        grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$work/$target.log"
    else
        echo "$target: FAILED (crash, sanitizer report, leak or timeout); see $work/$target.log and Fuzz/crashes/"
        tail -40 "$work/$target.log"
        for input in "$crashes/$target"-*; do
            [ -f "$input" ] || continue
            echo "== $(basename "$input") ($(wc -c < "$input") bytes), base64 (reproduce: base64 -d > FILE; Fuzz/.build/debug/$target FILE):"
            head -c 65536 "$input" | base64
        done
        status=1
    fi
done
exit $status

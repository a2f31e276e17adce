#!/usr/bin/env bash
# Builds the libFuzzer targets (ASan + libFuzzer, debug) and runs each for SECONDS (default 60), seeded with the
# malformed-file vectors (Tests/Vectors/v1/*.vault), generated plaintexts (FuzzOpen) and the committed
# regressions, which are also replayed first. Exits non-zero on any crash, sanitizer report, leak or timeout.
#   Fuzz/run.sh [SECONDS] [TARGET...]      targets: FuzzHeader FuzzOpen FuzzDocument FuzzAgentWire (default all)
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
[ ${#targets[@]} -gt 0 ] || targets=(FuzzHeader FuzzOpen FuzzDocument FuzzAgentWire)
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

# FuzzAgentWire reads a request payload (docs/AGENT.md, "Wire protocol"): give it well-formed write requests
# (version 2, operation 8) with every kind of change, and the other operations' shapes.
python3 - "$work/seeds-agent" <<'PY'
import os, struct, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
PATH, NAME, VALUE, PASSPHRASE, IDLE, MAX, FLAGS, CHANGE, SOURCE = 1, 2, 3, 4, 5, 6, 7, 17, 24
def field(tag, data):
    return struct.pack(">BI", tag, len(data)) + data
def request(kind, *fields):
    return bytes([2, kind]) + b"".join(fields)
path = field(PATH, b"/home/u/.local/share/vault/default.vault")
cases = {
    "write-put": request(8, path, field(FLAGS, b"\0"), field(CHANGE, b"\1"), field(NAME, b"k"), field(VALUE, b"v")),
    "write-all": request(8, path, field(FLAGS, b"\1"),
        field(CHANGE, b"\5"), field(NAME, b"a"), field(CHANGE, b"\6"), field(NAME, b"b"),
        field(CHANGE, b"\1"), field(NAME, b"c"), field(VALUE, b"x" * 40),
        field(CHANGE, b"\2"), field(NAME, b"d"),
        field(CHANGE, b"\3"), field(NAME, b"e"), field(SOURCE, b"c"),
        field(CHANGE, b"\4"), field(NAME, b"f"), field(SOURCE, b"a")),
    "get": request(6, path, field(NAME, b"github.com")),
    "unlock": request(2, path, field(PASSPHRASE, b"pw"), field(IDLE, struct.pack(">Q", 900)), field(MAX, struct.pack(">Q", 28800)), field(FLAGS, b"\0")),
    "names": request(11, path),
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

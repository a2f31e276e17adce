#!/usr/bin/env bash
# Builds the libFuzzer targets (ASan + libFuzzer, debug) and runs each for SECONDS (default 60), seeded with the
# malformed-file vectors (Tests/Vectors/v1/*.vault), generated plaintexts (FuzzOpen) and the committed
# regressions, which are also replayed first. Exits non-zero on any crash, sanitizer report, leak or timeout.
#   Fuzz/run.sh [SECONDS] [TARGET...]      targets: FuzzHeader FuzzOpen (default both)
# Working corpora and crash artifacts go to Fuzz/.build/fuzz/ (kept between runs, not committed).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(FuzzHeader FuzzOpen)
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

status=0
for target in "${targets[@]}"; do
    corpus="$work/corpus-$target"
    mkdir -p "$corpus" "$work/artifacts"
    seeds=("$here/../Tests/Vectors/v1")
    [ "$target" = FuzzOpen ] && [ -d "$work/seeds-open" ] && seeds+=("$work/seeds-open")
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
    if "$bin/$target" "$corpus" "${seeds[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=8192 -print_final_stats=1 -artifact_prefix="$work/artifacts/$target-" > "$work/$target.log" 2>&1; then
        grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$work/$target.log"
    else
        echo "$target: FAILED (crash, sanitizer report, leak or timeout); see $work/$target.log and $work/artifacts/"
        tail -40 "$work/$target.log"
        status=1
    fi
done
exit $status

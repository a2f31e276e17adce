#!/usr/bin/env python3
"""Replays Tests/Vectors/v2/ and v3/ (made by generate_v2.py and generate_v3.py) against
Tests/Interop/read_vault_v2.py, which reads format versions 2 and 3.

    python3 Tests/Vectors/check_v2.py [DIR...]      # default: v2 and v3

For each file named in DIR/expected.json it runs the reader with VAULT_PASSPHRASE="correct horse battery
staple" and VAULT_TESTING_INSECURE_KDF=1 and checks: a valid file exits 0 and prints exactly the expected
object; a malformed one exits with the expected code (3 or 6) and prints "read_vault_v2: CODE: ..." on
stderr with the expected CODE. Every .vault file must be in expected.json and the other way round. Exits 1
on any mismatch. DIR/identity.txt, when there, is given to the reader as VAULT_IDENTITY.
"""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
DIRS = sys.argv[1:] or [os.path.join(HERE, "v2"), os.path.join(HERE, "v3")]
READER = os.path.join(HERE, "..", "Interop", "read_vault_v2.py")
PREFIX = "read_vault_v2: "


def check(DIR):
    """The mismatches of DIR's vectors, and how many valid and malformed ones were replayed."""
    with open(os.path.join(DIR, "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    files = {name for name in os.listdir(DIR) if name.endswith(".vault")}
    failures = [f"{name}: no expected outcome" for name in sorted(files - expected.keys())]
    failures += [f"{name}: expected but missing" for name in sorted(expected.keys() - files)]
    # identity.txt opens the x25519 stanzas made for it (valid-recipients-only has no passphrase stanza).
    env = dict(os.environ, VAULT_PASSPHRASE="correct horse battery staple", VAULT_TESTING_INSECURE_KDF="1")
    env.pop("VAULT_IDENTITY", None)
    if os.path.exists(os.path.join(DIR, "identity.txt")):
        env["VAULT_IDENTITY"] = os.path.join(DIR, "identity.txt")
    valid = malformed = 0
    for name in sorted(files & expected.keys()):
        want = expected[name]
        run = subprocess.run([sys.executable, READER, os.path.join(DIR, name)], env=env, capture_output=True)
        stderr = run.stderr.decode("utf-8", "replace").strip()
        if "exit" not in want:
            valid += 1
            if run.returncode != 0:
                failures.append(f"{name}: exit {run.returncode} ({stderr}), expected success")
            elif json.loads(run.stdout) != want:
                failures.append(f"{name}: output differs from expected.json")
            continue
        malformed += 1
        code = stderr[len(PREFIX):].split(":", 1)[0] if stderr.startswith(PREFIX) else None
        if (run.returncode, code) != (want["exit"], want["code"]):
            failures.append(f"{name}: exit {run.returncode} code {code} ({stderr}), expected exit {want['exit']} "
                            f"code {want['code']}")
    for failure in failures:
        print("MISMATCH", failure)
    print(f"{os.path.basename(os.path.normpath(DIR))}: {valid + malformed} vectors ({valid} valid, {malformed} "
          f"malformed): " + (f"{len(failures)} mismatches" if failures else "all agree"))
    return failures


def main():
    failures = [failure for directory in DIRS for failure in check(directory)]
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

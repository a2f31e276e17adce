#!/usr/bin/env python3
"""An independent reader of vault format v1, written from docs/FORMAT.md with PyNaCl only.

    VAULT_PASSPHRASE=... python3 read_vault.py VAULT

Prints one JSON object {name: value} to stdout, sorted by name: a value that is valid UTF-8 as a string,
any other as {"base64": "..."}. Exit codes as the CLI's: 3 wrong passphrase or tampered file, 6 not a
vault, unsupported or corrupt, 1 anything else. VAULT_TESTING_INSECURE_KDF=1 is the test hook of step 6.
"""
import base64, hmac, json, os, struct, sys, unicodedata
from nacl import encoding, exceptions, hash, pwhash, secret

def fail(code, message):
    sys.stderr.write(f"read_vault: {message}\n")
    sys.exit(code)

def read(file, passphrase):
    if len(file) < 8 or file[:8] != b"\x89VAULT\r\n": fail(6, "not a vault file")         # step 1
    if len(file) < 148: fail(6, "truncated")                                               # step 2
    version, kdf, flags, ops, mem = struct.unpack_from("<HBBQQ", file, 8)
    if version != 1: fail(6, f"unsupported format version {version}")                      # step 3
    if kdf != 2: fail(6, f"unsupported key-derivation algorithm {kdf}")                    # step 4
    if flags != 0: fail(6, f"unknown flags {flags:#x}")                                    # step 5
    low_ops, low_mem = (1, 8192) if os.environ.get("VAULT_TESTING_INSECURE_KDF") == "1" else (2, 64 << 20)
    if not (low_ops <= ops <= 4 and low_mem <= mem <= 1 << 30 and mem % 1024 == 0):        # step 6
        fail(6, f"Argon2id parameters out of range (opslimit {ops}, memlimit {mem})")
    if len(file) < 420 or (len(file) - 164) % 256: fail(6, "truncated or extended")      # step 7
    kek = pwhash.argon2id.kdf(32, passphrase, file[28:44], opslimit=ops, memlimit=mem)   # step 8
    try:
        data_key = secret.SecretBox(kek).decrypt(file[76:124], file[52:76])              # step 9
        plain = secret.SecretBox(data_key).decrypt(file[148:], file[124:148])            # step 10
    except exceptions.CryptoError:
        fail(3, "incorrect passphrase (or the file was tampered with)")
    if not hmac.compare_digest(plain[:32], hash.blake2b(file[:124], digest_size=32, encoder=encoding.RawEncoder)):
        fail(3, "incorrect passphrase (or the file was tampered with)")                   # step 11
    (count,) = struct.unpack_from("<I", plain, 32)                                        # step 12
    offset, entries, seen = 36, {}, set()
    for index in range(count):
        if offset + 2 > len(plain): fail(6, f"entry {index} truncated")
        (n,) = struct.unpack_from("<H", plain, offset)
        if not 1 <= n <= 4096 or offset + 2 + n + 4 > len(plain): fail(6, f"entry {index}: bad name length")
        try: name = plain[offset + 2:offset + 2 + n].decode("utf-8")
        except UnicodeDecodeError: fail(6, f"entry {index}: name is not UTF-8")
        (v,) = struct.unpack_from("<I", plain, offset + 2 + n)
        start = offset + 2 + n + 4
        if v > 64 << 20 or start + v + 16 > len(plain): fail(6, f"entry {index}: bad value length")
        if unicodedata.normalize("NFD", name) in seen: fail(6, "duplicate entry name")
        seen.add(unicodedata.normalize("NFD", name))
        entries[name], offset = plain[start:start + v], start + v + 16
    if len(plain) - offset >= 256 or any(plain[offset:]): fail(6, "bad padding")
    return entries

def main():
    if len(sys.argv) != 2: fail(1, "usage: VAULT_PASSPHRASE=... read_vault.py VAULT")
    passphrase = os.environb.get(b"VAULT_PASSPHRASE")
    if passphrase is None: fail(1, "set VAULT_PASSPHRASE (the passphrase is never read from the arguments)")
    try:
        with open(sys.argv[1], "rb") as f: file = f.read()
    except OSError as error: fail(1, f"cannot read '{sys.argv[1]}': {error.strerror}")
    out = {}
    for name, value in read(file, passphrase).items():
        try: out[name] = value.decode("utf-8")
        except UnicodeDecodeError: out[name] = {"base64": base64.b64encode(value).decode("ascii")}
    sys.stdout.buffer.write(json.dumps(out, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n")

if __name__ == "__main__":
    main()

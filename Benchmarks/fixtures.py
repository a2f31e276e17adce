#!/usr/bin/env python3
"""Equal stores for Benchmarks/compare.sh: the same N entries (entry-000000 ... with 32-byte values).

    fixtures.py vault PATH N     vault format v1 (docs/FORMAT.md), Argon2id 2 ops, 64 MiB (= vault init --kdf interactive)
    fixtures.py kdbx  PATH N     KDBX 4 with pykeepass, Argon2id t=2, m=64 MiB, p=1
    fixtures.py pass  DIR  N     plaintext files DIR/entry-XXXXXX (compare.sh encrypts them with gpg in one call)

The passphrase is $BENCH_PASSPHRASE. The vault file is written from the specification with PyNaCl (adding
10,000 entries with 10,000 `vault put` runs would cost 10,000 Argon2id runs); `vault get` then checks it.
"""
import os, struct, sys, time

def name(i): return f"entry-{i:06d}"
def value(i): return f"pw-{i:06d}-abcdefghijklmnopqrstuv"

def write_vault(path, count, passphrase):
    from nacl import encoding, hash, pwhash, secret, utils
    # BENCH_TEST_HOOK_KDF=1: libsodium's minimum (opens only with VAULT_TESTING_INSECURE_KDF=1), for profiling
    ops, mem = (1, 8192) if os.environ.get("BENCH_TEST_HOOK_KDF") == "1" else (2, 64 << 20)
    salt, key_nonce, body_nonce = utils.random(16), utils.random(24), utils.random(24)
    data_key = utils.random(32)
    kek = pwhash.argon2id.kdf(32, passphrase, salt, opslimit=ops, memlimit=mem)
    wrapped = secret.SecretBox(kek).encrypt(data_key, key_nonce).ciphertext
    header = b"\x89VAULT\r\n" + struct.pack("<HBBQQ", 1, 2, 0, ops, mem) + salt + struct.pack("<Q", 1) \
        + key_nonce + wrapped
    assert len(header) == 124
    now = int(time.time() * 1000)
    parts = [hash.blake2b(header, digest_size=32, encoder=encoding.RawEncoder), struct.pack("<I", count)]
    for i in range(count):
        n, v = name(i).encode(), value(i).encode()
        parts += [struct.pack("<H", len(n)), n, struct.pack("<I", len(v)), v, struct.pack("<qq", now, now)]
    plain = b"".join(parts)
    plain += b"\0" * ((-len(plain)) % 256 or (256 if not plain else 0))
    body = secret.SecretBox(data_key).encrypt(plain, body_nonce).ciphertext
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f: f.write(header + body_nonce + body)

def write_kdbx(path, count, passphrase):
    # pykeepass's add_entry takes ~50 ms an entry at 10,000 entries: the entries are put into the XML tree of a
    # new KDBX 4 database with lxml instead (the same elements a KeePass XML export holds), then saved.
    import base64, uuid
    from lxml import etree
    from xml.sax.saxutils import escape
    from pykeepass import create_database
    from pykeepass.kdbx_parsing.kdbx4 import kdf_uuids
    kp = create_database(path, password=passphrase.decode())
    params = kp.kdbx.header.value.dynamic_header.kdf_parameters.data.dict
    params["$UUID"].value = kdf_uuids["argon2id"]
    params["I"].value, params["M"].value, params["P"].value = 2, 64 << 20, 1
    def u(): return base64.b64encode(uuid.uuid4().bytes).decode()
    entries = "".join(
        f"<Entry><UUID>{u()}</UUID><String><Key>Title</Key><Value>{escape(name(i))}</Value></String>"
        f"<String><Key>UserName</Key><Value>user</Value></String>"
        f"<String><Key>Password</Key><Value>{escape(value(i))}</Value></String></Entry>" for i in range(count))
    root = kp.root_group._element
    for entry in etree.fromstring(f"<Entries>{entries}</Entries>"):
        root.append(entry)
    kp.save()

def write_plain(directory, count):
    os.makedirs(directory, mode=0o700, exist_ok=True)
    for i in range(count):
        with open(os.path.join(directory, name(i)), "w") as f: f.write(value(i) + "\n")

def main():
    kind, path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    passphrase = os.environb[b"BENCH_PASSPHRASE"]
    {"vault": lambda: write_vault(path, count, passphrase), "kdbx": lambda: write_kdbx(path, count, passphrase),
     "pass": lambda: write_plain(path, count)}[kind]()

if __name__ == "__main__":
    main()

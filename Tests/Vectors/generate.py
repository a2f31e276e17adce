#!/usr/bin/env python3
"""Generator of the malformed-file vectors of vault format v1 (docs/FORMAT.md), with PyNaCl only.

    python3 Tests/Vectors/generate.py          # rewrites Tests/Vectors/v1/*.vault and *.expect
    python3 Tests/Vectors/generate.py DIR      # writes them to DIR instead (the tests compare the two)

Deterministic: every random field (salt, nonces, data keys) comes from a seeded PRNG, so running it again
rewrites byte-identical files (a diff means the generator changed). See README.md for the .expect format.
The vaults use the test KDF parameters (opslimit 1, memlimit 8192) unless a vector is about the KDF range.
"""
import base64, json, os, random, struct, sys
from nacl import encoding, hash, pwhash, secret

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "v1")
PASSPHRASE = "vector passphrase"
OPS, MEM = 1, 8192
T = 1_700_000_000_000  # created/modified of every entry (ms since the epoch)
MAGIC = b"\x89VAULT\r\n"
rng = random.Random(0x7661756C74)

def kdf(passphrase, salt):
    return pwhash.argon2id.kdf(32, passphrase.encode(), salt, opslimit=OPS, memlimit=MEM)

def blake(x):
    return hash.blake2b(x, digest_size=32, encoder=encoding.RawEncoder)

def entry(name, value, created=T, modified=T):
    name = name.encode() if isinstance(name, str) else name
    value = value.encode() if isinstance(value, str) else value
    return struct.pack("<H", len(name)) + name + struct.pack("<I", len(value)) + value + struct.pack("<qq", created, modified)

def body(*entries, count=None):
    return struct.pack("<I", len(entries) if count is None else count) + b"".join(entries)

class Vault:
    """One vault: a data key wrapped under the KEK of a passphrase (test KDF parameters)."""
    def __init__(self, passphrase=PASSPHRASE):
        self.data_key = rng.randbytes(32)
        self.salt = rng.randbytes(16)
        self.key_nonce = rng.randbytes(24)
        self.wrapped = secret.SecretBox(kdf(passphrase, self.salt)).encrypt(self.data_key, self.key_nonce).ciphertext

    def header(self, generation=1, version=1, kdf=2, flags=0, ops=OPS, mem=MEM):
        return (MAGIC + struct.pack("<HBBQQ", version, kdf, flags, ops, mem) + self.salt
                + struct.pack("<Q", generation) + self.key_nonce + self.wrapped)

    def file(self, payload=body(), generation=1, header=None, pad=True, hash_header=None, **fields):
        """header || body nonce || SecretBox(data key, BLAKE2b(header) || payload || zero padding)."""
        header = header or self.header(generation, **fields)
        plain = blake(hash_header or header) + payload
        if pad:
            plain += bytes(-len(plain) % 256)
        nonce = rng.randbytes(24)
        return header + nonce + secret.SecretBox(self.data_key).encrypt(plain, nonce).ciphertext

def shown(entries):
    out = {}
    for name, value in entries:
        try: out[name] = value.decode("utf-8")
        except UnicodeDecodeError: out[name] = {"base64": base64.b64encode(value).decode("ascii")}
    return json.dumps(out, ensure_ascii=False, sort_keys=True)

VECTORS = []

# The stable code of each reason (VaultCore's `Corruption.code`): tests compare codes, not the wording.
CODES = [("truncated or extended", "size_mismatch"), ("truncated (", "truncated"), ("bad magic", "bad_magic"),
         ("unknown flags", "unknown_flags"), ("larger than a vault can be", "too_large"),
         ("plaintext too short", "plaintext_too_short"), ("exceeds the data", "entry_count_exceeds_data"),
         ("truncated", "entry_truncated"), ("bad name length", "bad_name_length"), ("not UTF-8", "name_not_utf8"),
         ("bad value length", "bad_value_length"), ("duplicate entry name", "duplicate_name"), ("bad padding", "bad_padding")]

def corruption_code(reason):
    for text, code in CODES:
        if text in reason:
            return code
    raise ValueError(f"no code for reason {reason!r}")

def vector(name, data, expect, comment, passphrase=PASSPHRASE, policy="test", **fields):
    VECTORS.append((name, data, expect, comment, passphrase, policy, fields))

def main():
    a = Vault()
    b = Vault()
    other = Vault("another passphrase")
    entries = [("username", b"alice"), ("p\u00e4ssw\u00f6rd \U0001F511", "\u00fcn\u00efc\u00f6d\u00e9 \u2713".encode()),
               ("binary", bytes(range(256))), ("empty", b"")]
    good = a.file(body(*(entry(n, v) for n, v in entries)), generation=2)           # 676 bytes, two blocks
    empty = a.file(body(), generation=1)                                           # 420 bytes
    assert len(good) == 676 and len(empty) == 420

    # Success.
    vector("success-entries", good, "success", "four entries (unicode, binary, empty value), generation 2",
           generation=2, entries=shown(entries))
    vector("success-empty", empty, "success", "no entries, the smallest vault (420 bytes)", generation=1, entries="{}")
    exact = [("n", b"x" * (256 - 36 - 23))]                                          # plaintext exactly 256: no padding
    vector("success-no-padding", a.file(body(*(entry(n, v) for n, v in exact)), generation=3), "success",
           "the entries fill the plaintext to exactly 256 bytes: zero padding bytes", generation=3, entries=shown(exact))
    control = [("tab\there", b"v")]
    vector("success-control-character-name", a.file(body(entry("tab\there", "v")), generation=4), "success",
           "readers accept control characters in names (writers must not write them)", generation=4,
           entries=shown(control))
    canonical = [("caf\u00e9", b"1"), ("Caf\u00e9", b"2")]
    vector("success-distinct-case", a.file(body(*(entry(n, v) for n, v in canonical)), generation=5), "success",
           "names differing only in case are distinct", generation=5, entries=shown(canonical))

    # Wrong passphrase, and tampering with authenticated bytes (indistinguishable on purpose).
    vector("wrong-passphrase", other.file(body(entry("k", "v"))), "wrongPassphrase",
           "a valid vault whose passphrase is 'another passphrase'")
    g = bytearray(good); g[44] ^= 1
    vector("header-generation-edited", bytes(g), "wrongPassphrase", "generation edited: only the header hash covers it")
    g = bytearray(good); g[28] ^= 0x80
    vector("header-salt-edited", bytes(g), "wrongPassphrase", "one salt bit flipped: another KEK")
    g = bytearray(good); g[100] ^= 1
    vector("header-wrapped-key-edited", bytes(g), "wrongPassphrase", "one bit of the wrapped key flipped")
    g = bytearray(good); g[130] ^= 1
    vector("body-nonce-edited", bytes(g), "wrongPassphrase", "one bit of the body nonce flipped")
    g = bytearray(good); g[160] ^= 1
    vector("body-tag-edited", bytes(g), "wrongPassphrase", "one bit of the Poly1305 tag flipped")
    g = bytearray(good); g[-1] ^= 1
    vector("body-last-byte-edited", bytes(g), "wrongPassphrase", "the last ciphertext byte flipped")
    vector("header-hash-mismatch", a.file(body(entry("k", "v")), hash_header=a.header(generation=7)), "wrongPassphrase",
           "a well-formed body whose header hash is of another header (generation 7 instead of 1)")
    a2 = a.file(body(entry("k", "old")), generation=2)
    a3 = a.file(body(entry("k", "new")), generation=3)
    vector("spliced-header-same-vault", a3[:124] + a2[124:], "wrongPassphrase",
           "the header of generation 3 on the body of generation 2 of the same vault (same data key): the "
           "body decrypts, the header hash does not match")
    vector("spliced-header-other-vault", b.file(body(entry("k", "v")))[:124] + a2[124:], "wrongPassphrase",
           "the header of vault B (same passphrase) on the body of vault A")
    vector("body-from-other-vault", a2[:124] + b.file(body(entry("k", "v")), generation=2)[124:], "wrongPassphrase",
           "vault A's header with vault B's body nonce and body")
    vector("wrapped-key-from-other-vault", a2[:76] + b.header()[76:124] + a2[124:], "wrongPassphrase",
           "vault B's wrapped key (and nothing else) in vault A")
    vector("trailing-block", good + bytes(256), "wrongPassphrase",
           "256 zero bytes appended: the length is valid, the body's tag no longer verifies")
    vector("truncated-one-block", good[:420], "wrongPassphrase",
           "cut at a valid length (420 of 676): the body's tag no longer verifies")

    # Structure checked before the KDF.
    vector("empty-file", b"", "corrupt", "zero bytes", reason="truncated (0 bytes)")
    vector("truncated-in-magic", good[:5], "corrupt", "a proper prefix of the magic", reason="truncated (5 bytes)")
    vector("bad-magic", b"hello world, not a vault file" + bytes(500), "corrupt", "no magic",
           reason="not a vault file (bad magic)")
    vector("magic-case", b"\x89vault\r\n" + good[8:], "corrupt", "magic in lower case", reason="not a vault file (bad magic)")
    for cut in (8, 100, 123, 147):
        vector(f"truncated-{cut}", good[:cut], "corrupt", f"cut to {cut} bytes (< header + body nonce)",
               reason=f"truncated ({cut} bytes)")
    for cut in (148, 164, 419):
        vector(f"truncated-{cut}", good[:cut], "corrupt", f"cut to {cut} bytes (< 420)", reason=f"truncated ({cut} bytes)")
    for cut in (421, 675):
        vector(f"truncated-{cut}", good[:cut], "corrupt", f"cut to {cut} bytes (not 164 + 256k)",
               reason=f"truncated or extended ({cut} bytes)")
    vector("trailing-byte", good + b"\0", "corrupt", "one byte appended", reason="truncated or extended (677 bytes)")
    vector("trailing-text", good + b"\n# comment\n", "corrupt", "text appended",
           reason=f"truncated or extended ({len(good) + 11} bytes)")
    for version in (0, 2, 0x100, 0xFFFF):
        vector(f"unsupported-version-{version}", a.file(body(), version=version), "unsupportedVersion",
               f"version {version}", version=version)
    for algorithm in (0, 1, 3, 0xFF):
        vector(f"unsupported-kdf-{algorithm}", a.file(body(), kdf=algorithm), "unsupportedKDF",
               f"kdf byte {algorithm} (1 is Argon2i)", algorithm=algorithm)
    for flags in (1, 0x80):
        vector(f"unknown-flags-{flags:#x}", a.file(body(), flags=flags), "corrupt", f"flags {flags:#x}",
               reason=f"unknown flags {flags:#x}")
    ranges = [("opslimit-0", 0, MEM, "test"), ("opslimit-5", 5, MEM, "test"), ("opslimit-max", 2**64 - 1, MEM, "test"),
              ("memlimit-8191", OPS, 8191, "test"), ("memlimit-1023", OPS, 1023, "test"), ("memlimit-0", OPS, 0, "test"),
              ("memlimit-1GiB-plus-1KiB", OPS, (1 << 30) + 1024, "test"), ("memlimit-4TiB", OPS, 1 << 42, "test"),
              ("memlimit-max", OPS, 2**64 - 1, "test"), ("memlimit-not-KiB", OPS, 8192 + 1, "test"),
              ("test-parameters-standard-policy", OPS, MEM, "standard"),
              ("opslimit-1-standard-policy", 1, 64 << 20, "standard"),
              ("memlimit-64MiB-minus-1KiB-standard-policy", 2, (64 << 20) - 1024, "standard")]
    for label, ops, mem, policy in ranges:
        vector(f"kdf-{label}", a.file(body(), ops=ops, mem=mem), "kdfParametersOutOfRange",
               f"opslimit {ops}, memlimit {mem} under the {policy} policy: refused before Argon2id runs",
               policy=policy, opslimit=ops, memlimit=mem)

    # Structure of the authenticated plaintext.
    vector("bad-padding-nonzero", a.file(body(entry("k", "v")) + b"\0\0\x01"), "corrupt", "a non-zero padding byte",
           reason="bad padding")
    vector("bad-padding-extra-block", a.file(body(entry("k", "v")) + bytes(256)), "corrupt",
           "256 more zero bytes than needed: padding is not minimal", reason="bad padding")
    vector("bad-padding-garbage-entry", a.file(body(entry("k", "v"), count=0)), "corrupt",
           "count 0 but an entry follows: it is non-zero 'padding'", reason="bad padding")
    vector("duplicate-names", a.file(body(entry("k", "1"), entry("k", "2"))), "corrupt", "the same name twice",
           reason="duplicate entry name")
    vector("duplicate-names-canonical", a.file(body(entry("caf\u00e9", "1"), entry("cafe\u0301", "2"))), "corrupt",
           "NFC and NFD forms of one name (canonically equivalent)", reason="duplicate entry name")
    for label, raw in (("0xff", b"\xff"), ("overlong-slash", b"\xc0\xaf"), ("surrogate", b"\xed\xa0\x80"),
                       ("truncated-sequence", b"ab\xe2\x82"), ("latin1", "caf\u00e9".encode("latin-1"))):
        vector(f"name-not-utf8-{label}", a.file(body(entry(b"ok", b"v"), entry(raw, b"v"))), "corrupt",
               f"the second name is not UTF-8 ({label})", reason="entry 1 has a name that is not UTF-8")
    vector("name-length-0", a.file(body(entry(b"", b"v"))), "corrupt", "an empty name",
           reason="entry 0 has a bad name length")
    vector("name-length-4097", a.file(body(entry(b"n" * 4097, b"v"))), "corrupt", "a name of 4,097 bytes",
           reason="entry 0 has a bad name length")
    vector("name-past-end", a.file(body(count=1) + struct.pack("<H", 300) + b"x" * 10), "corrupt",
           "a name length that runs past the plaintext", reason="entry 0 has a bad name length")
    vector("value-length-too-large", a.file(body(count=1) + struct.pack("<H", 1) + b"k" + struct.pack("<I", (64 << 20) + 1)),
           "corrupt", "a value length of 64 MiB + 1", reason="entry 0 has a bad value length")
    vector("value-past-end", a.file(body(count=1) + struct.pack("<H", 1) + b"k" + struct.pack("<I", 1000)), "corrupt",
           "a value length that runs past the plaintext", reason="entry 0 has a bad value length")
    vector("times-past-end", a.file(body(count=1) + struct.pack("<H", 1) + b"k" + struct.pack("<I", 256 - 36 - 7 - 8)),
           "corrupt", "the value ends 8 bytes before the plaintext: no room for the times",
           reason="entry 0 has a bad value length")
    vector("entry-truncated-at-value-length", a.file(body(count=1) + struct.pack("<H", 216) + b"n" * 216), "corrupt",
           "2 bytes remain after the name: no room for the value length", reason="entry 0 truncated")
    vector("entry-truncated-at-name-length", a.file(body(entry("n", b"v" * 196), count=2) + b"\0"), "corrupt",
           "the first entry leaves 1 byte: no room for the second's name length", reason="entry 1 truncated")
    vector("count-exceeds-data", a.file(body(count=10)), "corrupt", "count 10 in 220 bytes (23 bytes per entry at least)",
           reason="entry count 10 exceeds the data")
    vector("count-max", a.file(body(count=2**32 - 1)), "corrupt", "count 2^32 - 1",
           reason=f"entry count {2**32 - 1} exceeds the data")
    vector("count-too-high-by-one", a.file(body(entry("k", "v"), count=2)), "corrupt",
           "count 2 but one entry: the second starts in the zero padding (name length 0)",
           reason="entry 1 has a bad name length")

    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith((".vault", ".expect")): os.remove(os.path.join(OUT, old))
    names = set()
    for name, data, expect, comment, passphrase, policy, fields in VECTORS:
        assert name not in names, name
        names.add(name)
        with open(os.path.join(OUT, name + ".vault"), "wb") as f: f.write(data)
        lines = [f"expect: {expect}", f"passphrase: {passphrase}", f"kdf-policy: {policy}"]
        if "reason" in fields:
            lines.append(f"code: {corruption_code(fields['reason'])}")
        lines += [f"{key}: {value}" for key, value in fields.items()]
        lines += [f"python-exit: {0 if expect == 'success' else 3 if expect == 'wrongPassphrase' else 6}",
                  f"comment: {comment}"]
        with open(os.path.join(OUT, name + ".expect"), "w", encoding="utf-8") as f: f.write("\n".join(lines) + "\n")
    print(f"wrote {len(VECTORS)} vectors to {OUT}")

if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generator of the test vectors of vault format v2 (docs/FORMAT.md, "version 2"), with PyNaCl only.

    python3 Tests/Vectors/generate_v2.py          # rewrites Tests/Vectors/v2/*.vault and expected.json
    python3 Tests/Vectors/generate_v2.py DIR      # writes them to DIR instead

Deterministic: every "random" field (vault id, data key, key ids, entry ids, salts, nonces, replica ids) is
BLAKE2b of a fixed label under a fixed seed, so running it again rewrites byte-identical files (a diff means
the generator changed). Every vault uses the passphrase "correct horse battery staple" and the test KDF
parameters (opslimit 1, memlimit 8192): a reader needs its test switch (VAULT_TESTING_INSECURE_KDF=1).

expected.json maps each file name to its outcome: for a valid file the object Tests/Interop/read_vault_v2.py
prints (computed here from the model, not by running the reader); for a malformed one {"exit": 6 or 3,
"code": CODE}, CODE one of the library's `Corruption` codes (or wrong_passphrase, exit 3, the only one;
kdf_parameters_out_of_range, unsupported_version). Each malformed file breaks exactly one rule (or, for the
vectors that pin the order of the checks, the rule checked first): everything the rule does not concern is well
formed and, past the KDF, correctly sealed. README.md says in one line per file which rule it breaks.
Tests/Vectors/check_v2.py replays them.
"""
import base64, copy, json, os, struct, sys
from nacl import encoding, hash, pwhash, secret

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "v2")
PASSPHRASE = b"correct horse battery staple"
OPS, MEM = 1, 8192
MAGIC = b"\x89VAULT\r\n"
SEED = b"vault format v2 test vectors"
T = 1_700_000_000_000  # base milliseconds since the epoch


def det(label, n):
    """n deterministic bytes for label (n <= 64)."""
    return hash.blake2b(label.encode(), digest_size=n, key=SEED, encoder=encoding.RawEncoder)


def blake(data, key=None):
    if key is None:
        return hash.blake2b(data, digest_size=32, encoder=encoding.RawEncoder)
    return hash.blake2b(data, digest_size=32, key=key, encoder=encoding.RawEncoder)


def b(x):
    return x.encode() if isinstance(x, str) else x


_kek = {}


def kek(passphrase, salt, ops=OPS, mem=MEM):
    if (passphrase, salt, ops, mem) not in _kek:
        _kek[passphrase, salt, ops, mem] = pwhash.argon2id.kdf(32, passphrase, salt, opslimit=ops, memlimit=mem)
    return _kek[passphrase, salt, ops, mem]


DATA_KEY = det("data key", 32)
R1 = int.from_bytes(det("replica 1", 8), "little")
R2 = int.from_bytes(det("replica 2", 8), "little")
RA, RB = min(R1, R2), max(R1, R2)  # RA < RB as u64


ARGON2ID_LENGTH = 8 + 8 + 16 + 24 + 48  # opslimit, memlimit, salt, key_nonce, wrapped_key


def argon2id(passphrase=PASSPHRASE, label="stanza", ops=OPS, mem=MEM, data_key=DATA_KEY, length=None):
    """An argon2id stanza (type 1). ops/mem are the values written; the key is always wrapped under OPS/MEM."""
    salt, nonce = det(f"{label} salt", 16), det(f"{label} key nonce", 24)
    wrapped = secret.SecretBox(kek(passphrase, salt)).encrypt(data_key, nonce).ciphertext
    assert len(wrapped) == 48
    body = struct.pack("<QQ", ops, mem) + salt + nonce + wrapped
    assert len(body) == ARGON2ID_LENGTH
    return (1, body if length is None else (body + bytes(max(0, length - ARGON2ID_LENGTH)))[:length])


# ---------------------------------------------------------------- the model and its encoding

def stamp(ms, counter, replica):
    return (ms, counter, replica)


def time(ms, counter):
    return ms << 16 | counter


def field(name, value, secret_=False, flags=None, **over):
    return dict(name=name, value=value, flags=(1 if secret_ else 0) if flags is None else flags, **over)


def version(modified, fields, conflict=False, flags=None, **over):
    return dict(modified=modified, fields=fields, flags=(1 if conflict else 0) if flags is None else flags, **over)


def entry(label, name, created, modified, fields, history=(), **over):
    return dict(id=det(f"entry {label} id", 16), name=name, created=created, modified=modified,
                fields=list(fields), history=list(history), **over)


def enc_stamp(s):
    ms, counter, replica = s
    return struct.pack("<QQ", time(ms, counter), replica)


def enc_field(f):
    name, value = b(f["name"]), b(f["value"])
    return (struct.pack("<BB", f["flags"], f.get("name_length", len(name))) + name
            + struct.pack("<I", f.get("value_length", len(value))) + value)


def enc_fields(fields, count=None):
    return struct.pack("<H", len(fields) if count is None else count) + b"".join(map(enc_field, fields))


def enc_version(v):
    return enc_stamp(v["modified"]) + struct.pack("<B", v["flags"]) + enc_fields(v["fields"], v.get("field_count"))


def enc_entry(e):
    name = b(e["name"])
    return (e["id"] + struct.pack("<H", e.get("name_length", len(name))) + name + enc_stamp(e["created"])
            + enc_stamp(e["modified"]) + enc_fields(e["fields"], e.get("field_count"))
            + struct.pack("<B", e.get("version_count", len(e["history"]))) + b"".join(map(enc_version, e["history"])))


def payload(doc):
    """The plaintext after the binding hash and before the padding (doc["payload"]: these bytes instead)."""
    if "payload" in doc:
        return doc["payload"]
    return (struct.pack("<I", doc.get("replica_count", len(doc["replicas"])))
            + b"".join(struct.pack("<QQ", rid, time(*t)) for rid, t in doc["replicas"])
            + struct.pack("<I", doc.get("entry_count", len(doc["entries"]))) + b"".join(map(enc_entry, doc["entries"]))
            + struct.pack("<I", doc.get("tombstone_count", len(doc["tombstones"])))
            + b"".join(tid + enc_stamp(s) for tid, s in doc["tombstones"]))


def enc_header(doc):
    stanzas = b"".join(struct.pack("<HI", kind, len(body) if i not in doc.get("stanza_lengths", {})
                                   else doc["stanza_lengths"][i]) + body
                       for i, (kind, body) in enumerate(doc["stanzas"]))
    stanzas += doc.get("header_trailing", b"")
    rest = (doc["vault_id"] + struct.pack("<Q", doc["generation"]) + doc["data_key_id"]
            + struct.pack("<H", doc.get("stanza_count", len(doc["stanzas"]))) + stanzas)
    length = 8 + 2 + 4 + len(rest)
    return MAGIC + struct.pack("<HI", doc.get("version", 2), doc.get("header_length", length)) + rest


def seal(doc, name, data_key=DATA_KEY, header=None, mac_over=None, binding_over=None, padding=None, body_key=None):
    """header || header_mac || body_nonce || SecretBox(body_key, body_nonce, binding || payload || padding).

    mac_over: compute the MAC over this header instead (a changed header); binding_over: the binding hash of
    these bytes instead; padding: the padding bytes instead of the minimal zeros; body_key: seal under it."""
    header = header if header is not None else enc_header(doc)
    mac_key = blake(b"vault v2 header mac", key=data_key)
    mac = blake(mac_over if mac_over is not None else header, key=mac_key)
    plain = blake(binding_over if binding_over is not None else header + mac) + payload(doc)
    plain += bytes(-len(plain) % 256) if padding is None else padding
    nonce = det(f"body nonce {name}", 24)
    key = body_key or blake(b"vault v2 body key", key=data_key)
    return header + mac + nonce + secret.SecretBox(key).encrypt(plain, nonce).ciphertext


# ---------------------------------------------------------------- expected reader output

def shown_value(value):
    value = b(value)
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def shown_stamp(s):
    return f"{s[0]}.{s[1]}@{s[2]:016x}"


def shown_fields(fields):
    return [{"name": b(f["name"]).decode(), "secret": bool(f["flags"] & 1), "value": shown_value(f["value"])}
            for f in fields]


def shown(doc):
    return {"vault_id": doc["vault_id"].hex(), "generation": doc["generation"],
            "entries": {b(e["name"]).decode(): {
                "id": e["id"].hex(), "fields": shown_fields(e["fields"]), "created": shown_stamp(e["created"]),
                "modified": shown_stamp(e["modified"]),
                "history": [{"modified": shown_stamp(v["modified"]), "conflict": bool(v["flags"] & 1),
                             "fields": shown_fields(v["fields"])} for v in e["history"]]}
                for e in doc["entries"]},
            "tombstones": {tid.hex(): shown_stamp(s) for tid, s in doc["tombstones"]},
            "replicas": {f"{rid:016x}": f"{t[0]}.{t[1]}" for rid, t in doc["replicas"]}}


# ---------------------------------------------------------------- the documents

OTP = "otpauth://totp/GitHub:alice?secret=JBSWY3DPEHPK3PXP&issuer=GitHub"
BINARY = b"\xff\xfe\x00\x80 not UTF-8 \xc3\x28"


def basic():
    """valid-basic: 3 entries, one with 2 history versions (one a conflict), a tombstone, 2 replicas."""
    github = entry("github", "github", stamp(T, 0, RA), stamp(T + 3000, 0, RA), [
        field("username", "alice"), field("password", "correct-horse-42", True),
        field("url", "https://github.com/login"), field("otp", OTP, True)], [
        version(stamp(T + 2000, 1, RB), [field("username", "alice"), field("password", "from-replica-b", True)],
                conflict=True),
        version(stamp(T + 1000, 0, RA), [field("username", "alice"), field("password", "first", True)])])
    unicode_ = entry("unicode", "Schl\u00fcssel \U0001F511 caf\u00e9/\u043a\u043b\u044e\u0447",
                     stamp(T + 4000, 2, RB), stamp(T + 4000, 2, RB), [
                         field("notes", "\u00dcn\u00efc\u00f6d\u00e9 \u2713"), field("blob", BINARY, True),
                         field("empty", "")])
    bare = entry("bare", "bare", stamp(T + 500, 0, RA), stamp(T + 500, 0, RA), [])
    return {"vault_id": det("vault id", 16), "generation": 7, "data_key_id": det("data key id", 16),
            "stanzas": [argon2id()],
            "replicas": [(RA, (T + 5000, 0)), (RB, (T + 4000, 2))],
            "entries": [github, unicode_, bare],
            "tombstones": [(det("tombstone id", 16), stamp(T + 4500, 0, RA))]}


def small():
    """A one-entry document for the malformed plaintexts (the plaintext stays one 256-byte block)."""
    return {"vault_id": det("vault id", 16), "generation": 3, "data_key_id": det("data key id", 16),
            "stanzas": [argon2id()], "replicas": [(RA, (T + 100, 0))],
            "entries": [entry("k", "k", stamp(T, 0, RA), stamp(T, 0, RA), [field("password", "v", True)])],
            "tombstones": []}


def limits():
    """Every cap at its maximum: a 4,096-byte name, 1,024 fields, a 255-byte field name, 10 versions holding
    exactly 65,536 bytes of field names and values."""
    d = small()
    fields = [field("f" * 255, "x")] + [field(f"f{i}", str(i)) for i in range(1, 1024)]
    history = []
    for i in range(10):  # each version: "notes" (5) + 6,548 bytes = 6,553; the last 6 more: 65,536 in all
        history.append(version(stamp(T + 900 - i, 0, RA), [field("notes", det(f"v{i}", 1).hex()[0] * (6548 + 6 * (i == 9)))]))
    d["entries"] = [entry("limits", "\u00e9" * 2048, stamp(T, 0, RA), stamp(T + 1000, 0, RA), fields, history)]
    d["replicas"] = [(RA, (T + 1000, 0))]
    return d


VECTORS = {}  # name -> (bytes, expected, the rule it breaks)


def valid(name, doc, rule):
    VECTORS[name] = (seal(doc, name), shown(doc), rule)


def bad(name, data, exit_code, code, rule):
    VECTORS[name] = (data, {"exit": exit_code, "code": code}, rule)


def plain_bad(name, mutate, code, rule, base=small):
    """A correctly sealed file whose plaintext breaks one rule (mutate changes the model in place)."""
    d = base()
    mutate(d)
    bad(name, seal(d, name), 6, code, rule)


def not_reader_rules():
    """What a reader does not check: generation 0, created after modified, history oldest first and newer than
    the entry, entries and tombstones in no order, timestamps of replicas absent from the table, the table's
    times behind the timestamps; and the largest time (2^48 - 1 ms, counter 65,535)."""
    d = small()
    other = int.from_bytes(det("replica absent from the table", 8), "little")
    top = (1 << 48) - 1
    d.update(generation=0, replicas=[(RA, (T, 0))], entries=[
        entry("nr b", "b", stamp(T + 9000, 0, RA), stamp(T + 1000, 0, other), [field("password", "b", True)], [
            version(stamp(T + 2000, 0, RA), [field("password", "older", True)]),
            version(stamp(top, 0xFFFF, other), [field("password", "newer", True)])]),
        entry("nr a", "a", stamp(top, 0xFFFF, RB), stamp(T, 0, RA), [])],
        tombstones=[(det("tombstone z", 16), stamp(T + 5, 0, other)), (det("tombstone y", 16), stamp(T + 4, 0, RA))])
    return d


def edge_names():
    """Names next to the refused ones: no control character (U+00A0, U+200B, U+2028, U+FEFF are not Cc), and
    distinct under canonical equivalence though equal under compatibility (NFKC): "file" and "\\ufb01le"."""
    d = small()
    d["entries"] = [
        entry(f"edge {i}", name, stamp(T + i, 0, RA), stamp(T + i, 0, RA), fields)
        for i, (name, fields) in enumerate([
            ("nbsp\u00a0x", [field("\u00a0", "nbsp")]),
            ("zero\u200bwidth", [field("zero\u200bwidth", "zwsp")]),
            ("line\u2028separator", []),
            ("\ufeffbom", []),
            ("file", [field("fi", "1"), field("\ufb01", "2")]),
            ("\ufb01le", []),
            ("cafe\u0301", [field("A\u030a", "not NFC, alone")])])]
    return d


def replica_order():
    """A replica table sorted as unsigned 64-bit integers: 0xff < 0x100 (not as the little-endian bytes) and
    0x7fff_ffff_ffff_ffff < 0x8000_0000_0000_0000 (not as signed integers)."""
    d = small()
    d["replicas"] = [(0xFF, (T, 0)), (0x100, (T, 1)), (RA, (T + 100, 0)), ((1 << 63) - 1, (T, 2)), (1 << 63, (T, 3)),
                     ((1 << 64) - 1, (T, 4))]
    assert [r for r, _ in d["replicas"]] == sorted(r for r, _ in d["replicas"])
    return d


CUT_HEAD_ID = det("entry cut id", 16)


def cut(name, tail, rule, name_length=None):
    """A one-entry plaintext of exactly 256 bytes that ends inside the entry: the entry's name takes the bytes
    the tail (what follows the name) leaves, or name_length says more than are there."""
    head = (struct.pack("<I", 1) + struct.pack("<QQ", RA, time(T + 100, 0)) + struct.pack("<I", 1) + CUT_HEAD_ID)
    room = 256 - 32 - len(head) - 2 - len(tail)
    assert 1 <= room <= 4096 and (name_length is None or name_length > room)
    d = small()
    d["payload"] = head + struct.pack("<H", room if name_length is None else name_length) + b"n" * room + tail
    assert 32 + len(d["payload"]) == 256
    bad(name, seal(d, name, padding=b""), 6, "entry_truncated", rule)


def main():
    # ---- valid
    valid("valid-basic.vault", basic(), "none: 3 entries, fields (secret, binary, empty), history with a conflict, "
          "a tombstone, 2 replicas")
    d = basic()
    d["stanzas"] = [(0x7777, det("unknown stanza body", 21))] + d["stanzas"]
    valid("valid-unknown-stanza.vault", d, "none: an unknown stanza type (0x7777) before the argon2id one, skipped")
    d = basic()
    d["stanzas"] = [(2, det("x25519 stanza", 32)), (3, b""), argon2id()]
    valid("valid-reserved-stanzas.vault", d, "none: reserved stanza types 2 and 3 (one empty), skipped")
    d = basic()
    d["stanzas"] = [argon2id(b"another passphrase", "other stanza"), argon2id()]
    valid("valid-second-stanza.vault", d, "none: the first argon2id stanza is another passphrase's, the second opens")
    d = small()
    d.update(replicas=[], entries=[], tombstones=[], generation=1)
    valid("valid-empty.vault", d, "none: no replica, entry or tombstone")
    d = small()
    n = len(payload(d)) + 32
    d["entries"][0]["fields"][0]["value"] = "v" * (1 + 512 - n)  # plaintext exactly 512 bytes: no padding
    assert (len(payload(d)) + 32) % 256 == 0
    valid("valid-no-padding.vault", d, "none: the plaintext is exactly 512 bytes, no padding")
    valid("valid-limits.vault", limits(), "none: every cap at its maximum (4,096-byte name, 1,024 fields, 255-byte "
          "field name, 10 versions of 65,536 bytes)")
    valid("valid-not-reader-rules.vault", not_reader_rules(), "none: breaks only what a reader does not check "
          "(generation 0, created > modified, history order, entry/tombstone order, replicas absent from the table), "
          "largest time")
    valid("valid-edge-names.vault", edge_names(), "none: names with U+00A0, U+200B, U+2028, U+FEFF (not control "
          "characters); \"file\"/\"\\ufb01le\" and \"fi\"/\"\\ufb01\" (compatibility-, not canonically equivalent); "
          "a name not in NFC")
    valid("valid-replica-order.vault", replica_order(), "none: replica table sorted as unsigned u64 (0xff < 0x100, "
          "2^63-1 < 2^63 < 2^64-1)")

    good = seal(basic(), "good")
    hl = struct.unpack_from("<I", good, 10)[0]

    # ---- refused before any key (reading step 1), in the order of the checks
    bad("empty.vault", b"", 6, "truncated", "magic: an empty file (a prefix of the magic)")
    bad("truncated.vault", MAGIC[:5], 6, "truncated", "magic: 5 bytes, a prefix of the magic")
    bad("bad-magic-short.vault", MAGIC[:6] + b"\n", 6, "bad_magic", "magic: 7 bytes, not a prefix of the magic")
    bad("bad-magic.vault", b"\x89vault\r\n" + good[8:], 6, "bad_magic", "magic: lowercase")
    bad("truncated-before-version.vault", MAGIC + struct.pack("<H", 3) + b"\0\0", 6, "truncated",
        "at least 14 bytes, checked before the version (3 here)")
    bad("unsupported-version-short-header.vault", MAGIC + struct.pack("<HI", 3, 5), 6, "unsupported_version",
        "version 3, checked before header_length (5) and the size (14 bytes)")
    bad("unsupported-version.vault", good[:8] + struct.pack("<H", 3) + good[10:], 6, "unsupported_version",
        "version 3")
    bad("version-1.vault", good[:8] + struct.pack("<H", 1) + good[10:], 6, "unsupported_version",
        "version 1 in a version-2 file")
    d = basic(); d["header_length"] = 55
    bad("bad-header-length.vault", seal(d, "bad-header-length"), 6, "bad_header_length", "header_length 55 < 56")
    d = basic(); d["header_length"] = 65537
    bad("bad-header-length-too-large.vault", seal(d, "bad-header-length-too-large"), 6, "bad_header_length",
        "header_length 65,537 > 65,536 (and past the end of the file)")
    bad("truncated-in-header.vault", good[:hl - 1], 6, "truncated", "the file ends one byte before header_length")
    d = basic(); d["stanzas"] = [(0x7777, det("unknown stanza body", 21)), argon2id()]
    d["stanza_lengths"] = {0: 21 + 6 + ARGON2ID_LENGTH + 1}  # one byte past the header
    bad("bad-stanza-length.vault", seal(d, "bad-stanza-length"), 6, "bad_stanza",
        "stanza 0's body_length runs one byte past header_length")
    d = basic(); d["stanza_count"] = 2
    bad("stanza-count-too-high.vault", seal(d, "stanza-count-too-high"), 6, "bad_stanza",
        "stanza_count 2, one stanza: stanza 1's 6-byte prefix is past header_length")
    d = basic(); d["stanzas"] = [argon2id(length=ARGON2ID_LENGTH - 1)]
    bad("argon2id-stanza-short.vault", seal(d, "argon2id-stanza-short"), 6, "bad_stanza", "argon2id stanza of 103 bytes")
    d = basic(); d["stanzas"] = [argon2id(length=ARGON2ID_LENGTH + 1)]
    bad("argon2id-stanza-long.vault", seal(d, "argon2id-stanza-long"), 6, "bad_stanza", "argon2id stanza of 105 bytes")
    d = basic(); d["stanzas"] = [argon2id(length=112)]
    bad("argon2id-stanza-112.vault", seal(d, "argon2id-stanza-112"), 6, "bad_stanza",
        "argon2id stanza of 112 bytes (104 + 8 zero bytes)")
    d = basic(); d["stanzas"] = [argon2id(ops=5)]
    bad("kdf-out-of-range.vault", seal(d, "kdf-out-of-range"), 6, "kdf_parameters_out_of_range", "opslimit 5 > 4")
    d = basic(); d["stanzas"] = [argon2id(mem=MEM + 1)]
    bad("kdf-memlimit-not-kib.vault", seal(d, "kdf-memlimit-not-kib"), 6, "kdf_parameters_out_of_range",
        "memlimit 8,193, not a multiple of 1,024")
    d = basic(); d["stanzas"] = [argon2id(), argon2id(label="second", mem=(1 << 30) + 1024)]
    bad("kdf-out-of-range-second-stanza.vault", seal(d, "kdf-out-of-range-second-stanza"), 6,
        "kdf_parameters_out_of_range", "the second argon2id stanza's memlimit is 1 GiB + 1 KiB")
    d = basic(); d["stanzas"] = [argon2id(ops=5), (0x7777, det("unknown stanza body", 21))]
    d["stanza_lengths"] = {1: 22}
    bad("kdf-out-of-range-before-bad-stanza.vault", seal(d, "kdf-out-of-range-before-bad-stanza"), 6,
        "kdf_parameters_out_of_range", "stanza 0's opslimit 5, checked before stanza 1 runs past the header")
    d = basic(); d["stanzas"] = [argon2id(ops=5)]; d["header_trailing"] = bytes(4)
    bad("kdf-out-of-range-before-header-bytes.vault", seal(d, "kdf-out-of-range-before-header-bytes"), 6,
        "kdf_parameters_out_of_range", "opslimit 5, checked before the 4 header bytes after the last stanza")
    d = basic(); d["header_trailing"] = bytes(4)
    bad("header-bytes-after-stanzas.vault", seal(d, "header-bytes-after-stanzas"), 6, "bad_header_length",
        "4 bytes between the last stanza and header_length")
    d = basic(); d["stanzas"] = [(0x7777, det("unknown stanza body", 21))]
    bad("no-usable-stanza.vault", seal(d, "no-usable-stanza"), 6, "no_usable_stanza", "only an unknown stanza")
    d = basic(); d["stanzas"] = []
    bad("no-stanza.vault", seal(d, "no-stanza"), 6, "no_usable_stanza", "no stanza (header_length 56)")
    d = basic(); d["stanzas"] = [(2, det("x25519 stanza", 32))]
    nd = seal(d, "no-usable-stanza-truncated-body")
    bad("no-usable-stanza-truncated-body.vault", nd[:struct.unpack_from("<I", nd, 10)[0] + 100], 6, "no_usable_stanza",
        "only a reserved (x25519) stanza, checked before the file's size (100 bytes after the header)")
    bad("truncated-body.vault", good[:hl + 32 + 24 + 16 + 255], 6, "truncated",
        "header_length + 327 bytes (< header_length + 328)")
    bad("size-mismatch.vault", good + b"\0", 6, "size_mismatch", "one byte more: the plaintext is 256k + 1 bytes")

    # ---- the key (exit 3), then the header MAC, the body and the binding (exit 6)
    d = basic(); d["stanzas"] = [argon2id(b"another passphrase", "other stanza")]
    bad("wrong-passphrase.vault", seal(d, "wrong-passphrase"), 3, "wrong_passphrase",
        "the only stanza wraps the key under another passphrase")
    g = bytearray(good); g[hl - 10] ^= 1  # in the wrapped key of the only stanza (the header's last bytes)
    bad("stanza-wrapped-key-edited.vault", bytes(g), 3, "wrong_passphrase",
        "a bit of the stanza's wrapped_key flipped: no stanza opens")
    d = basic(); e = copy.deepcopy(d); e["generation"] += 1
    bad("header-mac-mismatch.vault", seal(e, "header-mac-mismatch", mac_over=enc_header(d)), 6, "header_mac_mismatch",
        "generation changed after the MAC was computed")
    g = bytearray(good); g[hl + 5] ^= 1
    bad("header-mac-edited.vault", bytes(g), 6, "header_mac_mismatch", "a bit of header_mac flipped")
    d = basic(); d["stanzas"] = [(0x7777, det("unknown stanza body", 21))] + d["stanzas"]
    g = bytearray(seal(d, "unknown-stanza-edited")); g[56 + 6 + 3] ^= 1
    bad("unknown-stanza-edited.vault", bytes(g), 6, "header_mac_mismatch",
        "a bit of an unknown stanza's body flipped (the MAC covers skipped stanzas)")
    g = bytearray(good); g[-1] ^= 1
    bad("body-tampered.vault", bytes(g), 6, "body_mac_mismatch", "the body's last byte flipped")
    g = bytearray(good); g[hl + 32 + 3] ^= 1
    bad("body-nonce-edited.vault", bytes(g), 6, "body_mac_mismatch", "a bit of body_nonce flipped")
    bad("body-under-data-key.vault", seal(basic(), "body-under-data-key", body_key=DATA_KEY), 6, "body_mac_mismatch",
        "the body sealed under the data key instead of body_key")
    d = basic(); e = copy.deepcopy(d); e["generation"] -= 1
    h = enc_header(e)
    bad("body-binding-mismatch.vault",
        seal(d, "body-binding-mismatch", binding_over=h + blake(h, key=blake(b"vault v2 header mac", key=DATA_KEY))),
        6, "body_binding_mismatch", "the binding hash is the previous generation's header || header_mac")
    bad("body-binding-header-only.vault", seal(basic(), "body-binding-header-only", binding_over=enc_header(basic())),
        6, "body_binding_mismatch", "the binding hash covers the header without header_mac")

    # ---- the plaintext (exit 6)
    rest = 256 - 32 - 4  # after the replica count of small()'s 256-byte plaintext
    plain_bad("replica-count-exceeds-data.vault", lambda d: d.update(replica_count=rest // 16 + 1),
              "entry_count_exceeds_data", f"replica_count {rest // 16 + 1}: {rest} bytes hold at most {rest // 16}")
    rest = 256 - 32 - 4 - 16 - 4  # after the entry count (one replica)
    plain_bad("entry-count-exceeds-data.vault", lambda d: d.update(entry_count=rest + 1), "entry_count_exceeds_data",
              f"entry_count {rest + 1} with {rest} bytes left (more than a byte each)")
    rest = 256 - 32 - len(payload(small()))
    plain_bad("tombstone-count-exceeds-data.vault", lambda d: d.update(tombstone_count=rest // 32 + 1),
              "entry_count_exceeds_data", f"tombstone_count {rest // 32 + 1}: {rest} bytes hold at most {rest // 32}")
    plain_bad("entry-truncated.vault", lambda d: d["entries"][0]["fields"][0].update(value_length=1_000_000),
              "entry_truncated", "a field's value_length (1,000,000) runs past the end of the plaintext")
    s0 = enc_stamp(stamp(T, 0, RA))
    pw = struct.pack("<BB", 1, 8) + b"password"
    cut("entry-truncated-name.vault", b"", "the plaintext ends inside the name (name_length 4,096)", name_length=4096)
    cut("entry-truncated-timestamp.vault", s0 + s0[:12], "the plaintext ends inside the modified timestamp")
    cut("entry-truncated-field.vault", s0 + s0 + struct.pack("<H", 2) + pw + struct.pack("<I", 1) + b"v",
        "field_count 2, the plaintext ends after the first field")
    cut("entry-truncated-field-name.vault", s0 + s0 + struct.pack("<HBB", 1, 0, 20) + b"user",
        "the plaintext ends inside a field name (name_length 20)")
    cut("entry-truncated-value-length.vault", s0 + s0 + struct.pack("<H", 1) + pw + b"\x05\x00",
        "the plaintext ends inside a field's value_length")
    cut("entry-truncated-value.vault", s0 + s0 + struct.pack("<H", 1) + pw + struct.pack("<I", 50) + b"abc",
        "the plaintext ends inside a field value (value_length 50)")
    cut("entry-truncated-version-count.vault", s0 + s0 + struct.pack("<H", 0),
        "the plaintext ends before the version_count")
    cut("entry-truncated-version.vault", s0 + s0 + struct.pack("<HB", 0, 1) + s0[:5],
        "version_count 1, the plaintext ends inside the version's timestamp")
    cut("entry-truncated-version-field.vault", s0 + s0 + struct.pack("<HB", 0, 1) + s0 + struct.pack("<BH", 0, 1) + pw
        + struct.pack("<I", 10) + b"abc", "the plaintext ends inside a version's field value")
    cut("tombstone-count-truncated.vault", s0 + s0 + struct.pack("<HB", 0, 0) + b"\0\0",
        "the plaintext ends 2 bytes into the tombstone count")
    plain_bad("bad-name-length.vault", lambda d: d["entries"][0].update(name=""), "bad_name_length",
              "entry name_length 0")
    plain_bad("bad-name-length-4097.vault", lambda d: d["entries"][0].update(name="n" * 4097), "bad_name_length",
              "entry name_length 4,097 (the bytes are there)")
    plain_bad("name-not-utf8.vault", lambda d: d["entries"][0].update(name=b"caf\xe9"), "name_not_utf8",
              "entry name in Latin-1")
    plain_bad("name-surrogate.vault", lambda d: d["entries"][0].update(name=b"\xed\xa0\x80"), "name_not_utf8",
              "entry name: an encoded surrogate (U+D800)")
    plain_bad("name-overlong.vault", lambda d: d["entries"][0].update(name=b"\xc0\xaf"), "name_not_utf8",
              "entry name: an overlong encoding of '/'")
    plain_bad("name-control-character.vault", lambda d: d["entries"][0].update(name="tab\there"), "bad_name",
              "entry name with U+0009 (C0)")
    plain_bad("name-del.vault", lambda d: d["entries"][0].update(name="del\u007f"), "bad_name",
              "entry name with U+007F (DEL)")
    plain_bad("name-c1-control.vault", lambda d: d["entries"][0].update(name="c1\u009f"), "bad_name",
              "entry name with U+009F (C1)")

    def second(d, name="k2", label="k2", id_=None):
        e = entry(label, name, stamp(T + 1, 0, RA), stamp(T + 1, 0, RA), [field("username", "bob")])
        if id_ is not None:
            e["id"] = id_
        d["entries"].append(e)
    plain_bad("duplicate-name.vault", lambda d: second(d, "k"), "duplicate_name", "two entries named \"k\"")
    plain_bad("duplicate-name-canonical.vault",
              lambda d: (d["entries"][0].update(name="caf\u00e9"), second(d, "cafe\u0301")), "duplicate_name",
              "entry names \"caf\\u00e9\" and \"cafe\\u0301\" (canonically equivalent)")
    plain_bad("duplicate-name-singleton.vault",
              lambda d: (d["entries"][0].update(name="\u212b"), second(d, "\u00c5")), "duplicate_name",
              "entry names U+212B ANGSTROM SIGN and U+00C5 (NFC maps the first to the second)")
    plain_bad("duplicate-id.vault", lambda d: second(d, id_=d["entries"][0]["id"]), "duplicate_id",
              "two entries with one id")
    plain_bad("tombstone-id-of-entry.vault",
              lambda d: d["tombstones"].append((d["entries"][0]["id"], stamp(T + 50, 0, RA))), "duplicate_id",
              "a tombstone with an entry's id")
    plain_bad("duplicate-tombstone.vault",
              lambda d: d["tombstones"].extend([(det("t", 16), stamp(T + 50, 0, RA)), (det("t", 16), stamp(T + 60, 0, RA))]),
              "duplicate_id", "two tombstones with one id")
    plain_bad("bad-field-flags.vault", lambda d: d["entries"][0]["fields"][0].update(flags=0x03), "bad_field",
              "field flags 0x03 (bit 1 reserved)")
    plain_bad("duplicate-field-name.vault", lambda d: d["entries"][0]["fields"].append(field("password", "w")),
              "bad_field", "two fields named \"password\" in one entry")
    plain_bad("duplicate-field-name-canonical.vault",
              lambda d: d["entries"][0]["fields"].extend([field("caf\u00e9", "1"), field("cafe\u0301", "2")]),
              "bad_field", "field names \"caf\\u00e9\" and \"cafe\\u0301\" (canonically equivalent) in one entry")
    plain_bad("field-name-empty.vault", lambda d: d["entries"][0]["fields"].append(field("", "w")), "bad_field",
              "field name_length 0")
    plain_bad("field-name-not-utf8.vault", lambda d: d["entries"][0]["fields"].append(field(b"p\xffw", "w")),
              "bad_field", "field name not UTF-8 (0xFF)")
    plain_bad("field-name-control-character.vault",
              lambda d: d["entries"][0]["fields"].append(field("note\u009b", "w")), "bad_field",
              "field name with U+009B (C1)")
    plain_bad("field-name-del.vault", lambda d: d["entries"][0]["fields"].append(field("note\u007f", "w")),
              "bad_field", "field name with U+007F (DEL)")
    plain_bad("too-many-fields.vault",
              lambda d: d["entries"][0].update(fields=[field(f"f{i}", "") for i in range(1025)]), "bad_field",
              "1,025 fields in one entry")
    plain_bad("bad-value-length.vault",
              lambda d: d["entries"][0]["fields"][0].update(value_length=(64 << 20) + 1), "bad_value_length",
              "value_length 64 MiB + 1")
    plain_bad("bad-clock.vault", lambda d: d["replicas"].append((RA, (T + 200, 0))), "bad_clock",
              "a replica id twice in the replica table")
    plain_bad("replicas-unsorted.vault", lambda d: d.update(replicas=[(RB, (T + 100, 0)), (RA, (T + 100, 0))]),
              "bad_clock", "replica table in decreasing order")
    plain_bad("replicas-unsorted-signed.vault",
              lambda d: d.update(replicas=[(1 << 63, (T, 0)), ((1 << 63) - 1, (T, 0))]), "bad_clock",
              "replica ids 2^63 then 2^63-1 (increasing only as signed integers)")
    plain_bad("replicas-unsorted-bytes.vault", lambda d: d.update(replicas=[(0x100, (T, 0)), (0xFF, (T, 0))]),
              "bad_clock", "replica ids 0x100 then 0xff (increasing only as little-endian bytes)")
    plain_bad("history-too-many.vault", lambda d: d["entries"][0].update(
        history=[version(stamp(T - 1 - i, 0, RA), [field("password", str(i), True)]) for i in range(11)]),
        "bad_history", "11 history versions")
    plain_bad("history-too-large.vault", lambda d: d["entries"][0].update(
        history=[version(stamp(T - 1, 0, RA), [field("notes", "x" * (65536 - 5 + 1))])]), "bad_history",
        "history of 65,537 bytes of field names and values")
    plain_bad("bad-history-flags.vault", lambda d: d["entries"][0].update(
        history=[version(stamp(T - 1, 0, RA), [field("password", "old", True)], flags=0x81)]), "bad_history",
        "version flags 0x81 (bit 7 reserved)")
    plain_bad("history-duplicate-field-name.vault", lambda d: d["entries"][0].update(
        history=[version(stamp(T - 1, 0, RA), [field("password", "a", True), field("password", "b", True)])]),
        "bad_field", "two fields named \"password\" in one history version")
    d = small()
    n = 32 + len(payload(d))
    bad("bad-padding.vault", seal(d, "bad-padding", padding=bytes(256 - n - 1) + b"\x01"), 6, "bad_padding",
        "a padding byte is 0x01")
    bad("padding-not-minimal.vault", seal(d, "padding-not-minimal", padding=bytes(256 - n + 256)), 6, "bad_padding",
        "256 bytes of padding too many")

    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith(".vault") and old not in VECTORS:
            os.remove(os.path.join(OUT, old))
    for name, (data, _, _) in sorted(VECTORS.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    expected = {name: outcome for name, (_, outcome, _) in VECTORS.items()}
    with open(os.path.join(OUT, "expected.json"), "wb") as f:
        f.write(json.dumps(expected, ensure_ascii=False, sort_keys=True, indent=1).encode() + b"\n")
    lines = ["# Format v2 test vectors", "",
             "Written by `Tests/Vectors/generate_v2.py` (never edit by hand), replayed by `Tests/Vectors/check_v2.py`;",
             "passphrase \"correct horse battery staple\", test KDF parameters. `expected.json`: the outcome of each",
             "file. One line per file, by name: outcome: the rule it breaks. Not a vector (too big to commit): a",
             "file of 1 GiB + 65,609 bytes with the magic, `too_large` (exit 6), checked right after the magic.", ""]
    for name, (_, outcome, rule) in sorted(VECTORS.items()):
        what = "valid" if "exit" not in outcome else f"exit {outcome['exit']} {outcome['code']}"
        lines.append(f"- `{name}`: {what}: {rule}")
    with open(os.path.join(OUT, "README.md"), "wb") as f:
        f.write("\n".join(lines).encode() + b"\n")
    print(f"wrote {len(VECTORS)} vectors and expected.json to {OUT}")


if __name__ == "__main__":
    main()

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
import base64, copy, hmac, json, os, struct, sys
from nacl import encoding, hash, pwhash, secret
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

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


# ---------------------------------------------------------------- x25519 stanzas: age v1 files (C2SP age.md)

BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def bech32(hrp, data):
    """BIP 173 Bech32 of data (bytes) under hrp, lower case."""
    def polymod(values):
        chk = 1
        for v in values:
            top = chk >> 25
            chk = (chk & 0x1ffffff) << 5 ^ v
            for i in range(5):
                chk ^= (0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3)[i] if (top >> i) & 1 else 0
        return chk
    acc, bits, five = 0, 0, []
    for byte in data:
        acc, bits = acc << 8 | byte, bits + 8
        while bits >= 5:
            bits -= 5
            five.append(acc >> bits & 31)
    if bits:
        five.append(acc << (5 - bits) & 31)
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    mod = polymod(expanded + five + [0] * 6) ^ 1
    return hrp + "1" + "".join(BECH32[d] for d in five + [mod >> 5 * (5 - i) & 31 for i in range(6)])


def x25519_public(scalar):
    return X25519PrivateKey.from_private_bytes(scalar).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def hkdf(ikm, salt, info, n=32):
    return HKDF(hashes.SHA256(), n, salt, info).derive(ikm)


def b64(x):
    return base64.b64encode(x).rstrip(b"=")


IDENTITY_SCALAR = det("identity", 32)
IDENTITY = bech32("age-secret-key-", IDENTITY_SCALAR).upper()  # Tests/Vectors/v2/identity.txt
RECIPIENT = bech32("age", x25519_public(IDENTITY_SCALAR))
OTHER_RECIPIENT = bech32("age", x25519_public(det("other identity", 32)))


def age_file(recipient, label, data_key=DATA_KEY, version=b"age-encryption.org/v1", kind=b"X25519"):
    """A minimal age v1 file for recipient (an age1... string) whose plaintext is data_key: one X25519 stanza,
    the header MAC, a one-chunk STREAM payload (C2SP age.md). Deterministic: the ephemeral secret, file key and
    payload nonce come from label."""
    if any(c not in BECH32 for c in recipient[4:-6]):
        recipient = RECIPIENT  # a malformed recipient's stanza: the age file is for identity.txt's
    five = [BECH32.index(c) for c in recipient[4:-6]]
    acc, bits, public = 0, 0, bytearray()
    for v in five:
        acc, bits = acc << 5 | v, bits + 5
        if bits >= 8:
            bits -= 8
            public.append(acc >> bits & 0xff)
    public = bytes(public)
    ephemeral = det(f"{label} ephemeral", 32)
    share = x25519_public(ephemeral)
    shared = X25519PrivateKey.from_private_bytes(ephemeral).exchange(
        __import__("cryptography.hazmat.primitives.asymmetric.x25519", fromlist=["X25519PublicKey"])
        .X25519PublicKey.from_public_bytes(public))
    file_key = det(f"{label} file key", 16)
    wrap_key = hkdf(shared, share + public, b"age-encryption.org/v1/X25519")
    body = ChaCha20Poly1305(wrap_key).encrypt(bytes(12), file_key, None)
    header = version + b"\n-> " + kind + b" " + b64(share) + b"\n" + b64(body) + b"\n---"
    mac = hmac.new(hkdf(file_key, b"", b"header"), header, "sha256").digest()
    nonce = det(f"{label} payload nonce", 16)
    chunk = ChaCha20Poly1305(hkdf(file_key, nonce, b"payload")).encrypt(bytes(11) + b"\x01", data_key, None)
    return header + b" " + b64(mac) + b"\n" + nonce + chunk


X25519_LENGTH = 1 + 62 + 232  # recipient_length, recipient, age file


def x25519(recipient=None, label="recipient", data_key=DATA_KEY, recipient_length=None, length=None, **age):
    """An x25519 stanza (type 2): recipient_length u8 || recipient || age file."""
    recipient = recipient or RECIPIENT
    body = (bytes([len(recipient) if recipient_length is None else recipient_length]) + recipient.encode()
            + age_file(recipient, label, data_key, **age))
    assert length is not None or len(body) == X25519_LENGTH, len(body)
    return (2, body if length is None else (body + bytes(max(0, length - len(body))))[:length])


# ---------------------------------------------------------------- the model and its encoding
#
# A document is a dict: vault_id, generation, data_key_id, stanzas, replicas [(replica_id, (ms, counter))] in table
# order, entries, tombstones [(id, stamp)]. A stamp is (ms, counter, replica): replica a replica id, written as its
# index in the document's replica table, or Index(n), written as the index n as it is (one beyond the table, say).
# A version-3 document ("version": 3, generate_v3.py) adds "dropped" {replica_id: (ms, counter)} (0 for a replica
# not in it), "seen" {replica_id: [(replica, (ms, counter)), ...]} (each replica's seen row in the order written; an
# empty row for a replica not in it; replica a replica id, written as its index, or Index(n), written as n, or bytes,
# written as they are: a malformed uvar), with override "seen_counts" {replica_id: count}, and, per tombstone, a third
# item: {"of": stamp, "kept": None or {"name", "version"}}, with overrides "kept_byte" (the byte written) and, in
# "kept", "name_length". "layout": the plaintext's version when it is not the header's.
# Overrides for the malformed vectors: a count or length given as an int is written as its (shortest) uvar, given
# as bytes is written as those bytes (a malformed uvar).

WELL_KNOWN = {"password": 1, "username": 2, "url": 3, "notes": 4, "otp": 5}
SECRET = 0x80


class Index(int):
    """A replica index written as it is, not looked up in the table."""


def uvar(n):
    """n as an unsigned LEB128 integer in its shortest form."""
    assert 0 <= n < 1 << 64
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


assert [uvar(n).hex() for n in (0, 127, 128, 300, 16383, 16384, (1 << 64) - 1)] == [
    "00", "7f", "8001", "ac02", "ff7f", "808001", "ffffffffffffffffff01"]


def uv(x):
    return x if isinstance(x, bytes) else uvar(x)


def stamp(ms, counter, replica):
    return (ms, counter, replica)


def time(ms, counter):
    return ms << 16 | counter


def field(name, value, secret_=False, kind=None, **over):
    """A field; kind (the byte written) is the well-known code of name or 0, with bit 7 for secret_, unless given:
    a spelled-out name is written when kind & 0x7F is 0."""
    if kind is None:
        kind = (WELL_KNOWN.get(name, 0) if isinstance(name, str) else 0) | (SECRET if secret_ else 0)
    return dict(name=name, value=value, kind=kind, **over)


def version(modified, fields, conflict=False, flags=None, **over):
    return dict(modified=modified, fields=fields, flags=(1 if conflict else 0) if flags is None else flags, **over)


def entry(label, name, created, modified, fields, history=(), **over):
    """created: a stamp at most modified's time, written as age (modified time − created time) and its replica."""
    return dict(id=det(f"entry {label} id", 16), name=name, created=created, modified=modified,
                fields=list(fields), history=list(history), **over)


def replica_index(table, replica):
    return int(replica) if isinstance(replica, Index) else table.index(replica)


def enc_stamp(s, table, index=None):
    ms, counter, replica = s
    return struct.pack("<Q", time(ms, counter)) + uv(replica_index(table, replica) if index is None else index)


def enc_field(f):
    name, value = b(f["name"]), b(f["value"])
    spelled = b"" if f["kind"] & 0x7F else struct.pack("<B", f.get("name_length", len(name))) + name
    return struct.pack("<B", f["kind"]) + spelled + uv(f.get("value_length", len(value))) + value


def enc_fields(fields, count=None):
    return uv(len(fields) if count is None else count) + b"".join(map(enc_field, fields))


def enc_version(v, table):
    return (enc_stamp(v["modified"], table, v.get("index")) + struct.pack("<B", v["flags"])
            + enc_fields(v["fields"], v.get("field_count")))


def enc_entry(e, table):
    name = b(e["name"])
    modified, created = e["modified"], e["created"]
    age = time(*modified[:2]) - time(*created[:2])
    return (e["id"] + uv(e.get("name_length", len(name))) + name + enc_stamp(modified, table, e.get("index"))
            + uv(e.get("age", age)) + uv(e.get("created_index", replica_index(table, created[2])))
            + enc_fields(e["fields"], e.get("field_count"))
            + struct.pack("<B", e.get("version_count", len(e["history"])))
            + b"".join(enc_version(v, table) for v in e["history"]))


def is_v3(doc):
    return doc.get("layout", doc.get("version", 2)) == 3


def enc_tombstone(t, table, v3=False):
    """id || deleted stamp; version 3: || of stamp || kept u8 || [kept_name_length uvar || kept_name || version]."""
    out = t[0] + enc_stamp(t[1], table)
    if not v3:
        return out
    more = t[2]
    kept = more.get("kept")
    out += enc_stamp(more["of"], table, more.get("of_index")) + struct.pack("<B", more.get("kept_byte", int(kept is not None)))
    if kept is None:
        return out
    name = b(kept["name"])
    return out + uv(kept.get("name_length", len(name))) + name + enc_version(kept["version"], table)


def enc_sync(doc, rid, table):
    """Version 3's rest of a replica: dropped u64 || seen_count uvar || (replica_index uvar || time u64)*."""
    row = doc.get("seen", {}).get(rid, [])
    out = struct.pack("<Q", time(*doc.get("dropped", {}).get(rid, (0, 0))))
    out += uv(doc.get("seen_counts", {}).get(rid, len(row)))
    for replica, t in row:
        out += (replica if isinstance(replica, bytes) else uvar(replica_index(table, replica))) + struct.pack("<Q", time(*t))
    return out


def payload(doc):
    """The plaintext after the binding hash and before the padding (doc["payload"]: these bytes instead)."""
    if "payload" in doc:
        return doc["payload"]
    table = [rid for rid, _ in doc["replicas"]]
    v3 = is_v3(doc)
    return (uv(doc.get("replica_count", len(doc["replicas"])))
            + b"".join(struct.pack("<QQ", rid, time(*t)) + (enc_sync(doc, rid, table) if v3 else b"")
                       for rid, t in doc["replicas"])
            + uv(doc.get("entry_count", len(doc["entries"]))) + b"".join(enc_entry(e, table) for e in doc["entries"])
            + uv(doc.get("tombstone_count", len(doc["tombstones"])))
            + b"".join(enc_tombstone(t, table, v3) for t in doc["tombstones"]))


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
    assert not isinstance(s[2], Index)
    return f"{s[0]}.{s[1]}@{s[2]:016x}"


def shown_fields(fields):
    return [{"name": b(f["name"]).decode(), "secret": bool(f["kind"] & SECRET), "value": shown_value(f["value"])}
            for f in fields]


def shown_tombstone(t):
    """A version-3 tombstone as the reader prints it."""
    kept = t[2].get("kept")
    if kept is not None:
        v = kept["version"]
        kept = {"name": b(kept["name"]).decode(), "modified": shown_stamp(v["modified"]),
                "conflict": bool(v["flags"] & 1), "fields": shown_fields(v["fields"])}
    return {"deleted": shown_stamp(t[1]), "of": shown_stamp(t[2]["of"]), "kept": kept}


def shown(doc):
    if is_v3(doc):
        seen, dropped = doc.get("seen", {}), doc.get("dropped", {})
        return dict(shown({**doc, "version": 2, "layout": 2, "tombstones": []}), format_version=3,
                    replicas={f"{rid:016x}": {"time": f"{t[0]}.{t[1]}", "dropped": "{}.{}".format(*dropped.get(rid, (0, 0))),
                                              "seen": {f"{r:016x}": f"{st[0]}.{st[1]}" for r, st in seen.get(rid, [])}}
                              for rid, t in doc["replicas"]},
                    tombstones={t[0].hex(): shown_tombstone(t) for t in doc["tombstones"]})
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
    """valid-basic: 3 entries, one with 2 history versions (one a conflict) and created by another replica than the
    one that last modified it, a tombstone, 2 replicas."""
    github = entry("github", "github", stamp(T, 0, RB), stamp(T + 3000, 0, RA), [
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
    exactly 65,536 bytes of field names and values (each version's field a well-known "notes", counted as 5)."""
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


def well_known():
    """Every well-known code (1 password, 2 username, 3 url, 4 notes, 5 otp) with and without the secret bit, and
    spelled-out (kind 0) names with and without it, among them names that only resemble well-known ones."""
    d = small()
    plain = [field(n, f"{n} in the clear") for n in WELL_KNOWN]
    secret_ = [field(n, f"{n} masked", True) for n in WELL_KNOWN]
    custom = [field("pin", "1234"), field("recovery codes", "a1 b2 c3", True), field("Password", "capital P"),
              field("passwords", "plural", True), field("URL", "upper case"), field("otp ", "trailing space")]
    assert [f["kind"] for f in plain + secret_] == [1, 2, 3, 4, 5, 0x81, 0x82, 0x83, 0x84, 0x85]
    assert [f["kind"] for f in custom] == [0, 0x80, 0, 0x80, 0, 0]
    d["replicas"] = [(RA, (T + 100, 0)), (RB, (T + 90, 0))]
    d["entries"] = [
        entry("wk plain", "plain", stamp(T, 0, RA), stamp(T + 10, 0, RA), plain, [
            version(stamp(T + 5, 0, RB), list(reversed(secret_)))]),
        entry("wk secret", "secret", stamp(T + 1, 0, RA), stamp(T + 11, 0, RA), secret_, [
            version(stamp(T + 6, 0, RB), [field("otp", "was in the clear"), field("password", "was masked", True)],
                    conflict=True)]),
        entry("wk custom", "custom", stamp(T + 2, 0, RB), stamp(T + 12, 0, RB), custom + [field("notes", "last")])]
    return d


def uvar_widths():
    """uvars of 2 and 3 bytes: a 200-byte entry name, values of 127 to 20,000 bytes (in the entry and in its
    history), a 128-byte field value read as the first multi-byte length."""
    d = small()
    sizes = [127, 128, 300, 16383, 16384, 20000]
    fields = [field(f"v{n}", (det(f"value {n}", 32).hex() * (n // 64 + 1))[:n], n == 300) for n in sizes]
    assert [len(uvar(n)) for n in sizes] == [1, 2, 2, 2, 3, 3]
    d["replicas"] = [(RA, (T + 100, 0))]
    d["entries"] = [entry("widths", "w" * 200, stamp(T, 0, RA), stamp(T + 20, 0, RA), fields, [
        version(stamp(T + 10, 0, RA), [field("notes", "n" * 16384), field("password", "p" * 128, True)])])]
    return d


def clock_edges():
    """Ages at their bounds: equal to the modified time (created at time 0), 2^64 − 1 (a 10-byte uvar, modified at
    the largest time), 2^63 (a 10-byte uvar with a tenth byte of 1); created replica the table's last index, modified
    index 0; history and tombstone stamps from every replica."""
    d = small()
    top = (1 << 64) - 1
    r3 = (1 << 64) - 1
    d["replicas"] = [(RA, (T + 100, 0)), (RB, (T + 100, 1)), (r3, ((1 << 48) - 1, 0xFFFF))]
    mid = top - (1 << 63)
    d["entries"] = [
        entry("ce zero", "created at zero", stamp(0, 0, r3), stamp(T, 0, RA), [field("password", "z", True)], [
            version(stamp(T - 1, 0, RB), [field("password", "y", True)]),
            version(stamp(T - 2, 0, r3), [field("password", "x", True)])]),
        entry("ce max", "age 2^64 - 1", stamp(0, 0, RB), stamp((1 << 48) - 1, 0xFFFF, r3), []),
        entry("ce half", "age 2^63", stamp(mid >> 16, mid & 0xFFFF, RA), stamp((1 << 48) - 1, 0xFFFF, RB), []),
        entry("ce same", "same time, other replica", stamp(T + 7, 3, r3), stamp(T + 7, 3, RA), [])]
    d["tombstones"] = [(det(f"ce tombstone {i}", 16), stamp(T + 50 + i, i, r)) for i, r in enumerate((RA, RB, r3))]
    ages = [time(*e["modified"][:2]) - time(*e["created"][:2]) for e in d["entries"]]
    assert ages[0] == time(T, 0) and ages[1] == top and ages[2] == 1 << 63 and ages[3] == 0
    assert len(uvar(ages[1])) == len(uvar(ages[2])) == 10
    return d


def wide_tables():
    """Counts and replica indexes of 2-byte uvars: 200 replicas, 130 entries, 130 tombstones, stamps naming
    replicas 70 to 199 and created replicas 0 to 199."""
    d = small()
    ids = sorted(int.from_bytes(det(f"wide replica {i}", 8), "little") for i in range(200))
    d["replicas"] = [(rid, (T + 1000, i)) for i, rid in enumerate(ids)]
    d["entries"] = [entry(f"wide {i}", f"e{i:03}", stamp(T + i, 0, ids[(3 * i) % 200]),
                          stamp(T + 500 + i, i, ids[199 - i]), [field("password", f"p{i}", True)])
                    for i in range(130)]
    d["tombstones"] = [(det(f"wide tombstone {i}", 16), stamp(T + 900 + i, 0, ids[70 + i])) for i in range(130)]
    return d


def tombstones_fill():
    """5 tombstones in exactly the 125 bytes left after their count (5 × 25, the count at its bound): 6 replicas,
    no entry, no padding."""
    d = small()
    d["replicas"] = [(rid, (T, 0)) for rid in sorted(int.from_bytes(det(f"fill replica {i}", 8), "little")
                                                     for i in range(6))]
    d["entries"] = []
    d["tombstones"] = [(det(f"fill tombstone {i}", 16), stamp(T + i, 0, d["replicas"][i][0])) for i in range(5)]
    assert 32 + len(payload(d)) == 256 and 256 - 32 - len(payload(d)[:-125]) == 125
    return d


def entries_at_bound(count):
    """10 replicas and 2 smallest entries (31 bytes each: a 1-byte name, no field, no history) that end the
    256-byte plaintext: the 62 bytes after the entry count hold 2 entries at the smallest, and no tombstone count."""
    d = small()
    d["replicas"] = [(rid, (T, 0)) for rid in sorted(int.from_bytes(det(f"bound replica {i}", 8), "little")
                                                     for i in range(10))]
    d["entries"] = [entry(f"bound {i}", f"{i}", stamp(T + i, 0, d["replicas"][i][0]),
                          stamp(T + i, 0, d["replicas"][i][0]), []) for i in range(2)]
    d["entry_count"] = count
    assert all(len(enc_entry(e, [r for r, _ in d["replicas"]])) == 31 for e in d["entries"])
    d["payload"] = payload(d)[:-1]  # without the tombstone count
    assert 32 + len(d["payload"]) == 256 and len(d["payload"]) - 1 - 160 - 1 == 62
    return d


def not_reader_rules():
    """What a reader does not check: generation 0, history oldest first and newer than the entry, entries and
    tombstones in no order, a replica in the table that issued nothing, the table's times behind the stamps; and
    the largest time (2^48 - 1 ms, counter 65,535)."""
    d = small()
    idle = int.from_bytes(det("replica that issued nothing", 8), "little")
    top = (1 << 48) - 1
    d.update(generation=0, replicas=sorted([(RA, (T, 0)), (RB, (T, 0)), (idle, (T, 0))]), entries=[
        entry("nr b", "b", stamp(T + 500, 0, RB), stamp(T + 1000, 0, RA), [field("password", "b", True)], [
            version(stamp(T + 2000, 0, RA), [field("password", "older", True)]),
            version(stamp(top, 0xFFFF, RB), [field("password", "newer", True)])]),
        entry("nr a", "a", stamp(top, 0xFFFF, RB), stamp(top, 0xFFFF, RB), [])],
        tombstones=[(det("tombstone z", 16), stamp(T + 5, 0, RB)), (det("tombstone y", 16), stamp(T + 4, 0, RA))])
    d["entries"].sort(key=lambda e: e["id"], reverse=True)  # a writer orders by id; these are in decreasing order
    d["tombstones"].sort(reverse=True)
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
    the tail (what follows the name: the stamps of replica 0, the only one, and so on) leaves, or name_length
    says more than are there."""
    head = uvar(1) + struct.pack("<QQ", RA, time(T + 100, 0)) + uvar(1) + CUT_HEAD_ID
    room = 256 - 32 - len(head) - 2 - len(tail)  # a name of 128 bytes or more: a 2-byte name_length
    assert 128 <= room <= 4096 and (name_length is None or name_length > room)
    d = small()
    d["payload"] = head + uvar(room if name_length is None else name_length) + b"n" * room + tail
    assert 32 + len(d["payload"]) == 256
    bad(name, seal(d, name, padding=b""), 6, "entry_truncated", rule)


def main():
    # ---- valid
    valid("valid-basic.vault", basic(), "none: 3 entries, fields (well-known and spelled-out, secret, binary, empty), "
          "history with a conflict, an entry created by another replica than the one that modified it, a tombstone, "
          "2 replicas")
    d = basic()
    d["stanzas"] = [(0x7777, det("unknown stanza body", 21))] + d["stanzas"]
    valid("valid-unknown-stanza.vault", d, "none: an unknown stanza type (0x7777) before the argon2id one, skipped")
    d = basic()
    d["stanzas"] = [(5, det("type 4 stanza", 32)), (5, b""), argon2id()]
    valid("valid-reserved-stanzas.vault", d, "none: two stanzas of type 5 (replica_names) that do not open under the data key (one empty): skipped as stanzas of a type not known, no names (type 4 is key_link)")
    d = basic(); d["stanzas"] = [argon2id(), x25519()]
    valid("valid-recipient.vault", d, "none: an argon2id stanza and an x25519 stanza for identity.txt's recipient "
          "(opens with the passphrase or the identity)")
    d = basic(); d["stanzas"] = [x25519(OTHER_RECIPIENT, "other"), x25519()]
    valid("valid-recipients-only.vault", d, "none: two x25519 stanzas and no argon2id stanza, the second for "
          "identity.txt's recipient (opens with the identity only)")
    d = basic()
    d["stanzas"] = [argon2id(b"another passphrase", "other stanza"), argon2id()]
    valid("valid-second-stanza.vault", d, "none: the first argon2id stanza is another passphrase's, the second opens")
    d = small()
    d.update(replicas=[], entries=[], tombstones=[], generation=1)
    valid("valid-empty.vault", d, "none: no replica, entry or tombstone")
    d = small()
    value = d["entries"][0]["fields"][0]
    while 32 + len(payload(d)) < 512:  # plaintext exactly 512 bytes (the value's length a 2-byte uvar): no padding
        value["value"] += "v"
    assert 32 + len(payload(d)) == 512
    valid("valid-no-padding.vault", d, "none: the plaintext is exactly 512 bytes, no padding")
    valid("valid-limits.vault", limits(), "none: every cap at its maximum (4,096-byte name, 1,024 fields, 255-byte "
          "field name, 10 versions of 65,536 bytes of names and values, a well-known name counted by its length)")
    valid("valid-not-reader-rules.vault", not_reader_rules(), "none: breaks only what a reader does not check "
          "(generation 0, history order, entries and tombstones in decreasing id order, a replica that issued "
          "nothing, table times behind the stamps), largest time")
    valid("valid-edge-names.vault", edge_names(), "none: names with U+00A0, U+200B, U+2028, U+FEFF (not control "
          "characters); \"file\"/\"\\ufb01le\" and \"fi\"/\"\\ufb01\" (compatibility-, not canonically equivalent); "
          "a name not in NFC")
    valid("valid-replica-order.vault", replica_order(), "none: replica table sorted as unsigned u64 (0xff < 0x100, "
          "2^63-1 < 2^63 < 2^64-1)")
    valid("valid-well-known-fields.vault", well_known(), "none: kinds 1 to 5 (password, username, url, notes, otp) "
          "without and with the secret bit (0x81 to 0x85), in entries and history; spelled-out names (kind 0 and "
          "0x80) \"pin\", \"recovery codes\", \"Password\", \"passwords\", \"URL\", \"otp \" (not well-known names)")
    valid("valid-uvar-widths.vault", uvar_widths(), "none: 2- and 3-byte uvars: a 200-byte entry name, values of "
          "127, 128, 300, 16,383, 16,384 and 20,000 bytes, history values of 128 and 16,384 bytes")
    valid("valid-clock-edges.vault", clock_edges(), "none: age equal to the modified time (created at 0), age "
          "2^64-1 and 2^63 (10-byte uvars), created and modified by different replicas at one time, the table's last "
          "index, stamps of every replica in history and tombstones")
    valid("valid-wide-tables.vault", wide_tables(), "none: 200 replicas, 130 entries, 130 tombstones (2-byte "
          "counts), replica indexes up to 199 (2-byte uvars) in modified, created and tombstone stamps")
    valid("valid-tombstones-fill.vault", tombstones_fill(), "none: tombstone_count 5 with exactly 5 x 25 bytes "
          "left (at the bound), no padding")

    good = seal(basic(), "good")
    hl = struct.unpack_from("<I", good, 10)[0]

    # ---- refused before any key (reading step 1), in the order of the checks
    bad("empty.vault", b"", 6, "truncated", "magic: an empty file (a prefix of the magic)")
    bad("truncated.vault", MAGIC[:5], 6, "truncated", "magic: 5 bytes, a prefix of the magic")
    bad("bad-magic-short.vault", MAGIC[:6] + b"\n", 6, "bad_magic", "magic: 7 bytes, not a prefix of the magic")
    bad("bad-magic.vault", b"\x89vault\r\n" + good[8:], 6, "bad_magic", "magic: lowercase")
    bad("truncated-before-version.vault", MAGIC + struct.pack("<H", 3) + b"\0\0", 6, "truncated",
        "at least 14 bytes, checked before the version (3 here)")
    bad("unsupported-version-short-header.vault", MAGIC + struct.pack("<HI", 4, 5), 6, "unsupported_version",
        "version 4, checked before header_length (5) and the size (14 bytes) (version 3 is read since format v3)")
    bad("unsupported-version.vault", good[:8] + struct.pack("<H", 4) + good[10:], 6, "unsupported_version",
        "version 4 (version 3 is read since format v3: docs/FORMAT.md, \"version 3\")")
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
    d = basic(); d["stanzas"] = [(5, det("type 4 stanza", 32))]
    nd = seal(d, "no-usable-stanza-truncated-body")
    bad("no-usable-stanza-truncated-body.vault", nd[:struct.unpack_from("<I", nd, 10)[0] + 100], 6, "no_usable_stanza",
        "only an undefined (type 5) stanza, checked before the file's size (100 bytes after the header)")
    d = basic(); d["stanzas"] = [argon2id(), (3, det("mlkem768x25519 stanza", 32))]
    bad("mlkem768x25519-stanza-short.vault", seal(d, "mlkem768x25519-stanza-short"), 6, "bad_stanza",
        "an mlkem768x25519 stanza of 32 bytes, not 3652 (type 3 is defined now: its shape is checked)")
    # x25519 stanzas
    for name, stanza, code, rule in [
        ("x25519-stanza-short.vault", x25519(length=X25519_LENGTH - 1), "bad_stanza", "x25519 stanza of 294 bytes"),
        ("x25519-stanza-long.vault", x25519(length=X25519_LENGTH + 1), "bad_stanza", "x25519 stanza of 296 bytes"),
        ("x25519-recipient-length.vault", x25519(recipient_length=61), "bad_recipient", "recipient_length 61"),
        ("x25519-recipient-not-age1.vault", x25519("agf1" + RECIPIENT[4:]), "bad_recipient",
         "a recipient that starts with agf1"),
        ("x25519-recipient-upper-case.vault", x25519(RECIPIENT.upper()), "bad_recipient",
         "the recipient in upper case (age writes lower case)"),
        ("x25519-recipient-bad-character.vault", x25519(RECIPIENT[:10] + "b" + RECIPIENT[11:]), "bad_recipient",
         "a recipient with a 'b' (not a Bech32 character)"),
        ("x25519-age-version.vault", x25519(version=b"age-encryption.org/v2"), "bad_age_file",
         "the age file's version line says v2"),
        ("x25519-age-scrypt.vault", x25519(kind=b"scrypt"), "bad_age_file",
         "the age file's stanza is of type scrypt (an X25519 one's length)"),
    ]:
        d = basic(); d["stanzas"] = [argon2id(), stanza]
        bad(name, seal(d, name[:-6]), 6, code, rule)
    d = basic(); d["stanzas"] = [x25519(label="first"), argon2id(), x25519(label="second")]
    bad("x25519-duplicate-recipient.vault", seal(d, "x25519-duplicate-recipient"), 6, "duplicate_recipient",
        "two x25519 stanzas for one recipient (stanzas 0 and 2)")
    d = basic(); d["stanzas"] = [argon2id(), x25519(length=X25519_LENGTH - 1), x25519()]
    bad("x25519-bad-before-duplicate.vault", seal(d, "x25519-bad-before-duplicate"), 6, "bad_stanza",
        "stanza 1 of 294 bytes, before stanza 2 repeats nothing")
    d = basic(); d["stanzas"] = [argon2id()] + [(0x7777, b"")] * 256
    bad("too-many-stanzas.vault", seal(d, "too-many-stanzas"), 6, "too_many_stanzas",
        "257 stanzas (an argon2id one and 256 empty ones of an unknown type): checked at stanza_count")
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

    # ---- the plaintext (exit 6), in the order a reader reads it
    rest = 256 - 32 - 1  # after the replica count of small()'s 256-byte plaintext
    plain_bad("replica-count-exceeds-data.vault", lambda d: d.update(replica_count=rest // 16 + 1),
              "entry_count_exceeds_data", f"replica_count {rest // 16 + 1}: {rest} bytes hold at most {rest // 16}")
    bad("entry-count-at-bound.vault", seal(entries_at_bound(2), "entry-count-at-bound"), 6, "entry_truncated",
        "entry_count 2 with 62 bytes left (2 x 31: passes the count check), 2 smallest entries, then no tombstone count")
    bad("entry-count-exceeds-data.vault", seal(entries_at_bound(3), "entry-count-exceeds-data"), 6,
        "entry_count_exceeds_data", "entry_count 3 with 62 bytes left (3 x 31 = 93 > 62)")
    rest = 256 - 32 - len(payload(small()))
    plain_bad("tombstone-count-exceeds-data.vault", lambda d: d.update(tombstone_count=rest // 25 + 1),
              "entry_count_exceeds_data", f"tombstone_count {rest // 25 + 1}: {rest} bytes hold at most {rest // 25}")
    plain_bad("entry-truncated.vault", lambda d: d["entries"][0]["fields"][0].update(value_length=1_000_000),
              "entry_truncated", "a field's value_length (1,000,000) runs past the end of the plaintext")
    t0 = struct.pack("<Q", time(T, 0))
    s0 = t0 + uvar(0)                      # a stamp of replica 0
    c0 = uvar(0) + uvar(0)                 # age 0, created replica 0
    pw = struct.pack("<B", 0x81)           # kind: password, secret
    cut("entry-truncated-name.vault", b"", "the plaintext ends inside the name (name_length 4,096)", name_length=4096)
    cut("entry-truncated-modified-time.vault", t0[:5], "the plaintext ends inside the modified stamp's time")
    cut("entry-truncated-modified-index.vault", t0 + b"\x80",
        "the plaintext ends inside the modified stamp's replica index (a uvar byte 0x80, more to come)")
    cut("entry-truncated-age.vault", s0, "the plaintext ends before the age")
    cut("entry-truncated-created-replica.vault", s0 + uvar(0), "the plaintext ends before the created replica")
    cut("entry-truncated-field-kind.vault", s0 + c0 + uvar(1), "field_count 1, the plaintext ends before the kind")
    cut("entry-truncated-field.vault", s0 + c0 + uvar(2) + pw + uvar(1) + b"v",
        "field_count 2, the plaintext ends after the first field")
    cut("entry-truncated-field-name.vault", s0 + c0 + uvar(1) + struct.pack("<BB", 0, 20) + b"user",
        "the plaintext ends inside a spelled-out field name (name_length 20)")
    cut("entry-truncated-value-length.vault", s0 + c0 + uvar(1) + pw + b"\x85",
        "the plaintext ends inside a field's value_length (a uvar byte 0x85, more to come)")
    cut("entry-truncated-value.vault", s0 + c0 + uvar(1) + pw + uvar(50) + b"abc",
        "the plaintext ends inside a field value (value_length 50)")
    cut("entry-truncated-version-count.vault", s0 + c0 + uvar(0), "the plaintext ends before the version_count")
    cut("entry-truncated-version.vault", s0 + c0 + uvar(0) + b"\x01" + t0[:5],
        "version_count 1, the plaintext ends inside the version's stamp")
    cut("entry-truncated-version-field.vault", s0 + c0 + uvar(0) + b"\x01" + s0 + b"\x00" + uvar(1) + pw + uvar(10)
        + b"abc", "the plaintext ends inside a version's field value")
    cut("tombstone-count-truncated.vault", s0 + c0 + uvar(0) + b"\x00" + b"\x80\x80",
        "the plaintext ends inside the tombstone count (uvar bytes 80 80, more to come)")

    # uvars: shortest form, at most 64 bits
    plain_bad("varint-not-minimal-name-length.vault", lambda d: d["entries"][0].update(name_length=b"\x80\x00"),
              "bad_varint", "entry name_length 80 00 (0 in two bytes; not bad_name_length)")
    plain_bad("varint-not-minimal-value-length.vault",
              lambda d: d["entries"][0]["fields"][0].update(value_length=b"\x81\x00"), "bad_varint",
              "value_length 81 00 (1 in two bytes; the value is there)")
    plain_bad("varint-not-minimal-replica-count.vault", lambda d: d.update(replica_count=b"\x81\x00"), "bad_varint",
              "replica_count 81 00 (1 in two bytes)")
    plain_bad("varint-not-minimal-replica-index.vault", lambda d: d["entries"][0].update(index=b"\x80\x00"),
              "bad_varint", "the modified stamp's replica index 80 00 (0 in two bytes)")
    plain_bad("varint-not-minimal-10-bytes.vault", lambda d: d["entries"][0].update(age=b"\x80" * 9 + b"\x00"),
              "bad_varint", "age 80 x 9 then 00 (0 in ten bytes, the tenth zero)")
    plain_bad("varint-11-bytes.vault",
              lambda d: d["entries"][0]["fields"][0].update(value_length=b"\x80" * 10 + b"\x01"), "bad_varint",
              "value_length of 11 bytes (80 x 10 then 01: the tenth byte 0x80)")
    plain_bad("varint-tenth-byte-2.vault", lambda d: d["entries"][0].update(age=b"\xff" * 9 + b"\x02"),
              "bad_varint", "age ff x 9 then 02 (beyond 64 bits; not bad_clock)")
    plain_bad("bad-name-length.vault", lambda d: d["entries"][0].update(name=""), "bad_name_length",
              "entry name_length 0")
    plain_bad("bad-name-length-4097.vault", lambda d: d["entries"][0].update(name="n" * 4097), "bad_name_length",
              "entry name_length 4,097 (the bytes are there)")
    plain_bad("bad-name-length-max-uvar.vault", lambda d: d["entries"][0].update(name_length=(1 << 64) - 1),
              "bad_name_length", "entry name_length 2^64-1 (ff x 9 then 01: a well-formed uvar)")
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

    # stamps: a replica index beyond the table, an age above the modified time (bad_clock)
    plain_bad("clock-modified-index-beyond.vault", lambda d: d["entries"][0].update(index=1), "bad_clock",
              "the modified stamp's replica index 1, a table of 1")
    plain_bad("clock-created-replica-beyond.vault", lambda d: d["entries"][0].update(created_index=1), "bad_clock",
              "created_replica 1, a table of 1")
    plain_bad("clock-version-index-beyond.vault", lambda d: d["entries"][0].update(
        history=[version(stamp(T - 1, 0, RA), [field("password", "old", True)], index=1)]), "bad_clock",
        "a history version's stamp has replica index 1, a table of 1")
    plain_bad("clock-tombstone-index-beyond.vault",
              lambda d: d["tombstones"].append((det("t", 16), stamp(T + 50, 0, Index(1)))), "bad_clock",
              "a tombstone's stamp has replica index 1, a table of 1")
    plain_bad("clock-index-empty-table.vault",
              lambda d: d.update(replicas=[], entries=[], tombstones=[(det("t", 16), stamp(T, 0, Index(0)))]),
              "bad_clock", "no replica, a tombstone's stamp has replica index 0")
    plain_bad("clock-age-above-modified.vault", lambda d: d["entries"][0].update(age=time(T, 0) + 1), "bad_clock",
              "age one above the modified time")
    plain_bad("clock-age-max.vault", lambda d: d["entries"][0].update(age=(1 << 64) - 1), "bad_clock",
              "age 2^64-1 (a well-formed uvar) above the modified time")
    plain_bad("clock-order-modified-index-before-age.vault",
              lambda d: d["entries"][0].update(index=1, age=b"\x80\x00"), "bad_clock",
              "the modified stamp's replica index 1 (a table of 1), checked when read, before the malformed age 80 00")
    plain_bad("clock-order-age-before-created-replica.vault",
              lambda d: d["entries"][0].update(age=time(T, 0) + 1, created_index=b"\x80\x00"), "bad_clock",
              "age above the modified time, checked before the malformed created_replica 80 00")
    plain_bad("clock-order-created-replica-before-fields.vault",
              lambda d: d["entries"][0].update(created_index=1, field_count=b"\x80\x00"), "bad_clock",
              "created_replica 1 (a table of 1), checked before the malformed field_count 80 00")

    # fields
    plain_bad("field-kind-6.vault", lambda d: d["entries"][0]["fields"].append(field("x", "w", kind=6)), "bad_field",
              "a field of kind 6 (reserved)")
    plain_bad("field-kind-127.vault", lambda d: d["entries"][0]["fields"].append(field("x", "w", kind=0x7F)),
              "bad_field", "a field of kind 127 (reserved)")
    plain_bad("field-kind-255.vault", lambda d: d["entries"][0]["fields"].append(field("x", "w", kind=0xFF)),
              "bad_field", "a field of kind 0xff (reserved 127 with the secret bit)")
    plain_bad("field-kind-6-in-history.vault", lambda d: d["entries"][0].update(
        history=[version(stamp(T - 1, 0, RA), [field("x", "old", kind=0x86)])]), "bad_field",
        "a history version's field of kind 0x86 (reserved 6 with the secret bit)")
    plain_bad("field-name-well-known.vault",
              lambda d: d["entries"][0].update(fields=[field("password", "v", kind=0)]), "bad_field",
              "\"password\" spelled out (kind 0) instead of kind 1")
    plain_bad("field-name-well-known-secret.vault",
              lambda d: d["entries"][0]["fields"].append(field("otp", OTP, kind=0x80)), "bad_field",
              "\"otp\" spelled out (kind 0x80) instead of kind 0x85")
    plain_bad("duplicate-field-name.vault", lambda d: d["entries"][0]["fields"].append(field("password", "w")),
              "bad_field", "two password fields (kinds 0x81 and 0x01) in one entry")
    plain_bad("duplicate-field-name-custom.vault",
              lambda d: d["entries"][0]["fields"].extend([field("pin", "1"), field("pin", "2", True)]),
              "bad_field", "two fields spelled \"pin\" (kinds 0x00 and 0x80) in one entry")
    plain_bad("duplicate-field-name-canonical.vault",
              lambda d: d["entries"][0]["fields"].extend([field("caf\u00e9", "1"), field("cafe\u0301", "2")]),
              "bad_field", "field names \"caf\\u00e9\" and \"cafe\\u0301\" (canonically equivalent) in one entry")
    plain_bad("field-name-empty.vault", lambda d: d["entries"][0]["fields"].append(field("", "w")), "bad_field",
              "a spelled-out field name of 0 bytes (kind 0, name_length 0)")
    plain_bad("field-name-empty-secret.vault", lambda d: d["entries"][0]["fields"].append(field("", "w", True)),
              "bad_field", "a spelled-out field name of 0 bytes (kind 0x80, name_length 0)")
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
    plain_bad("too-many-fields-max-uvar.vault", lambda d: d["entries"][0].update(field_count=(1 << 64) - 1),
              "bad_field", "field_count 2^64-1 (a well-formed uvar)")
    plain_bad("bad-value-length.vault",
              lambda d: d["entries"][0]["fields"][0].update(value_length=(64 << 20) + 1), "bad_value_length",
              "value_length 64 MiB + 1")
    plain_bad("bad-value-length-max-uvar.vault",
              lambda d: d["entries"][0]["fields"][0].update(value_length=(1 << 64) - 1), "bad_value_length",
              "value_length 2^64-1 (a well-formed uvar)")

    # the replica table
    plain_bad("bad-clock.vault", lambda d: d["replicas"].append((RA, (T + 200, 0))), "bad_clock",
              "a replica id twice in the replica table")
    plain_bad("replicas-unsorted.vault", lambda d: d.update(replicas=[(RB, (T + 100, 0)), (RA, (T + 100, 0))]),
              "bad_clock", "replica table in decreasing order")
    plain_bad("replicas-unsorted-signed.vault",
              lambda d: d.update(replicas=[(1 << 63, (T, 0)), ((1 << 63) - 1, (T, 0))], entries=[]), "bad_clock",
              "replica ids 2^63 then 2^63-1 (increasing only as signed integers)")
    plain_bad("replicas-unsorted-bytes.vault",
              lambda d: d.update(replicas=[(0x100, (T, 0)), (0xFF, (T, 0))], entries=[]), "bad_clock",
              "replica ids 0x100 then 0xff (increasing only as little-endian bytes)")

    # history
    plain_bad("history-too-many.vault", lambda d: d["entries"][0].update(
        history=[version(stamp(T - 1 - i, 0, RA), [field("password", str(i), True)]) for i in range(11)]),
        "bad_history", "11 history versions")
    plain_bad("history-too-large.vault", lambda d: d["entries"][0].update(
        history=[version(stamp(T - 1, 0, RA), [field("notes", "x" * (65536 - 5 + 1))])]), "bad_history",
        "history of 65,537 bytes: a value of 65,532 bytes and the well-known name \"notes\" (kind 4) counted as 5")
    plain_bad("bad-history-flags.vault", lambda d: d["entries"][0].update(
        history=[version(stamp(T - 1, 0, RA), [field("password", "old", True)], flags=0x81)]), "bad_history",
        "version flags 0x81 (bit 7 reserved)")
    plain_bad("history-duplicate-field-name.vault", lambda d: d["entries"][0].update(
        history=[version(stamp(T - 1, 0, RA), [field("password", "a", True), field("password", "b", True)])]),
        "bad_field", "two password fields (kind 0x81) in one history version")

    # padding
    d = small()
    n = 32 + len(payload(d))
    bad("bad-padding.vault", seal(d, "bad-padding", padding=bytes(256 - n - 1) + b"\x01"), 6, "bad_padding",
        "a padding byte is 0x01")
    bad("padding-not-minimal.vault", seal(d, "padding-not-minimal", padding=bytes(256 - n + 256)), 6, "bad_padding",
        "256 bytes of padding too many")

    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "identity.txt"), "w") as f:
        f.write(f"# the identity of the x25519 stanzas of these vectors (never use it for anything else)\n"
                f"# public key: {RECIPIENT}\n{IDENTITY}\n")
    write(OUT, ["# Format v2 test vectors", "",
             "Written by `Tests/Vectors/generate_v2.py` (never edit by hand), replayed by `Tests/Vectors/check_v2.py`;",
             "passphrase \"correct horse battery staple\", test KDF parameters. `expected.json`: the outcome of each",
             "file. One line per file, by name: outcome: the rule it breaks. Not a vector (too big to commit): a",
             "file of 1 GiB + 65,609 bytes with the magic, `too_large` (exit 6), checked right after the magic.",
             "The plaintext is docs/FORMAT.md's: counts and lengths as `uvar` (shortest-form LEB128, else",
             "`bad_varint`), stamps as a time and a replica-table index, an entry's created time as an age, fields by",
             "`kind` (bit 7 secret; 1 to 5 well-known names, 0 a spelled-out name, 6 to 127 reserved).", ""])


def write(out, intro):
    """Writes VECTORS to out (removing .vault files that are no longer vectors), expected.json, and README.md: intro
    (lines), then one line per vector."""
    os.makedirs(out, exist_ok=True)
    for old in os.listdir(out):
        if old.endswith(".vault") and old not in VECTORS:
            os.remove(os.path.join(out, old))
    for name, (data, _, _) in sorted(VECTORS.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    expected = {name: outcome for name, (_, outcome, _) in VECTORS.items()}
    with open(os.path.join(out, "expected.json"), "wb") as f:
        f.write(json.dumps(expected, ensure_ascii=False, sort_keys=True, indent=1).encode() + b"\n")
    lines = list(intro)
    for name, (_, outcome, rule) in sorted(VECTORS.items()):
        what = "valid" if "exit" not in outcome else f"exit {outcome['exit']} {outcome['code']}"
        lines.append(f"- `{name}`: {what}: {rule}")
    with open(os.path.join(out, "README.md"), "wb") as f:
        f.write("\n".join(lines).encode() + b"\n")
    print(f"wrote {len(VECTORS)} vectors and expected.json to {out}")


if __name__ == "__main__":
    main()

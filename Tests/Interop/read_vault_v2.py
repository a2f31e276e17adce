#!/usr/bin/env python3
"""An independent reader of vault formats 2 and 3, written from docs/FORMAT.md ("version 2", "version 3") with
PyNaCl only.

    VAULT_PASSPHRASE=... python3 read_vault_v2.py VAULT
    VAULT_IDENTITY=key.txt python3 read_vault_v2.py VAULT     (an age identity file: the x25519 stanzas, by `age -d`)

Prints one JSON object to stdout (sorted keys):
    {"vault_id": hex, "generation": n,
     "entries": {name: {"id": hex, "fields": [{"name", "secret", "value"}], "created", "modified",
                        "history": [{"modified", "conflict", "fields"}]}},
     "tombstones": {id hex: timestamp}, "replicas": {replica hex: "ms.counter"}}
for a version-2 file; a version-3 file adds "format_version": 3, and its replicas and tombstones say more:
     "replicas": {replica hex: {"time": "ms.counter", "dropped": "ms.counter" ("0.0": none dropped),
                                "seen": {replica hex: "ms.counter", ...} ({}: seen_count 0, not known)}},
     "tombstones": {id hex: {"deleted": timestamp, "of": timestamp,
                             "kept": null or {"name", "modified", "conflict", "fields"}}}
a timestamp as "ms.counter@replica" (replica: the u64 id as 16 lowercase hex digits), a value that is valid
UTF-8 as a string, any other as {"base64": "..."}; a well-known field (kind 1 to 5) under its name ("password",
"username", "url", "notes", "otp"), "secret" the kind's bit 7; an entry's "created" is its modified time minus its
age, at its created replica. Exit codes as the CLI's: 3 wrong passphrase (no argon2id stanza opens), 6 not a vault,
unsupported or corrupt, including a header MAC, body tag or binding hash that does not verify once a stanza opened
(header_mac_mismatch, body_mac_mismatch, body_binding_mismatch), 1 anything else. Errors go to stderr as
"read_vault_v2: CODE: message", CODE one of the library's `Corruption` codes (or wrong_passphrase,
kdf_parameters_out_of_range, unsupported_version). VAULT_TESTING_INSECURE_KDF=1 (exactly "1") lowers the KDF
minimum to opslimit 1, memlimit 8,192, as for read_vault.py. With VAULT_IDENTITY, the x25519 stanza whose recipient
is the identity's (`age-keygen -y`) is opened by Debian's `age -d -i` (stock tools: no age code here), else the
passphrase is tried; no stanza for it and no passphrase: exit 3, wrong_identity.

Key links ("Key changes", stanza type 4): each is 129 bytes with a reason 1 to 3 as it is read; after the last
stanza, each link continues the one before (its old key id the previous new key id) and its Ed25519 signature verifies
under the previous link's signing key, and the last one leads to the header's data key id; once the data key is
known and the header MAC matched, the last link's signing key is the data key's (seed BLAKE2b-256(key = data_key,
"vault key change signing")). Any of these broken: bad_key_link. They are checked, not printed.

A version-3 reader reads version 2 as well; a version-2 file prints as it always did. Version 3's reader rules, each
checked as its field is read unless said otherwise. A replica (replica_id u64 || time u64 || dropped u64 ||
seen_count uvar || seen*, seen = replica_index uvar || time u64): its id above the one before (bad_clock, version 2's
rule, checked as the id is read), dropped at most its own time (bad_clock, before seen_count), each seen index below
replica_count and above the index before it in that row (bad_clock), each seen time above 0 (bad_clock); a seen time
above the time the table holds for the replica its index names (which may come later in the table) is bad_clock too,
checked once the whole table is read, before the entry count. seen_count above replica_count is bad_clock as read;
it is not checked against the data (only the replica, entry and tombstone counts are): a row the data cannot hold
fails at the end of the plaintext (entry_truncated). A tombstone: its id not repeated
(duplicate_id), its deleted stamp above its replica's dropped when that is above 0 (bad_tombstone, checked as the stamp is read, before
of), then of <= deleted by time, then replica id (bad_clock; of = deleted: the version deleted is not known, as in a
version-2 tombstone), the kept byte 0 or 1 (bad_tombstone), a kept name by entry names' rules but not unique
(bad_name_length, name_not_utf8, bad_name), the kept version's stamp strictly between of and deleted (bad_clock: so
nothing can be kept when of = deleted), its flags as a history version's (reserved bits: bad_history; the conflict
bit is not required), its fields by the field rules (bad_field, bad_value_length; history's caps do not apply). A
replica counts 25 bytes at the smallest and a tombstone 35 (entry_count_exceeds_data); running out inside a replica
or a tombstone is entry_truncated.
"""
import base64, hmac, json, os, struct, subprocess, sys, unicodedata
from nacl import encoding, exceptions, hash, pwhash, secret, signing

MAGIC = b"\x89VAULT\r\n"
MAX_FILE = (1 << 30) + 65536 + 32 + 24 + 16  # 1 GiB + 65,608: the largest plaintext behind the largest header
MIN_HEADER, MAX_HEADER = 56, 65536
ARGON2ID = 1
KEY_LINK = 4
KEY_LINK_LENGTH = 16 + 16 + 32 + 1 + 64  # old_key_id, new_key_id, new_signing_key, reason, signature: 129 bytes
ARGON2ID_LENGTH = 8 + 8 + 16 + 24 + 48  # opslimit, memlimit, salt, key_nonce, wrapped_key: exactly 104 bytes
X25519 = 2
X25519_LENGTH = 1 + 62 + 232  # recipient_length (62), recipient "age1...", age file: exactly 295 bytes
AGE_PREFIX = b"age-encryption.org/v1\n-> X25519 "
MLKEM768X25519 = 3
MLKEM768X25519_LENGTH = 2 + 1959 + 1691  # recipient_length u16 BE (1959), "age1pq1...", age file: exactly 3652 bytes
PQ_AGE_PREFIX = b"age-encryption.org/v1\n-> mlkem768x25519 "
BECH32 = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l"
MAX_STANZAS = 256
MAX_NAME, MAX_FIELDS, MAX_VALUE = 4096, 1024, 64 << 20
MAX_VERSIONS, MAX_HISTORY_BYTES = 10, 65536
# Smallest encodings, to refuse a count the plaintext cannot hold before looping over it: a replica is its id and
# time; an entry its id, name_length (1) and a 1-byte name, a modified stamp (time 8, replica_index 1), age (1),
# created_replica (1), field_count (1) and version_count (1); a tombstone its id and a stamp.
MIN_REPLICA, MIN_ENTRY, MIN_TOMBSTONE = 8 + 8, 16 + 1 + 1 + 9 + 1 + 1 + 1 + 1, 16 + 9
# Version 3: a replica adds its dropped (u64) and seen_count (1, its seen row empty); a tombstone its of stamp (9) and
# the kept byte (1). The entry is unchanged.
MIN_REPLICA_V3, MIN_TOMBSTONE_V3 = 8 + 8 + 8 + 1, 16 + 9 + 9 + 1
VERSIONS = (2, 3)
# A field's kind: bit 7 secret, the low seven bits a well-known name (1 to 5), 0 a spelled-out name, 6 to 127 reserved.
SECRET = 0x80
WELL_KNOWN = {1: "password", 2: "username", 3: "url", 4: "notes", 5: "otp"}


def fail(exit_code, code, message):
    sys.stderr.write(f"read_vault_v2: {code}: {message}\n")
    sys.exit(exit_code)


def corrupt(code, message):
    fail(6, code, message)


def blake(data, key=None):
    if key is None:
        return hash.blake2b(data, digest_size=32, encoder=encoding.RawEncoder)
    return hash.blake2b(data, digest_size=32, key=key, encoder=encoding.RawEncoder)


def is_control(ch):  # U+0000-U+001F, U+007F, U+0080-U+009F (general category Cc)
    c = ord(ch)
    return c <= 0x1F or 0x7F <= c <= 0x9F


def read_header(file, size):
    """Reading step 1: everything checked before any key or KDF, in this order. Returns the header fields."""
    if size < 8 or file[:8] != MAGIC:                                   # magic
        if size < 8 and MAGIC.startswith(file[:size]):
            corrupt("truncated", f"truncated ({size} bytes)")
        corrupt("bad_magic", "not a vault file (bad magic)")
    if size > MAX_FILE:                                                 # file size
        corrupt("too_large", f"file of {size} bytes exceeds {MAX_FILE}")
    if size < 14:                                                       # magic, version, header_length
        corrupt("truncated", f"truncated ({size} bytes)")
    (version,) = struct.unpack_from("<H", file, 8)
    if version not in VERSIONS:
        corrupt("unsupported_version", f"unsupported format version {version}")
    (header_length,) = struct.unpack_from("<I", file, 10)
    if not MIN_HEADER <= header_length <= MAX_HEADER:
        corrupt("bad_header_length", f"header length {header_length} outside {MIN_HEADER}...{MAX_HEADER}")
    if size < header_length:
        corrupt("truncated", f"truncated ({size} bytes, header of {header_length})")
    header = file[:header_length]
    vault_id, data_key_id = header[14:30], header[38:54]                # the fixed fields
    (generation,) = struct.unpack_from("<Q", header, 30)
    (stanza_count,) = struct.unpack_from("<H", header, 54)
    low_ops, low_mem = (1, 8192) if os.environ.get("VAULT_TESTING_INSECURE_KDF") == "1" else (2, 64 << 20)
    if stanza_count > MAX_STANZAS:
        corrupt("too_many_stanzas", f"{stanza_count} stanzas (at most {MAX_STANZAS})")
    argon, recipients, links, offset = [], {}, [], 56
    for index in range(stanza_count):                                   # stanza by stanza, in order
        if offset + 6 > header_length:
            corrupt("bad_stanza", f"stanza {index} runs past the header")
        kind, length = struct.unpack_from("<HI", header, offset)
        if length > header_length - offset - 6:
            corrupt("bad_stanza", f"stanza {index} (type {kind}, {length} bytes) runs past the header")
        body = header[offset + 6:offset + 6 + length]
        offset += 6 + length
        if kind == X25519:
            if length != X25519_LENGTH:
                corrupt("bad_stanza", f"x25519 stanza {index} is {length} bytes, not {X25519_LENGTH}")
            recipient = body[1:63]
            if body[0] != 62 or not recipient.startswith(b"age1") or any(c not in BECH32 for c in recipient[4:]):
                corrupt("bad_recipient", f"x25519 stanza {index} names no age1 recipient")
            if not body[63:].startswith(AGE_PREFIX):
                corrupt("bad_age_file", f"x25519 stanza {index} does not hold an age v1 file with an X25519 stanza")
            if recipient in recipients:
                corrupt("duplicate_recipient", f"x25519 stanza {index} repeats a recipient")
            recipients[recipient] = body[63:]
            continue
        if kind == MLKEM768X25519:
            if length != MLKEM768X25519_LENGTH:
                corrupt("bad_stanza", f"mlkem768x25519 stanza {index} is {length} bytes, not {MLKEM768X25519_LENGTH}")
            recipient = body[2:1961]
            if body[0:2] != b"\x07\xa7" or not recipient.startswith(b"age1pq1") or any(c not in BECH32 for c in recipient[7:]):
                corrupt("bad_recipient", f"mlkem768x25519 stanza {index} names no age1pq1 recipient")
            if not body[1961:].startswith(PQ_AGE_PREFIX):
                corrupt("bad_age_file", f"mlkem768x25519 stanza {index} does not hold an age v1 file with an mlkem768x25519 stanza")
            if recipient in recipients:
                corrupt("duplicate_recipient", f"mlkem768x25519 stanza {index} repeats a recipient")
            recipients[recipient] = body[1961:]
            continue
        if kind == KEY_LINK:                                            # "Key changes": shape as read
            if length != KEY_LINK_LENGTH or not 1 <= body[64] <= 3:
                corrupt("bad_key_link", f"key_link stanza {index} is {length} bytes or has reason {body[64] if length > 64 else None}")
            links.append((index, body))
            continue
        if kind != ARGON2ID:
            continue                                                    # unknown: skipped
        if length != ARGON2ID_LENGTH:
            corrupt("bad_stanza", f"argon2id stanza {index} is {length} bytes, not {ARGON2ID_LENGTH}")
        ops, mem = struct.unpack_from("<QQ", body, 0)
        if not (low_ops <= ops <= 4 and low_mem <= mem <= 1 << 30 and mem % 1024 == 0):
            fail(6, "kdf_parameters_out_of_range",
                 f"stanza {index}: Argon2id parameters out of range (opslimit {ops}, memlimit {mem})")
        argon.append((ops, mem, body[16:32], body[32:56], body[56:104]))
    if offset != header_length:
        corrupt("bad_header_length", f"header length {header_length} but the stanzas end at {offset}")
    for (_, before), (index, link) in zip(links, links[1:]):            # the links' chain, each signed by the one before
        message = b"vault key link v1" + vault_id + link[0:65]
        if link[0:16] != before[16:32] or not verifies(before[32:64], message, link[65:129]):
            corrupt("bad_key_link", f"key_link stanza {index} does not continue the chain of links before it")
    if links and links[-1][1][16:32] != data_key_id:
        corrupt("bad_key_link", f"key_link stanza {links[-1][0]} does not lead to the header's data key")
    if not argon and not recipients:                                    # at least one usable stanza
        corrupt("no_usable_stanza", "no argon2id or x25519 stanza: nothing a passphrase or an identity can open")
    if size < header_length + 32 + 24 + 16 + 256:                       # then the file's size
        corrupt("truncated", f"truncated ({size} bytes, at least {header_length + 328} needed)")
    if (size - header_length - 32 - 24 - 16) % 256:
        corrupt("size_mismatch", f"plaintext of {size - header_length - 72} bytes is not a multiple of 256")
    if size - header_length - 72 > 1 << 30:
        corrupt("too_large", f"plaintext of {size - header_length - 72} bytes exceeds 1 GiB")
    return header, version, vault_id, generation, data_key_id, argon, recipients, links


def verifies(public_key, message, signature):
    """An Ed25519 signature check (PyNaCl's VerifyKey: libsodium's crypto_sign_verify_detached)."""
    try:
        signing.VerifyKey(public_key).verify(message, signature)
        return True
    except exceptions.BadSignatureError:
        return False


def signing_public(data_key):
    """The data key's signing key: Ed25519 of seed BLAKE2b-256(key = data_key, "vault key change signing")."""
    return bytes(signing.SigningKey(blake(b"vault key change signing", key=data_key)).verify_key)


class Plain:
    """A cursor over the plaintext; running past its end is entry_truncated."""

    def __init__(self, data, offset):
        self.data, self.offset = data, offset

    def take(self, n, what):
        if n > len(self.data) - self.offset:
            corrupt("entry_truncated", f"{what} runs past the end of the plaintext")
        chunk = self.data[self.offset:self.offset + n]
        self.offset += n
        return chunk

    def u(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def uvar(self, what):
        """An unsigned LEB128 integer of at most 64 bits in its shortest form (at most 10 bytes, the tenth at most
        1; a last byte of zero only for the value 0 itself), else bad_varint; checked byte by byte as read."""
        value = 0
        for i in range(10):
            byte = self.u("<B", what)
            if i == 9 and byte > 1:
                corrupt("bad_varint", f"{what}: a uvar beyond 64 bits (tenth byte {byte:#04x})")
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                if byte == 0 and i > 0:
                    corrupt("bad_varint", f"{what}: a uvar not in its shortest form ({i + 1} bytes for {value})")
                return value
        raise AssertionError("unreachable: the tenth byte is at most 1, so it ends the uvar")

    def count(self, minimum, what):
        n = self.uvar(f"{what} count")
        if n * minimum > len(self.data) - self.offset:
            corrupt("entry_count_exceeds_data", f"{what} count {n} cannot fit in {len(self.data) - self.offset} bytes")
        return n

    def replica(self, table, what):  # a replica_index uvar: an index into the replica table
        index = self.uvar(what)
        if index >= len(table):
            corrupt("bad_clock", f"{what}: replica index {index} beyond the table of {len(table)}")
        return table[index]

    def stamp(self, table, what):  # time u64 (milliseconds << 16 | counter: 48 bits, so never malformed) || replica_index uvar
        t = self.u("<Q", f"{what} time")
        return t, self.replica(table, f"{what} replica index")

    def name(self, what):
        """An entry name (name_length uvar || name): 1 to 4,096 bytes of UTF-8 without control characters."""
        n = self.uvar(f"{what}: name length")
        if not 1 <= n <= MAX_NAME:
            corrupt("bad_name_length", f"{what}: name length {n}")
        return text(self.take(n, f"{what}: name"), "name_not_utf8", "bad_name", what)


def text(raw, not_utf8, control, what):
    """A name's bytes as a string: valid UTF-8 (else not_utf8) without control characters (else control)."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        corrupt(not_utf8, f"{what}: name is not UTF-8")
    if any(map(is_control, name)):
        corrupt(control, f"{what}: name contains a control character")
    return name


def show_time(t):
    return f"{t >> 16}.{t & 0xFFFF}"


def show_stamp(stamp):
    return f"{show_time(stamp[0])}@{stamp[1]:016x}"


def show_value(value):
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def read_fields(p, where, history=None):
    """field_count uvar || field*; with history (a version's fields: [the entry's history bytes so far]), each
    field's name and value byte count is added to it, checked against the cap as soon as the field has been read."""
    count = p.uvar(f"{where}: field count")
    if count > MAX_FIELDS:
        corrupt("bad_field", f"{where}: {count} fields (at most {MAX_FIELDS})")
    fields, seen = [], set()
    for index in range(count):
        at = f"{where}, field {index}"
        kind = p.u("<B", f"{at}: kind")
        code = kind & 0x7F
        if code == 0:                                                   # a spelled-out name follows
            n = p.u("<B", f"{at}: name length")
            if n == 0:
                corrupt("bad_field", f"{at}: empty name")
            name = text(p.take(n, f"{at}: name"), "bad_field", "bad_field", at)
            if unicodedata.normalize("NFC", name) in WELL_KNOWN.values():
                corrupt("bad_field", f"{at}: well-known name {name!r} spelled out (kind {kind:#04x})")
        elif code in WELL_KNOWN:
            name = WELL_KNOWN[code]
        else:
            corrupt("bad_field", f"{at}: reserved kind {kind:#04x}")
        key = unicodedata.normalize("NFC", name)  # canonically equivalent names are the same name
        if key in seen:
            corrupt("bad_field", f"{at}: duplicate field name {name!r}")
        seen.add(key)
        v = p.uvar(f"{at}: value length")
        if v > MAX_VALUE:
            corrupt("bad_value_length", f"{at}: value of {v} bytes (at most {MAX_VALUE})")
        value = p.take(v, f"{at}: value")
        if history is not None:
            history[0] += len(name.encode("utf-8")) + v                 # a well-known name by its UTF-8 length
            if history[0] > MAX_HISTORY_BYTES:
                corrupt("bad_history", f"{where}: history holds more than {MAX_HISTORY_BYTES} bytes of names and values")
        fields.append({"name": name, "secret": bool(kind & SECRET), "value": show_value(value)})
    return fields


def read_version(p, table, where, history_bytes=None, between=None):
    """version = modified stamp || flags u8 || field_count uvar || field*. between (version 3's kept version):
    (of, deleted), the stamps its own must lie strictly between (by time, then replica id), checked once read."""
    modified = p.stamp(table, f"{where}: modified")
    if between is not None and not between[0] < modified < between[1]:
        corrupt("bad_clock", f"{where}: stamp {show_stamp(modified)} not after of {show_stamp(between[0])} and "
                             f"before deleted {show_stamp(between[1])}")
    flags = p.u("<B", f"{where}: flags")
    if flags & ~1:
        corrupt("bad_history", f"{where}: reserved flag bits set ({flags:#x})")
    fields = read_fields(p, where, history_bytes)
    return {"modified": show_stamp(modified), "conflict": bool(flags & 1), "fields": fields}


def read_plaintext(plain, binding, version=2):
    # At least 256 bytes (read_header): the binding hash and the replica count are always there.
    if not hmac.compare_digest(plain[:32], binding):
        corrupt("body_binding_mismatch", "the body is not bound to this header (binding hash mismatch)")
    p = Plain(plain, 32)
    v3 = version == 3
    replica_count = p.count(MIN_REPLICA_V3 if v3 else MIN_REPLICA, "replica")
    table, times, dropped, rows = [], [], [], []
    for index in range(replica_count):
        rid = p.u("<Q", f"replica {index}")
        if table and rid <= table[-1]:                                 # as unsigned 64-bit integers
            corrupt("bad_clock", f"replica table not sorted by id without repeats at {index} ({rid:016x})")
        table.append(rid)
        t = p.u("<Q", f"replica {index}: time")
        times.append(t)
        if not v3:
            continue
        d = p.u("<Q", f"replica {index}: dropped")
        if d > t:                                                       # its own time only
            corrupt("bad_clock", f"replica {index}: dropped {show_time(d)} above its time {show_time(t)}")
        dropped.append(d)
        row, before = [], -1
        seen_count = p.uvar(f"replica {index}: seen count")             # not checked against the data (a seen row)
        if seen_count > replica_count:                                  # but against the table, as read
            corrupt("bad_clock", f"replica {index}: seen count {seen_count} above the table's {replica_count}")
        for j in range(seen_count):
            at = f"replica {index}, seen {j}"
            i = p.uvar(f"{at}: replica index")
            if i >= replica_count:                                      # the whole table's size: it may name a later one
                corrupt("bad_clock", f"{at}: replica index {i} beyond the table of {replica_count}")
            if i <= before:
                corrupt("bad_clock", f"{at}: replica index {i} not above the one before ({before})")
            before = i
            st = p.u("<Q", f"{at}: time")
            if st == 0:
                corrupt("bad_clock", f"{at}: time 0")
            row.append((i, st))
        rows.append(row)
    for index, row in enumerate(rows):                                  # once the whole table is read
        for i, st in row:
            if st > times[i]:
                corrupt("bad_clock", f"replica {index}: seen {show_time(st)} for replica {table[i]:016x}, above its "
                                     f"time {show_time(times[i])}")
    dropped_by = dict(zip(table, dropped))                             # version 3: each replica's dropped
    if v3:
        replicas = {f"{rid:016x}": {"time": show_time(times[n]), "dropped": show_time(dropped[n]),
                                    "seen": {f"{table[i]:016x}": show_time(st) for i, st in rows[n]}}
                    for n, rid in enumerate(table)}
    else:
        replicas = {f"{rid:016x}": show_time(times[n]) for n, rid in enumerate(table)}
    entries, names, ids = {}, set(), set()
    for index in range(p.count(MIN_ENTRY, "entry")):
        at = f"entry {index}"
        eid = p.take(16, f"{at}: id")
        if eid in ids:
            corrupt("duplicate_id", f"{at}: id {eid.hex()} appears twice")
        ids.add(eid)
        name = p.name(at)
        key = unicodedata.normalize("NFC", name)
        if key in names:
            corrupt("duplicate_name", f"{at}: duplicate entry name {name!r}")
        names.add(key)
        modified = p.stamp(table, f"{at}: modified")                    # its replica index checked as read
        age = p.uvar(f"{at}: age")
        if age > modified[0]:
            corrupt("bad_clock", f"{at}: age {age} above the modified time {modified[0]}")
        created = (modified[0] - age, p.replica(table, f"{at}: created replica"))
        fields = read_fields(p, at)
        count = p.u("<B", f"{at}: version count")
        if count > MAX_VERSIONS:
            corrupt("bad_history", f"{at}: {count} history versions (at most {MAX_VERSIONS})")
        history, history_bytes = [], [0]
        for v in range(count):
            history.append(read_version(p, table, f"{at}, version {v}", history_bytes))
        entries[name] = {"id": eid.hex(), "fields": fields, "created": show_stamp(created),
                         "modified": show_stamp(modified), "history": history}
    tombstones = {}
    for index in range(p.count(MIN_TOMBSTONE_V3 if v3 else MIN_TOMBSTONE, "tombstone")):
        at = f"tombstone {index}"
        tid = p.take(16, f"{at}: id")
        if tid in ids:
            corrupt("duplicate_id", f"{at}: id {tid.hex()} appears twice")
        ids.add(tid)
        deleted = p.stamp(table, f"{at}: deleted")
        if v3 and 0 < dropped_by[deleted[1]] and deleted[0] <= dropped_by[deleted[1]]:  # its replica's dropped (0: none)
            corrupt("bad_tombstone", f"{at}: deleted {show_stamp(deleted)} at or below its replica's dropped "
                                     f"{show_time(dropped_by[deleted[1]])}")
        if not v3:
            tombstones[tid.hex()] = show_stamp(deleted)
            continue
        of = p.stamp(table, f"{at}: of")                                # stamps order by time, then replica id
        if not of <= deleted:                                           # of = deleted: the version deleted unknown
            corrupt("bad_clock", f"{at}: of {show_stamp(of)} after deleted {show_stamp(deleted)}")
        kept = p.u("<B", f"{at}: kept")
        if kept not in (0, 1):
            corrupt("bad_tombstone", f"{at}: kept byte {kept:#04x} (0 or 1)")
        shown = None
        if kept:                                                        # a name (need not be unique) and a version
            name = p.name(f"{at}, kept")
            shown = dict(read_version(p, table, f"{at}, kept version", between=(of, deleted)), name=name)
        tombstones[tid.hex()] = {"deleted": show_stamp(deleted), "of": show_stamp(of), "kept": shown}
    rest = plain[p.offset:]
    if len(rest) >= 256 or any(rest):
        corrupt("bad_padding", f"{len(rest)} bytes after the tombstones, {'not all zero' if any(rest) else 'not minimal'}")
    return entries, tombstones, replicas


def unwrap_with_identity(recipients, identity):
    """The data key from the x25519 stanza of identity's recipient, by `age -d` (None: no stanza for it)."""
    try:
        mine = subprocess.run(["age-keygen", "-y", identity], capture_output=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError) as error:
        fail(1, "io_error", f"cannot read the identity file with age-keygen -y: {error}")
    for recipient in mine:
        if recipient in recipients:
            run = subprocess.run(["age", "-d", "-i", identity], input=recipients[recipient], capture_output=True)
            if run.returncode != 0 or len(run.stdout) != 32:
                fail(3, "wrong_identity", "the x25519 stanza of this identity does not open (altered)")
            return run.stdout
    return None


def opened_stanzas(header, kind, key):
    """The plaintexts of the header's stanzas of type `kind` that open as nonce (24) || SecretBox(key, nonce, ...), in
    order (those that do not open are skipped)."""
    (count,) = struct.unpack_from("<H", header, 54)
    offset = 56
    for _ in range(count):
        stanza_kind, length = struct.unpack_from("<HI", header, offset)
        body = header[offset + 6:offset + 6 + length]
        offset += 6 + length
        if stanza_kind != kind or length < 24 + 16:
            continue
        try:
            yield secret.SecretBox(key).decrypt(body[24:], body[:24])
        except exceptions.CryptoError:
            continue


def replica_names(header, data_key):
    """The replicas' names ("Replica names", stanza type 5): the first such stanza that opens under
    BLAKE2b-256(key = data_key, "vault v3 replica names") and is well formed; {} when none (informative: a stanza that
    does not open is skipped, as one of a type not known)."""
    for names in opened_stanzas(header, 5, blake(b"vault v3 replica names", key=data_key)):
        if len(names) < 2:
            continue
        (n,) = struct.unpack_from("<H", names, 0)
        at, out, previous = 2, {}, -1
        try:
            for _ in range(n):
                replica, time, length = struct.unpack_from("<QQB", names, at)
                name = names[at + 17:at + 17 + length].decode("utf-8")
                if replica <= previous or not 1 <= length <= 64 or len(name.encode()) != length or any(map(is_control, name)):
                    raise ValueError(name)
                out[replica.to_bytes(8, "big").hex()] = {"name": name, "time": show_time(time)}
                at, previous = at + 17 + length, replica
        except (struct.error, UnicodeDecodeError, ValueError):
            continue
        if at == len(names):
            return out
    return {}


def recipient_labels(header, data_key, recipients):
    """The recipients' labels ("Recipient labels", stanza type 6): the first such stanza that opens under
    BLAKE2b-256(key = data_key, "vault v3 recipient labels") and is well formed, only those of the header's recipients;
    {} when none (informative: a stanza that does not open is skipped, as one of a type not known)."""
    for labels in opened_stanzas(header, 6, blake(b"vault v3 recipient labels", key=data_key)):
        at, out, previous = 2, {}, b""
        try:
            (n,) = struct.unpack_from("<H", labels, 0)
            for _ in range(n):
                (rl,) = struct.unpack_from("<H", labels, at)
                recipient = labels[at + 2:at + 2 + rl]
                time, length = struct.unpack_from("<QB", labels, at + 2 + rl)
                label = labels[at + 11 + rl:at + 11 + rl + length].decode("utf-8")
                if (not 1 <= rl <= 2048 or len(recipient) != rl or not recipient.startswith(b"age1") or recipient <= previous
                        or not 1 <= length <= 64 or len(label.encode()) != length or label.startswith("age1")
                        or any(map(is_control, label))):
                    raise ValueError(label)
                out[recipient.decode("utf-8")] = {"label": label, "time": show_time(time)}
                at, previous = at + 11 + rl + length, recipient
        except (struct.error, UnicodeDecodeError, ValueError):
            continue
        if at == len(labels):
            return {r: label for r, label in out.items() if r.encode() in recipients}
    return {}


def read(file, size, passphrase, identity=None):
    header, version, vault_id, generation, _, argon, recipients, links = read_header(file, size)
    data_key = unwrap_with_identity(recipients, identity) if identity else None
    if data_key is None and passphrase is None:
        fail(3, "wrong_identity", "no x25519 stanza for this identity")
    for ops, mem, salt, nonce, wrapped in argon if data_key is None else []:                         # step 2, each stanza in order
        kek = pwhash.argon2id.kdf(32, passphrase, salt, opslimit=ops, memlimit=mem)
        try:
            data_key = secret.SecretBox(kek).decrypt(wrapped, nonce)
            break
        except exceptions.CryptoError:
            continue
    if data_key is None:
        fail(3, "wrong_passphrase", "incorrect passphrase (no argon2id stanza opens)")
    mac_key = blake(b"vault v2 header mac", key=data_key)
    body_key = blake(b"vault v2 body key", key=data_key)
    hl = len(header)
    mac = file[hl:hl + 32]
    if not hmac.compare_digest(mac, blake(header, key=mac_key)):        # step 3
        corrupt("header_mac_mismatch", "the header MAC does not verify (the header was changed)")
    if links and links[-1][1][32:64] != signing_public(data_key):      # the last link names this key's signing key
        corrupt("bad_key_link", f"key_link stanza {links[-1][0]}'s signing key is not the data key's")
    try:                                                                 # step 4
        plain = secret.SecretBox(body_key).decrypt(file[hl + 56:], file[hl + 32:hl + 56])
    except exceptions.CryptoError:
        corrupt("body_mac_mismatch", "the body does not open (tampered)")
    entries, tombstones, replicas = read_plaintext(plain, blake(header + mac), version)
    out = {"vault_id": vault_id.hex(), "generation": generation, "entries": entries,
           "tombstones": tombstones, "replicas": replicas}
    if version == 3:
        out.update(format_version=3)
    names = replica_names(header, data_key)
    if names:
        out.update(replica_names=names)
    labels = recipient_labels(header, data_key, recipients)
    if labels:
        out.update(recipient_labels=labels)
    return out


def main():
    if len(sys.argv) != 2:
        fail(1, "usage", "usage: VAULT_PASSPHRASE=... read_vault_v2.py VAULT")
    passphrase = os.environb.get(b"VAULT_PASSPHRASE")
    identity = os.environ.get("VAULT_IDENTITY")
    if passphrase is None and identity is None:
        fail(1, "no_passphrase_source", "set VAULT_PASSPHRASE (the passphrase is never read from the arguments)")
    try:
        with open(sys.argv[1], "rb") as f:
            start = f.read(8)
            size = os.fstat(f.fileno()).st_size
            if len(start) == 8 and start == MAGIC and size <= MAX_FILE:   # magic and bound before the rest
                file = start + f.read()
                size = len(file)
            else:
                file = start
                size = len(start) if len(start) < 8 else size
    except OSError as error:
        fail(1, "io_error", f"cannot read '{sys.argv[1]}': {error.strerror}")
    out = read(file, size, passphrase, identity)
    sys.stdout.buffer.write(json.dumps(out, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generator of the test vectors of vault format v3 (docs/FORMAT.md, "version 3"), with PyNaCl only.

    python3 Tests/Vectors/generate_v3.py          # rewrites Tests/Vectors/v3/*.vault, expected.json and README.md
    python3 Tests/Vectors/generate_v3.py DIR      # writes them to DIR instead

Version 3 is version 2 with a horizon, each replica's seen, and tombstones that say which version they deleted (of)
and may keep a concurrent version: this generator takes generate_v2.py's model, encoding and sealing (the same seed,
data key and passphrase "correct horse battery staple", the test KDF parameters) and adds the version-3 documents.
Deterministic, as generate_v2.py. expected.json as v2's: for a valid file the object Tests/Interop/read_vault_v2.py
prints (computed here from the model), for a malformed one {"exit", "code"}. Each malformed file breaks exactly one
rule of version 3 (or, for the vectors that pin the order of the checks, the rule checked first); what version 3
keeps of version 2 is in Tests/Vectors/v2. Tests/Vectors/check_v2.py replays them (with v2).
"""
import os, struct, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_v2 as v2  # noqa: E402  (the shared model, encoding and sealing)
from generate_v2 import (RA, RB, T, Index, bad, det, entry, field, plain_bad, seal, small, stamp, time, uvar,  # noqa: E402
                         valid, version)

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "v3")
RC = (1 << 64) - 1  # a third replica, above RA and RB
TOP = ((1 << 48) - 1, 0xFFFF)  # the largest time: 2^48 - 1 ms, counter 65,535
MIN_REPLICA, MIN_TOMBSTONE = 24, 35


def kept(name, modified, fields, **over):
    """A kept version: the entry's name then, and a version marked conflict (flags bit 0)."""
    return dict(name=name, version=version(modified, fields, conflict=True), **over)


def tombstone(label, deleted, of, kept_=None, **over):
    return (det(f"v3 tombstone {label}", 16), deleted, dict(of=of, kept=kept_, **over))


def v3(doc, horizon=(0, 0), seen=None):
    doc.update(version=3, horizon=horizon, seen=seen or {})
    return doc


def small3():
    """small() in version 3: a horizon, replica RA's seen, and one tombstone with a kept version (the plaintext
    stays one 256-byte block): deleted at T+90, of T+10, kept at T+50, all by RA."""
    d = v3(small(), horizon=(T - 1000, 0), seen={RA: (T + 50, 0)})
    d["tombstones"] = [tombstone("gone", stamp(T + 90, 0, RA), stamp(T + 10, 0, RA),
                                 kept("gone", stamp(T + 50, 0, RA), [field("password", "kept", True)]))]
    return d


def kept_of(d):
    """The kept version of small3()'s tombstone."""
    return d["tombstones"][0][2]["kept"]


def basic3():
    """basic() in version 3: three replicas with seen set, a horizon below every deletion, a tombstone keeping a
    version with well-known, secret, spelled-out and binary fields, one keeping nothing, one keeping a version under
    the name a live entry has now."""
    d = v3(v2.basic(), horizon=(T - 86_400_000, 7), seen={RA: (T + 4000, 2), RB: (T + 3000, 0), RC: (T + 100, 1)})
    d["replicas"] = [(RA, (T + 6000, 0)), (RB, (T + 4000, 2)), (RC, (T + 5500, 3))]
    d["tombstones"] = [
        tombstone("with kept", stamp(T + 4500, 0, RA), stamp(T + 1000, 0, RA), kept(
            "aws root", stamp(T + 2000, 5, RC), [
                field("username", "root"), field("password", "kept-secret", True), field("url", "https://aws"),
                field("recovery codes", "r1 r2 r3", True), field("pin", "0000"), field("blob", v2.BINARY, True),
                field("empty", "")])),
        tombstone("without kept", stamp(T + 5000, 1, RB), stamp(T + 4999, 0, RA)),
        tombstone("kept name of live", stamp(T + 5500, 3, RC), stamp(T + 700, 0, RB), kept(
            "github", stamp(T + 800, 0, RA), [field("password", "an older github", True)]))]
    return d


def kept_names():
    """Kept names that need not be unique: equal to a live entry's (byte for byte, and canonically), twice among
    tombstones; a kept version without fields."""
    d = small3()
    d["entries"].append(entry("cafe", "cafe\u0301", stamp(T + 1, 0, RA), stamp(T + 1, 0, RA), []))
    d["tombstones"] = [
        tombstone("same as live", stamp(T + 90, 0, RA), stamp(T + 10, 0, RA),
                  kept("k", stamp(T + 50, 0, RA), [field("password", "kept k", True)])),
        tombstone("canonical of live", stamp(T + 91, 0, RA), stamp(T + 11, 0, RA),
                  kept("caf\u00e9", stamp(T + 51, 0, RA), [field("notes", "NFC of a live NFD name")])),
        tombstone("twice 1", stamp(T + 92, 0, RA), stamp(T + 12, 0, RA), kept("twice", stamp(T + 52, 0, RA), [])),
        tombstone("twice 2", stamp(T + 93, 0, RA), stamp(T + 13, 0, RA), kept("twice", stamp(T + 53, 0, RA), []))]
    return d


def clock_edges3():
    """Stamps ordered by time, then replica id: of, kept and deleted at one time and counter by RA < RB < RC; of one
    counter below deleted (one replica); kept one counter above of and below deleted; of at time 0 and deleted at the
    largest time, kept at the largest time by a lower replica; a replica whose seen is 0 (unknown) and one at the
    largest time."""
    d = v3(small(), horizon=(0, 0), seen={RA: (0, 0), RC: TOP})
    d["replicas"] = [(RA, (T + 100, 0)), (RB, (T + 100, 1)), (RC, TOP)]
    d["tombstones"] = [
        tombstone("one time", stamp(T, 5, RC), stamp(T, 5, RA), kept("one time", stamp(T, 5, RB), [])),
        tombstone("one tick", stamp(T + 1, 6, RA), stamp(T + 1, 5, RA)),
        tombstone("counter between", stamp(T + 2, 3, RB), stamp(T + 2, 1, RB),
                  kept("counter between", stamp(T + 2, 2, RB), [field("password", "2", True)])),
        tombstone("whole range", stamp(*TOP, RC), stamp(0, 0, RA),
                  kept("whole range", stamp(*TOP, RB), [field("notes", "at the largest time")])),
        tombstone("of by replica", stamp(T + 3, 0, RB), stamp(T + 3, 0, RA))]
    return d


def horizon_top():
    """The horizon at the largest time (every u64 time is valid), no tombstone; seen at the largest time."""
    d = v3(small(), horizon=TOP, seen={RA: TOP})
    d["replicas"] = [(RA, TOP)]
    return d


def kept_large():
    """A kept version beyond history's caps (no cap but the plaintext's): 70,000 bytes of values; a kept name of
    4,096 bytes (a 2-byte kept_name_length)."""
    d = small3()
    d["tombstones"] = [tombstone("large", stamp(T + 90, 0, RA), stamp(T + 10, 0, RA), kept(
        "\u00e9" * 2048, stamp(T + 50, 0, RA),
        [field("notes", "n" * 60000), field("password", "p" * 10000, True), field("big", det("big", 32).hex())]))]
    return d


def tombstones_fill3(count=4):
    """4 tombstones of 35 bytes (kept 0, 1-byte replica indexes) in exactly the 140 bytes left after their count
    (the count at its bound): 1 replica, an entry of 49 bytes, no padding."""
    d = v3(small(), horizon=(T, 0), seen={RA: (T, 0)})
    d["entries"] = [entry("fill", "f" * 19, stamp(T, 0, RA), stamp(T, 0, RA), [])]
    d["tombstones"] = [tombstone(f"fill {i}", stamp(T + 10 + i, 0, RA), stamp(T + i, 0, RA)) for i in range(4)]
    d["tombstone_count"] = count
    assert 32 + len(v2.payload(d)) == 256 and len(v2.payload(d)) - len(v2.payload({**d, "tombstones": []})) == 140
    return d


CUT_FIRST = tombstone("cut first", stamp(T + 90, 0, RA), stamp(T + 10, 0, RA), kept("", stamp(T + 50, 0, RA), []))


def cut(name, tail, rule):
    """A 256-byte plaintext (no padding) that ends inside the second of two tombstones: one replica, no entry,
    tombstone_count 2 (70 bytes: passes the count check), a first tombstone whose kept name fills what the tail
    (the second tombstone's bytes, up to where it ends) leaves."""
    head = struct.pack("<Q", time(T - 1000, 0)) + uvar(1) + struct.pack("<QQQ", RA, time(T + 100, 0), time(T, 0))
    head += uvar(0) + uvar(2)
    for extra in range(3):  # empty notes fields in the first tombstone's kept version, when no name length fits
        first = dict(CUT_FIRST[2], kept=dict(CUT_FIRST[2]["kept"]))
        first["kept"]["version"] = version(stamp(T + 50, 0, RA), [field("notes", "")] * extra, conflict=True)
        fixed = len(v2.enc_tombstone((CUT_FIRST[0], CUT_FIRST[1], first), [RA], True)) - 1  # without the name
        room = 256 - 32 - len(head) - len(tail) - fixed  # for kept_name_length and the name
        for n in (room - 1, room - 2):  # the name and its 1- or 2-byte length
            if 1 <= n <= 4096 and len(uvar(n)) + n == room:
                first["kept"]["name"] = "n" * n
                data = head + v2.enc_tombstone((CUT_FIRST[0], CUT_FIRST[1], first), [RA], True) + tail
                if 32 + len(data) == 256:
                    d = small()
                    d.update(version=3, payload=data)
                    bad(name, seal(d, name, padding=b""), 6, "entry_truncated", rule)
                    return
    raise AssertionError(f"{name}: no filler fits a tail of {len(tail)} bytes")


def main():
    # ---- valid
    valid("valid-v3-basic.vault", basic3(), "none: horizon and seen set (3 replicas), a tombstone keeping a version "
          "with well-known, secret, spelled-out, binary and empty fields, a tombstone keeping nothing, a kept name "
          "equal to a live entry's (\"github\")")
    valid("valid-v3-kept-names.vault", kept_names(), "none: kept names need not be unique: \"k\" as the live entry, "
          "\"caf\\u00e9\" canonically equal to the live \"cafe\\u0301\", \"twice\" in two tombstones; kept versions "
          "without fields")
    valid("valid-v3-clock-edges.vault", clock_edges3(), "none: of < kept < deleted at one time and counter by "
          "replica id alone (RA < RB < RC); of one counter below deleted; kept one counter from each; of at 0, "
          "deleted and kept at the largest time; of below deleted by replica id only; seen 0 and the largest")
    valid("valid-v3-horizon-top.vault", horizon_top(), "none: horizon and seen at the largest time (2^48-1 ms, "
          "counter 65,535), no tombstone")
    d = v3(small(), horizon=(0, 0))
    d.update(replicas=[], entries=[], tombstones=[], generation=1)
    valid("valid-v3-empty.vault", d, "none: horizon 0, no replica, entry or tombstone")
    valid("valid-v3-kept-large.vault", kept_large(), "none: a kept version of 70,000 bytes of names and values "
          "(history's 65,536-byte cap does not apply), a 4,096-byte kept name (2-byte kept_name_length)")
    valid("valid-v3-tombstones-fill.vault", tombstones_fill3(), "none: tombstone_count 4 with exactly 4 x 35 bytes "
          "left (at the bound), no padding")
    d = v3(small(), horizon=(T - 1000, 0), seen={RA: (T + 50, 0)})
    d["tombstones"] = [tombstone("of unknown", stamp(T + 90, 0, RA), stamp(T + 90, 0, RA)),
                       tombstone("of known", stamp(T + 91, 0, RA), stamp(T + 10, 0, RA))]
    valid("valid-v3-of-equals-deleted.vault", d, "none: a tombstone whose of equals its deleted stamp (the version "
          "deleted not known, as a version-2 tombstone is read), nothing kept; beside one whose of is below")
    valid("valid-v3-small.vault", small3(), "none: the base of the malformed plaintexts below (one entry, one "
          "tombstone keeping a version)")

    # ---- before any key: the version, the size
    good = seal(small3(), "good")
    hl = struct.unpack_from("<I", good, 10)[0]
    for n in (4, 1, 0xFFFF):
        bad(f"unsupported-version-{n}.vault", good[:8] + struct.pack("<H", n) + good[10:], 6, "unsupported_version",
            f"version {n} in a version-3 file (a version-3 reader reads 2 and 3)")
    bad("truncated-body.vault", good[:hl + 32 + 24 + 16 + 255], 6, "truncated",
        "header_length + 327 bytes: a plaintext shorter than 256 bytes (too short for the horizon too) is refused "
        "at the file's size, before any key; no sealed plaintext is shorter than 256 bytes")

    # ---- a plaintext of the other version's layout: refused, not misread (here at a count)
    d = small()
    d.update(version=3, layout=2)
    assert v2.payload(d)[8] * MIN_REPLICA > 256 - 32 - 9  # RA's last byte read as the replica count
    plain_bad("v2-plaintext-under-v3-header.vault", lambda d: d.update(version=3, layout=2),
              "entry_count_exceeds_data", f"a version-2 plaintext under a version-3 header: the horizon takes the "
              f"replica count and 7 bytes of RA's id, the id's last byte (0x{v2.payload(d)[8]:02x}) is read as the "
              f"replica count", base=small)
    d = small3()
    p3 = v2.payload(d)
    assert p3[0] == p3[1] == 0 and p3[2] * 25 > 256 - 32 - 3  # the horizon's bytes read as version 2's counts
    plain_bad("v3-plaintext-under-v2-header.vault", lambda d: d.update(version=2, layout=3),
              "entry_count_exceeds_data", f"a version-3 plaintext under a version-2 header: the horizon's first "
              f"bytes are read as replica count 0, entry count 0 and tombstone count {p3[2]}", base=small3)

    # ---- the plaintext, in the order a reader reads it
    rest = 256 - 32 - 8 - 1  # after the horizon and the replica count
    plain_bad("replica-count-exceeds-data.vault", lambda d: d.update(replica_count=rest // MIN_REPLICA + 1),
              "entry_count_exceeds_data", f"replica_count {rest // MIN_REPLICA + 1}: {rest} bytes hold at most "
              f"{rest // MIN_REPLICA} replicas of 24 bytes (version 2's 16 would allow {rest // 16})", base=small3)
    bad("tombstone-count-exceeds-data.vault", seal(tombstones_fill3(5), "tombstone-count-exceeds-data"), 6,
        "entry_count_exceeds_data", "tombstone_count 5 with 140 bytes left (5 x 35 = 175 > 140; version 2's 25 "
        "would allow it)")
    def entry_id(d):
        d["tombstones"][0] = (d["entries"][0]["id"],) + d["tombstones"][0][1:]
    plain_bad("duplicate-id.vault", entry_id, "duplicate_id", "a tombstone with a kept version has the live entry's "
              "id", base=small3)

    def of(d, s, **over):
        d["tombstones"][0][2].update(of=s, **over)

    def kept_at(d, s, **over):
        kept_of(d)["version"].update(modified=s, **over)
    plain_bad("clock-of-equals-deleted-kept.vault", lambda d: (of(d, stamp(T + 90, 0, RA)), kept_at(d, stamp(T + 90, 0, RA))),
              "bad_clock", "of equal to deleted (the version deleted unknown) and a kept version, at that stamp: "
              "nothing can be kept (its stamp cannot lie between)", base=small3)
    plain_bad("clock-of-equals-deleted-kept-below.vault", lambda d: of(d, stamp(T + 90, 0, RA)), "bad_clock",
              "of equal to deleted and a kept version below both (T+50): nothing can be kept", base=small3)
    plain_bad("clock-of-after-deleted.vault", lambda d: of(d, stamp(T + 91, 0, RA), kept=None), "bad_clock",
              "of one millisecond after deleted, nothing kept", base=small3)
    plain_bad("clock-of-after-deleted-counter.vault", lambda d: of(d, stamp(T + 90, 1, RA), kept=None), "bad_clock",
              "of one counter after deleted, nothing kept", base=small3)

    def two_replicas(d):
        d["replicas"] = [(RA, (T + 100, 0)), (RB, (T + 100, 0))]
        return d
    plain_bad("clock-of-after-deleted-replica.vault",
              lambda d: of(two_replicas(d), stamp(T + 90, 0, RB), kept=None), "bad_clock",
              "of at deleted's time and counter by a higher replica id (RB > RA), nothing kept", base=small3)
    plain_bad("clock-of-index-beyond.vault", lambda d: of(d, stamp(T + 10, 0, RA), of_index=1), "bad_clock",
              "of's replica index 1, a table of 1", base=small3)
    plain_bad("clock-order-of-before-kept-byte.vault", lambda d: of(d, stamp(T + 91, 0, RA), kept=None, kept_byte=2),
              "bad_clock", "of one millisecond after deleted, checked when of is read, before the kept byte 2",
              base=small3)
    plain_bad("clock-order-duplicate-id-before-of.vault", lambda d: (entry_id(d), of(d, stamp(T + 90, 0, RA))),
              "duplicate_id", "a tombstone with the entry's id and of equal to deleted: the "
        "id is checked first", base=small3)

    for name, s, rule in [
        ("clock-kept-equals-of", stamp(T + 10, 0, RA), "the kept version's stamp equal to of"),
        ("clock-kept-equals-deleted", stamp(T + 90, 0, RA), "the kept version's stamp equal to deleted"),
        ("clock-kept-below-of", stamp(T + 9, 0, RA), "the kept version's stamp one millisecond below of"),
        ("clock-kept-below-of-counter", stamp(T + 9, 0xFFFF, RA), "the kept version's stamp one tick below of"),
        ("clock-kept-above-deleted", stamp(T + 91, 0, RA), "the kept version's stamp one millisecond above deleted"),
        ("clock-kept-above-deleted-counter", stamp(T + 90, 1, RA), "the kept version's stamp one counter above "
         "deleted"),
        ("clock-kept-max", stamp(*TOP, RA), "the kept version's stamp at the largest time, above deleted"),
    ]:
        plain_bad(f"{name}.vault", lambda d, s=s: kept_at(d, s), "bad_clock", rule, base=small3)
    plain_bad("clock-kept-above-deleted-replica.vault", lambda d: kept_at(two_replicas(d), stamp(T + 90, 0, RB)),
              "bad_clock", "the kept stamp at deleted's time and counter by a higher replica id", base=small3)
    plain_bad("clock-kept-equals-of-replica.vault", lambda d: (
        two_replicas(d), of(d, stamp(T + 10, 0, RB)), kept_at(d, stamp(T + 10, 0, RA))), "bad_clock",
        "of at (T+10, RB), the kept stamp at (T+10, RA): below of by replica id", base=small3)
    plain_bad("clock-kept-index-beyond.vault", lambda d: kept_at(d, stamp(T + 50, 0, RA), index=1), "bad_clock",
              "the kept version's replica index 1, a table of 1", base=small3)

    # the kept byte
    for k in (2, 255):
        plain_bad(f"bad-tombstone-kept-{k}.vault", lambda d, k=k: d["tombstones"][0][2].update(kept=None, kept_byte=k),
                  "bad_tombstone", f"kept byte {k} (0 or 1)", base=small3)
    plain_bad("bad-tombstone-kept-2-with-version.vault", lambda d: d["tombstones"][0][2].update(kept_byte=2),
              "bad_tombstone", "kept byte 2 followed by a well-formed kept name and version", base=small3)
    plain_bad("bad-tombstone-kept-0x81.vault", lambda d: d["tombstones"][0][2].update(kept_byte=0x81),
              "bad_tombstone", "kept byte 0x81 (bit 0 set, as a flags byte, but not 1)", base=small3)

    # the kept name: entry names' rules, not their uniqueness
    for name, value, code, rule in [
        ("kept-name-empty", "", "bad_name_length", "kept_name_length 0"),
        ("kept-name-4097", "n" * 4097, "bad_name_length", "kept_name_length 4,097 (the bytes are there)"),
        ("kept-name-not-utf8", b"caf\xe9", "name_not_utf8", "kept name in Latin-1"),
        ("kept-name-surrogate", b"\xed\xa0\x80", "name_not_utf8", "kept name: an encoded surrogate (U+D800)"),
        ("kept-name-overlong", b"\xc0\xaf", "name_not_utf8", "kept name: an overlong encoding of '/'"),
        ("kept-name-control-character", "tab\there", "bad_name", "kept name with U+0009 (C0)"),
        ("kept-name-del", "del\u007f", "bad_name", "kept name with U+007F (DEL)"),
        ("kept-name-c1-control", "c1\u0085", "bad_name", "kept name with U+0085 (C1)"),
    ]:
        plain_bad(f"{name}.vault", lambda d, value=value: kept_of(d).update(name=value), code, rule, base=small3)
    plain_bad("kept-name-length-max-uvar.vault", lambda d: kept_of(d).update(name_length=(1 << 64) - 1),
              "bad_name_length", "kept_name_length 2^64-1 (a well-formed uvar)", base=small3)
    plain_bad("kept-name-length-not-minimal.vault", lambda d: kept_of(d).update(name_length=b"\x84\x00"),
              "bad_varint", "kept_name_length 84 00 (4 in two bytes)", base=small3)
    plain_bad("kept-order-name-before-clock.vault", lambda d: (kept_of(d).update(name=""),
                                                             kept_at(d, stamp(T + 90, 0, RA))), "bad_name_length",
              "an empty kept name and a kept stamp equal to deleted: the name is read first", base=small3)

    # the kept version's fields: the field rules
    def kept_fields(d, *fields, **over):
        kept_of(d)["version"]["fields"].extend(fields)
        kept_of(d)["version"].update(**over)
    for name, f, rule in [
        ("kept-field-kind-6", field("x", "w", kind=6), "a kept field of kind 6 (reserved)"),
        ("kept-field-kind-0x86", field("x", "w", kind=0x86), "a kept field of kind 0x86 (reserved 6, secret)"),
        ("kept-field-kind-127", field("x", "w", kind=0x7F), "a kept field of kind 127 (reserved)"),
        ("kept-field-name-well-known", field("password", "w", kind=0), "\"password\" spelled out (kind 0) in a kept "
         "version"),
        ("kept-field-duplicate", field("password", "w"), "two password fields in a kept version"),
        ("kept-field-name-empty", field("", "w"), "a spelled-out kept field name of 0 bytes"),
        ("kept-field-name-not-utf8", field(b"p\xffw", "w"), "a kept field name not UTF-8"),
        ("kept-field-name-control-character", field("a\nb", "w"), "a kept field name with U+000A"),
    ]:
        plain_bad(f"{name}.vault", lambda d, f=f: kept_fields(d, f), "bad_field", rule, base=small3)
    plain_bad("kept-too-many-fields.vault", lambda d: kept_fields(d, *[field(f"f{i}", "") for i in range(1024)]),
              "bad_field", "1,025 fields in a kept version (the field rules' cap; \"no cap but the plaintext's\" "
              "read as history's caps)", base=small3)
    plain_bad("kept-value-length.vault", lambda d: kept_of(d)["version"]["fields"][0].update(value_length=(64 << 20) + 1),
              "bad_value_length", "a kept field's value_length 64 MiB + 1", base=small3)
    plain_bad("kept-value-length-max-uvar.vault",
              lambda d: kept_of(d)["version"]["fields"][0].update(value_length=(1 << 64) - 1), "bad_value_length",
              "a kept field's value_length 2^64-1 (a well-formed uvar)", base=small3)
    plain_bad("kept-order-clock-before-fields.vault", lambda d: (kept_at(d, stamp(T + 90, 0, RA)),
                                                               kept_fields(d, field("x", "w", kind=6))), "bad_clock",
              "the kept stamp equal to deleted, checked before a reserved field kind", base=small3)

    # running out of plaintext inside a version-3 tombstone (the second of two)
    t0 = struct.pack("<Q", time(T, 0))
    tid = det("v3 tombstone cut second", 16)
    deleted, of_ = struct.pack("<Q", time(T + 90, 0)) + uvar(0), struct.pack("<Q", time(T + 10, 0)) + uvar(0)
    k = tid + deleted + of_ + b"\x01"
    name = uvar(4) + b"gone"
    vs = struct.pack("<Q", time(T + 50, 0)) + uvar(0)
    pw = struct.pack("<B", 0x81)
    cut("tombstone-truncated-deleted.vault", tid + t0[:5], "the plaintext ends inside the deleted stamp's time")
    cut("tombstone-truncated-of-time.vault", tid + deleted + t0[:5], "the plaintext ends inside of's time")
    cut("tombstone-truncated-of-index.vault", tid + deleted + t0 + b"\x80",
        "the plaintext ends inside of's replica index (a uvar byte 0x80, more to come)")
    cut("tombstone-truncated-kept-byte.vault", tid + deleted + of_, "the plaintext ends before the kept byte")
    cut("tombstone-truncated-kept-name-length.vault", k, "kept 1, the plaintext ends before kept_name_length")
    cut("tombstone-truncated-kept-name-length-uvar.vault", k + b"\x85",
        "the plaintext ends inside kept_name_length (a uvar byte 0x85, more to come)")
    cut("tombstone-truncated-kept-name.vault", k + uvar(20) + b"gone", "the plaintext ends inside the kept name "
        "(kept_name_length 20)")
    cut("tombstone-truncated-kept-stamp.vault", k + name + t0[:5], "the plaintext ends inside the kept version's "
        "stamp")
    cut("tombstone-truncated-kept-flags.vault", k + name + vs, "the plaintext ends before the kept version's flags")
    cut("tombstone-truncated-kept-field-count.vault", k + name + vs + b"\x01",
        "the plaintext ends before the kept version's field_count")
    cut("tombstone-truncated-kept-field-kind.vault", k + name + vs + b"\x01" + uvar(1),
        "field_count 1, the plaintext ends before the kept field's kind")
    cut("tombstone-truncated-kept-field-name.vault", k + name + vs + b"\x01" + uvar(1) + b"\x00" + uvar(20) + b"user",
        "the plaintext ends inside a spelled-out kept field name (name_length 20)")
    cut("tombstone-truncated-kept-value-length.vault", k + name + vs + b"\x01" + uvar(1) + pw + b"\x85",
        "the plaintext ends inside a kept field's value_length (a uvar byte 0x85, more to come)")
    cut("tombstone-truncated-kept-value.vault", k + name + vs + b"\x01" + uvar(1) + pw + uvar(50) + b"abc",
        "the plaintext ends inside a kept field's value (value_length 50)")
    cut("tombstone-truncated-kept-second-field.vault", k + name + vs + b"\x01" + uvar(2) + pw + uvar(1) + b"v",
        "field_count 2, the plaintext ends after the kept version's first field")
    plain_bad("tombstone-truncated-kept-value-past-end.vault",
              lambda d: kept_of(d)["version"]["fields"][0].update(value_length=1_000_000), "entry_truncated",
              "a kept field's value_length (1,000,000) runs past the end of the plaintext", base=small3)

    notes = [
        "Written by `Tests/Vectors/generate_v3.py` (never edit by hand; it shares generate_v2.py's model and sealing),",
        "replayed by `python3 Tests/Vectors/check_v2.py Tests/Vectors/v3`; passphrase \"correct horse battery",
        "staple\", test KDF parameters. `expected.json`: the outcome of each file (a valid file: what",
        "`Tests/Interop/read_vault_v2.py` prints, with \"format_version\", \"horizon\", replicas' \"time\" and",
        "\"seen\", tombstones' \"deleted\", \"of\" and \"kept\"). One line per file, by name: outcome: the rule it",
        "breaks. What version 3 keeps of version 2 is in `../v2`.",
        "",
        "Readings of docs/FORMAT.md (\"version 3\") these vectors take, where it leaves a choice (see `../README.md`):",
        "- A plaintext too short for the horizon cannot be sealed: every plaintext is at least 256 bytes, and a",
        "  shorter body is `truncated` at the file's size, before any key (`truncated-body.vault`).",
        "- Running out inside a replica (24 fixed bytes) cannot be `entry_truncated`: the count check refuses it",
        "  first (`replica-count-exceeds-data.vault`).",
        "- \"no cap but the plaintext's\" lifts history's caps (10 versions, 65,536 bytes), not the field rules'",
        "  1,024 fields (`valid-v3-kept-large.vault`, `kept-too-many-fields.vault`).",
        "- Running out of plaintext inside a tombstone is `entry_truncated` (version 2's text names entries and",
        "  counts only; version 3 keeps its errors).",
        "- `of` <= `deleted`, `of` = `deleted` a tombstone whose deleted version is not known: nothing can be kept,",
        "  and a kept version is refused at its stamp (`bad_clock`), which cannot lie strictly between.",
        "- The tombstone's id is checked for repeats as it is read, before `of` (\"each check as its field is",
        "  read\"; `clock-order-duplicate-id-before-of.vault`).",
        "- Version 1 is refused (`unsupported-version-1.vault`), as in `../v2`, although version 2 lets a reader",
        "  read version 1 (MAY): these readers do not.",
        "- Not pinned by any vector (the spec names no error): a kept version whose flags lack bit 0 (conflict) or",
        "  set reserved bits (the reader: accepted / `bad_history`, as version 2's versions), a tombstone",
        "  deleted below the horizon, a replica's seen above its time (the reader accepts both).",
        ""]
    v2.write(OUT, ["# Format v3 test vectors", ""] + notes)


if __name__ == "__main__":
    main()

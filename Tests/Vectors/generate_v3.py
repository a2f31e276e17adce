#!/usr/bin/env python3
"""Generator of the test vectors of vault format v3 (docs/FORMAT.md, "version 3"), with PyNaCl only.

    python3 Tests/Vectors/generate_v3.py          # rewrites Tests/Vectors/v3/*.vault, expected.json and README.md
    python3 Tests/Vectors/generate_v3.py DIR      # writes them to DIR instead

Version 3 is version 2 with, per replica, a dropped mark and a seen row (its table when it last wrote), and tombstones
that say which version they deleted (of) and may keep a concurrent version: this generator takes generate_v2.py's
model, encoding and sealing (the same seed, data key and passphrase "correct horse battery staple", the test KDF
parameters) and adds the version-3 documents.
Deterministic, as generate_v2.py. expected.json as v2's: for a valid file the object Tests/Interop/read_vault_v2.py
prints (computed here from the model), for a malformed one {"exit", "code"}. Each malformed file breaks exactly one
rule of version 3 (or, for the vectors that pin the order of the checks, the rule checked first); what version 3
keeps of version 2 is in Tests/Vectors/v2. Tests/Vectors/check_v2.py replays them (with v2).
"""
import os, struct, sys

from nacl import signing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate_v2 as v2  # noqa: E402  (the shared model, encoding and sealing)
from nacl import secret  # noqa: E402
from generate_v2 import (RA, RB, T, VECTORS, Index, bad, shown, det, entry, field, plain_bad, seal, small, stamp, time, uvar,  # noqa: E402
                         valid, version)

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "v3")
RC = (1 << 64) - 1  # a third replica, above RA and RB
TOP = ((1 << 48) - 1, 0xFFFF)  # the largest time: 2^48 - 1 ms, counter 65,535
MIN_REPLICA, MIN_TOMBSTONE = 25, 35


def kept(name, modified, fields, **over):
    """A kept version: the entry's name then, and a version marked conflict (flags bit 0)."""
    return dict(name=name, version=version(modified, fields, conflict=True), **over)


def tombstone(label, deleted, of, kept_=None, **over):
    return (det(f"v3 tombstone {label}", 16), deleted, dict(of=of, kept=kept_, **over))


def v3(doc, dropped=None, seen=None):
    """doc in version 3: dropped {replica: (ms, counter)}, seen {replica: [(replica, (ms, counter)), ...]}."""
    doc.update(version=3, dropped=dict(dropped or {}), seen={r: list(row) for r, row in (seen or {}).items()})
    return doc


def small3():
    """small() in version 3: RA's dropped below its deletion, RA's seen row (itself, at its time), and one tombstone
    with a kept version: deleted at T+90, of T+10, kept at T+50, all by RA."""
    d = v3(small(), dropped={RA: (T - 1000, 0)}, seen={RA: [(RA, (T + 100, 0))]})
    d["tombstones"] = [tombstone("gone", stamp(T + 90, 0, RA), stamp(T + 10, 0, RA),
                                 kept("gone", stamp(T + 50, 0, RA), [field("password", "kept", True)]))]
    return d


def sync3():
    """small3() with three replicas: RA (T+100) with a full seen row, RB (T+200) with none, RC (T+50) seeing RA only;
    RB's dropped at T+150. The base of the malformed seen and dropped rules."""
    d = small3()
    d["replicas"] = [(RA, (T + 100, 0)), (RB, (T + 200, 0)), (RC, (T + 50, 0))]
    d["dropped"][RB] = (T + 150, 0)
    d["seen"] = {RA: [(RA, (T + 100, 0)), (RB, (T + 200, 0)), (RC, (T + 50, 0))], RC: [(RA, (T + 100, 0))]}
    return d


def kept_of(d):
    """The kept version of small3()'s tombstone."""
    return d["tombstones"][0][2]["kept"]


def basic3():
    """basic() in version 3: three replicas, RA with a full seen row (at the table's times, as a writer leaves it),
    RB without one (not known), RC with a row that skips RB; dropped below each replica's deletions (RB's 0); a
    tombstone keeping a version with well-known, secret, spelled-out and binary fields, one keeping nothing, one
    keeping a version under the name a live entry has now."""
    d = v3(v2.basic(), dropped={RA: (T + 1000, 0), RC: (T + 5000, 0)},
           seen={RA: [(RA, (T + 6000, 0)), (RB, (T + 4000, 2)), (RC, (T + 5500, 3))],
                 RC: [(RA, (T + 2000, 0)), (RC, (T + 5500, 3))]})
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


def sync_edges():
    """dropped and seen at their bounds: RA's dropped at its own time; RB's one counter below its tombstone; RC's 0,
    with a tombstone at RA's dropped and below RB's (only its own replica's dropped counts); RC's seen row above RC's
    own time, at the times the table holds for RA and RB (a seen time is bounded by the replica it names); RA's row
    at the smallest time (0.1) and naming a later replica (RC) at its time; RB's row naming the last replica only."""
    d = v3(small(), dropped={RA: (T + 100, 0), RB: (T + 150, 7)},
           seen={RA: [(RA, (0, 1)), (RC, (T + 50, 0))], RB: [(RC, (1, 0))],
                 RC: [(RA, (T + 100, 0)), (RB, (T + 200, 5))]})
    d["replicas"] = [(RA, (T + 100, 0)), (RB, (T + 200, 5)), (RC, (T + 50, 0))]
    d["tombstones"] = [tombstone("above dropped", stamp(T + 150, 8, RB), stamp(T + 150, 8, RB)),
                       tombstone("at another's dropped", stamp(T + 100, 0, RC), stamp(T + 10, 0, RA))]
    return d


def sync_top():
    """dropped and seen at the largest time (every u64 time is valid): RA at the largest time with its dropped
    there and a full seen row; RB at the largest time, its dropped one tick below, and its tombstone at the largest
    time (just above its dropped)."""
    below = (TOP[0], TOP[1] - 1)
    d = v3(small(), dropped={RA: TOP, RB: below}, seen={RA: [(RA, TOP), (RB, TOP)], RB: [(RB, TOP)]})
    d["replicas"] = [(RA, TOP), (RB, TOP)]
    d["tombstones"] = [tombstone("at the top", stamp(*TOP, RB), stamp(*below, RB))]
    return d


def seen_wide():
    """Seen rows of 2-byte uvars: 200 replicas, the last with a full row (seen_count 200, indexes 128 to 199 in two
    bytes), the first with one index (150) in two bytes, the others without a row."""
    ids = sorted(int.from_bytes(det(f"v3 wide replica {i}", 8), "little") for i in range(200))
    d = v3(small(), seen={ids[199]: [(r, (T + 1000, i)) for i, r in enumerate(ids)], ids[0]: [(ids[150], (T, 0))]},
           dropped={ids[150]: (T + 1000, 149)})
    d["replicas"] = [(rid, (T + 1000, i)) for i, rid in enumerate(ids)]
    d["entries"] = [entry("wide", "wide", stamp(T, 0, ids[150]), stamp(T + 1000, 150, ids[150]), [])]
    d["tombstones"] = [tombstone("wide", stamp(T + 1000, 150, ids[150]), stamp(T + 1000, 150, ids[150]))]
    assert len(uvar(200)) == 2 and len(uvar(150)) == 2
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
    largest time, kept at the largest time by a lower replica; RA without a seen row, RC with a full one up to the
    largest time; RB's and RC's dropped one counter below their first deletions."""
    d = v3(small(), dropped={RB: (T + 2, 2), RC: (T, 4)},
           seen={RC: [(RA, (T + 100, 0)), (RB, (T + 100, 1)), (RC, TOP)]})
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
    (the count at its bound): 1 replica with a one-entry seen row, an entry of 47 bytes, no padding."""
    d = v3(small(), dropped={RA: (T, 0)}, seen={RA: [(RA, (T, 0))]})
    d["replicas"] = [(RA, (T, 0))]
    d["entries"] = [entry("fill", "f" * 17, stamp(T, 0, RA), stamp(T, 0, RA), [])]
    d["tombstones"] = [tombstone(f"fill {i}", stamp(T + 10 + i, 0, RA), stamp(T + i, 0, RA)) for i in range(4)]
    d["tombstone_count"] = count
    assert 32 + len(v2.payload(d)) == 256 and len(v2.payload(d)) - len(v2.payload({**d, "tombstones": []})) == 140
    return d


CUT_FIRST = tombstone("cut first", stamp(T + 90, 0, RA), stamp(T + 10, 0, RA), kept("", stamp(T + 50, 0, RA), []))


def cut(name, tail, rule):
    """A 256-byte plaintext (no padding) that ends inside the second of two tombstones: one replica (dropped 0, no
    seen row), no entry, tombstone_count 2 (70 bytes: passes the count check), a first tombstone whose kept name
    fills what the tail (the second tombstone's bytes, up to where it ends) leaves."""
    head = uvar(1) + struct.pack("<QQQ", RA, time(T + 100, 0), 0) + uvar(0) + uvar(0) + uvar(2)
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


def cut_table(name, tail, rule):
    """A plaintext of 256 or 512 bytes (no padding) that ends inside the replica table: n replicas (n * 25 bytes fit:
    the count passes), the first n - 1 whole (times T+100, dropped 0, seen rows of 9-byte entries at time T, indexes
    below n and increasing) and the last, RC, cut: tail(n) is its bytes up to where the plaintext ends. The seen rows
    fill what the tail leaves; only the replica count, the ids' order and the rules checked as read come before the
    end."""
    for size in (256, 512):
        for n in range(2, min(127, (size - 32 - 1) // MIN_REPLICA) + 1):
            ids = sorted(int.from_bytes(det(f"v3 cut replica {i}", 8), "little") for i in range(n - 1))
            rest = size - 32 - 1 - len(tail(n)) - MIN_REPLICA * (n - 1)  # for the whole replicas' seen entries
            if rest < 0 or rest % 9 or rest // 9 > (n - 1) * n:
                continue
            rows, left = [], rest // 9
            for _ in ids:
                rows.append(min(left, n))
                left -= rows[-1]
            data = uvar(n) + b"".join(struct.pack("<QQQ", rid, time(T + 100, i), 0) + uvar(k)
                                      + b"".join(uvar(j) + struct.pack("<Q", time(T, 0)) for j in range(k))
                                      for i, (rid, k) in enumerate(zip(ids, rows))) + tail(n)
            assert 32 + len(data) == size and n * MIN_REPLICA <= size - 32 - 1 and max(ids) < RC
            d = small()
            d.update(version=3, payload=data)
            bad(name, seal(d, name, padding=b""), 6, "entry_truncated", rule)
            return
    raise AssertionError(f"{name}: no table fits a tail of {len(tail(2))} bytes")


def signing_key(data_key):
    """The data key's Ed25519 signing key (docs/FORMAT.md, "Key changes"): seed BLAKE2b-256(key = data_key,
    "vault key change signing")."""
    return signing.SigningKey(v2.blake(b"vault key change signing", key=data_key))


def key_link(vault_id, old_key, old_id, new_key, new_id, reason=1, signer=None, signing_public=None):
    """A key_link stanza (type 4): old_key_id || new_key_id || new_signing_key || reason || Ed25519 signature by the old
    key's signing key (signer: another data key's instead; signing_public: another new_signing_key)."""
    new_signing = signing_public or bytes(signing_key(new_key).verify_key)
    signed = old_id + new_id + new_signing + bytes([reason])
    signature = signing_key(signer or old_key).sign(b"vault key link v1" + vault_id + signed).signature
    return (4, signed + signature)


def key_links():
    """A chain of two key changes, K0 -> K1 -> the generator's data key, and every rule of the links broken once."""
    k0, id0 = det("link key 0", 32), det("link key id 0", 16)
    k1, id1 = det("link key 1", 32), det("link key id 1", 16)
    k2, id2 = v2.DATA_KEY, det("data key id", 16)
    vid = det("vault id", 16)

    def with_links(*links):
        d = small3()
        d["stanzas"] = d["stanzas"] + list(links)
        return d

    first, second = key_link(vid, k0, id0, k1, id1, 1), key_link(vid, k1, id1, k2, id2, 2)
    valid("valid-v3-key-links.vault", with_links(first, second), "none: two key links after the argon2id stanza, "
          "K0 -> K1 (reason 1, signed with K0's signing key) -> the data key (reason 2, signed with K1's): a chain "
          "that ends at data_key_id, whose last signing key is the data key's")
    d = small3()
    d["stanzas"] = [first, second] + d["stanzas"]
    valid("valid-v3-key-links-first.vault", d, "none: the same two links before the argon2id stanza (links are "
          "read in stanza order, wherever they are)")
    bad_signature = bytearray(second[1]); bad_signature[100] ^= 1
    bad("key-link-bad-signature.vault", seal(with_links(first, (4, bytes(bad_signature))), "kl-sig"), 6, "bad_key_link",
        "the second link's signature (one bit flipped) does not verify under the first link's new_signing_key")
    bad("key-link-signed-by-other.vault", seal(with_links(first, key_link(vid, k1, id1, k2, id2, 2, signer=k0)), "kl-signer"),
        6, "bad_key_link", "the second link is signed with K0's signing key, not with K1's (the first link's new one)")
    bad("key-link-broken-chain.vault", seal(with_links(second, first), "kl-order"), 6, "bad_key_link",
        "the links out of order: the second's old_key_id is not the first's new_key_id")
    bad("key-link-not-to-data-key.vault", seal(with_links(first), "kl-end"), 6, "bad_key_link",
        "the last link leads to K1, not to the header's data_key_id")
    wrong = key_link(vid, k1, id1, k2, id2, 2, signing_public=bytes(signing_key(k0).verify_key))
    bad("key-link-wrong-final-signing-key.vault", seal(with_links(first, wrong), "kl-final"), 6, "bad_key_link",
        "the chain verifies and ends at data_key_id, but the last new_signing_key is not the data key's (checked "
        "once the data key is known, after the header MAC)")
    bad("key-link-length-128.vault", seal(with_links((4, second[1][:128])), "kl-short"), 6, "bad_key_link",
        "a key_link stanza of 128 bytes (129 required), checked as it is read")
    bad("key-link-length-130.vault", seal(with_links((4, second[1] + b"\0")), "kl-long"), 6, "bad_key_link",
        "a key_link stanza of 130 bytes")
    for reason in (0, 4):
        link = bytearray(second[1]); link[64] = reason
        bad(f"key-link-reason-{reason}.vault", seal(with_links((4, bytes(link))), f"kl-reason-{reason}"), 6, "bad_key_link",
            f"reason {reason} (1 to 3 required), checked as the stanza is read")
    d = with_links(first)
    d["stanzas"] = [(4, second[1][:64])] + d["stanzas"]
    bad("key-link-order-length-before-chain.vault", seal(d, "kl-order-len"), 6, "bad_key_link",
        "a short link first and a chain not ending at the data key: the length is checked as read (either way "
        "bad_key_link; the library names the short link's index)")


def replica_names_stanza(names, key=None, label="replica names"):
    """A replica_names stanza (type 5, docs/FORMAT.md "Replica names"): nonce || SecretBox(BLAKE2b-256(key = data_key,
    "vault v3 replica names"), nonce, count u16 || (replica_id u64 || time u64 || name_length u8 || name)*)."""
    plain = struct.pack("<H", len(names)) + b"".join(
        struct.pack("<QQB", rid, (ms << 16) | counter, len(name.encode())) + name.encode() for rid, (ms, counter), name in names)
    nonce = det(label, 24)
    box = secret.SecretBox(v2.blake(b"vault v3 replica names", key=key or v2.DATA_KEY)).encrypt(plain, nonce).ciphertext
    return (5, nonce + box)


def replica_names():
    """Two named replicas (one name of several bytes per character), and a names stanza under another key (skipped)."""
    names = [(RA, (T + 100, 0), "alice@laptop"), (RB, (T + 5, 3), "zo\u00eb@b\u00fcro")]
    d = small3()
    d["stanzas"] = d["stanzas"] + [replica_names_stanza(names)]
    shown_names = {f"{rid:016x}": {"name": name, "time": f"{ms}.{counter}"} for rid, (ms, counter), name in names}
    VECTORS["valid-v3-replica-names.vault"] = (seal(d, "names"), dict(shown(d), replica_names=shown_names),
                                               "none: a replica_names stanza after the argon2id stanza naming RA and RB "
                                               "(RB not in the table): the names are read")
    d = small3()
    d["stanzas"] = d["stanzas"] + [replica_names_stanza(names, key=det("another data key", 32), label="other names")]
    valid("valid-v3-replica-names-other-key.vault", d, "none: a replica_names stanza that does not open under the data "
          "key: skipped as a stanza of a type not known (no names; the file is not refused)")


def main():
    # ---- valid
    replica_names()
    valid("valid-v3-basic.vault", basic3(), "none: 3 replicas: RA with a full seen row, RB without one, RC with a "
          "row that skips RB; dropped below each replica's deletions (RB's 0); a tombstone keeping a version with "
          "well-known, secret, spelled-out, binary and empty fields, a tombstone keeping nothing, a kept name equal "
          "to a live entry's (\"github\")")
    valid("valid-v3-kept-names.vault", kept_names(), "none: kept names need not be unique: \"k\" as the live entry, "
          "\"caf\\u00e9\" canonically equal to the live \"cafe\\u0301\", \"twice\" in two tombstones; kept versions "
          "without fields")
    valid("valid-v3-clock-edges.vault", clock_edges3(), "none: of < kept < deleted at one time and counter by "
          "replica id alone (RA < RB < RC); of one counter below deleted; kept one counter from each; of at 0, "
          "deleted and kept at the largest time; of below deleted by replica id only; no seen row and a full one up "
          "to the largest time; tombstones one counter above their replica's dropped")
    valid("valid-v3-sync-edges.vault", sync_edges(), "none: RA's dropped at its own time; a tombstone one counter "
          "above its replica's (RB's) dropped; a tombstone by RC (dropped 0) at RA's dropped and below RB's (only "
          "its own replica's counts); RC's seen times above RC's own time, at the times of the replicas they name; "
          "a seen time of 0.1; a row naming a later replica at its time; a row naming only the last replica")
    valid("valid-v3-sync-top.vault", sync_top(), "none: a dropped and seen times at the largest time (2^48-1 ms, "
          "counter 65,535); a tombstone at the largest time one tick above its replica's dropped")
    valid("valid-v3-seen-wide.vault", seen_wide(), "none: 200 replicas, a full seen row of 200 (seen_count and "
          "indexes 128 to 199 as 2-byte uvars), a row of one 2-byte index, rows of none")
    d = v3(small())
    d.update(replicas=[], entries=[], tombstones=[], generation=1)
    valid("valid-v3-empty.vault", d, "none: no replica, entry or tombstone")
    valid("valid-v3-kept-large.vault", kept_large(), "none: a kept version of 70,000 bytes of names and values "
          "(history's 65,536-byte cap does not apply), a 4,096-byte kept name (2-byte kept_name_length)")
    valid("valid-v3-tombstones-fill.vault", tombstones_fill3(), "none: tombstone_count 4 with exactly 4 x 35 bytes "
          "left (at the bound), no padding")
    d = small3()
    d["tombstones"] = [tombstone("of unknown", stamp(T + 90, 0, RA), stamp(T + 90, 0, RA)),
                       tombstone("of known", stamp(T + 91, 0, RA), stamp(T + 10, 0, RA))]
    valid("valid-v3-of-equals-deleted.vault", d, "none: a tombstone whose of equals its deleted stamp (the version "
          "deleted not known, as a version-2 tombstone is read), nothing kept; beside one whose of is below")
    valid("valid-v3-small.vault", small3(), "none: the base of the malformed plaintexts below (one replica with a "
          "dropped and a seen row, one entry, one tombstone keeping a version)")
    valid("valid-v3-sync3.vault", sync3(), "none: the base of the malformed seen and dropped rows below (RA with a "
          "full seen row, RB without one and its dropped at T+150, RC seeing RA)")

    # ---- before any key: the version, the size
    good = seal(small3(), "good")
    hl = struct.unpack_from("<I", good, 10)[0]
    for n in (4, 1, 0xFFFF):
        bad(f"unsupported-version-{n}.vault", good[:8] + struct.pack("<H", n) + good[10:], 6, "unsupported_version",
            f"version {n} in a version-3 file (a version-3 reader reads 2 and 3)")
    bad("truncated-body.vault", good[:hl + 32 + 24 + 16 + 255], 6, "truncated",
        "header_length + 327 bytes: a plaintext shorter than 256 bytes is refused at the file's size, before any "
        "key; no sealed plaintext is shorter than 256 bytes")

    # ---- a plaintext of the other version's layout: refused, not misread
    d = small()
    d.update(version=3, layout=2)
    p2 = v2.payload(d)
    dropped2, time2 = struct.unpack_from("<QQ", p2, 1 + 8)[::-1]
    assert p2[0] == 1 and dropped2 > time2  # RA's time, then the entry count and 7 bytes of its id as dropped
    plain_bad("v2-plaintext-under-v3-header.vault", lambda d: d.update(version=3, layout=2), "bad_clock",
              f"a version-2 plaintext under a version-3 header: after RA's id and time, the entry count and 7 bytes "
              f"of the entry's id are read as RA's dropped (0x{dropped2:016x}), above its time", base=small)
    d = small3()
    p3 = v2.payload(d)
    assert p3[0] == 1 and p3[17] == p3[18] == 0 and any(p3[19:])  # dropped's counter bytes read as two counts of 0
    plain_bad("v3-plaintext-under-v2-header.vault", lambda d: d.update(version=2, layout=3), "bad_padding",
              "a version-3 plaintext under a version-2 header: after RA's id and time, the two bytes of its "
              "dropped's counter are read as entry count 0 and tombstone count 0, and the rest (not zero) as padding",
              base=small3)

    # ---- the plaintext, in the order a reader reads it
    rest = 256 - 32 - 1  # after the replica count
    assert len(v2.payload(small3())) < rest
    plain_bad("replica-count-exceeds-data.vault", lambda d: d.update(replica_count=rest // MIN_REPLICA + 1),
              "entry_count_exceeds_data", f"replica_count {rest // MIN_REPLICA + 1}: {rest} bytes hold at most "
              f"{rest // MIN_REPLICA} replicas of 25 bytes (version 2's 16 would allow {rest // 16})", base=small3)

    # the replica table: dropped, then the seen row, as read; seen times against the table once it is read
    def seen(d, replica, row, count=None):
        d["seen"][replica] = row
        if count is not None:
            d.setdefault("seen_counts", {})[replica] = count
        return d

    def dropped(d, replica, t):
        d["dropped"][replica] = t
        return d
    full = [(RA, (T + 100, 0)), (RB, (T + 200, 0)), (RC, (T + 50, 0))]
    for name, mutate, rule in [
        ("clock-dropped-above-time", lambda d: dropped(d, RA, (T + 100, 1)), "RA's dropped one counter above its time"),
        ("clock-dropped-above-time-ms", lambda d: dropped(d, RC, (T + 51, 0)), "RC's dropped one millisecond above "
         "its time"),
        ("clock-dropped-max", lambda d: dropped(d, RB, TOP), "RB's dropped at the largest time, above its time"),
        ("clock-order-dropped-before-seen-count", lambda d: seen(dropped(d, RA, (T + 100, 1)), RA, full, b"\x83\x00"),
         "RA's dropped above its time, checked before its seen_count (3 in two bytes: bad_varint)"),
        ("clock-order-replica-id-before-seen-count", lambda d: seen(
            d.update(replicas=[(RA, (T + 100, 0)), (RC, (T + 50, 0)), (RB, (T + 200, 0))], seen={}) or d, RB, [],
            b"\x80\x00"),
         "RC before RB in the table (RB's id, read after RC's, not above it; no seen rows), checked as the id is "
         "read, before RB's seen_count (0 in two bytes: bad_varint)"),
        ("clock-seen-index-beyond", lambda d: seen(d, RC, [(RA, (T, 0)), (Index(3), (T, 0))]), "RC's seen names "
         "index 3, a table of 3"),
        ("clock-seen-index-beyond-max-uvar", lambda d: seen(d, RC, [(Index((1 << 64) - 1), (T, 0))]), "RC's seen "
         "names index 2^64-1 (a well-formed uvar)"),
        ("clock-seen-index-repeated", lambda d: seen(d, RA, [(RA, (T, 0)), (RA, (T, 0)), (RC, (T, 0))]), "RA's seen "
         "row names index 0 twice"),
        ("clock-seen-index-decreasing", lambda d: seen(d, RA, [(RB, (T, 0)), (RA, (T, 0))]), "RA's seen row names "
         "index 1, then 0"),
        ("clock-seen-time-zero", lambda d: seen(d, RC, [(RA, (0, 0))]), "RC's seen time for RA is 0"),
        ("clock-seen-time-zero-last", lambda d: seen(d, RA, full[:2] + [(RC, (0, 0))]), "RA's seen time for RC "
         "(its row's last) is 0"),
        ("clock-seen-above-time", lambda d: seen(d, RC, [(RA, (T + 100, 1))]), "RC's seen time for RA (an earlier "
         "replica) one counter above RA's time"),
        ("clock-seen-above-time-own", lambda d: seen(d, RB, [(RB, (T + 201, 0))]), "RB's seen time for itself one "
         "millisecond above its time"),
        ("clock-seen-above-time-later", lambda d: seen(d, RA, [(RA, (T + 100, 0)), (RB, (T + 200, 1))]), "RA's seen "
         "time for RB (later in the table: checked once the table is read) one counter above RB's time"),
        ("clock-seen-above-time-max", lambda d: seen(d, RA, [(RC, TOP)]), "RA's seen time for RC at the largest "
         "time, above RC's"),
        ("clock-seen-above-before-entry-count", lambda d: (seen(d, RA, [(RC, (T + 51, 0))]),
                                                           d.update(entry_count=200)),
         "RA's seen time for RC above RC's time, checked once the table is read, before the entry count (200: more "
         "than the data holds)"),
        ("clock-order-seen-time-zero-before-later-replica", lambda d: seen(seen(d, RA, [(RA, (0, 0))]), RB, [],
                                                                           b"\x80\x00"),
         "RA's seen time 0, checked as read, before RB's seen_count (0 in two bytes: bad_varint)"),
        ("seen-count-above-table", lambda d: seen(d, RC, full, 4), "RC's seen_count 4, a table of 3: its three "
         "entries are read, the fourth index (the entry count's byte, 1) is not above 2 (bad_clock)"),
        ("seen-count-max-uvar", lambda d: seen(d, RC, full, (1 << 64) - 1), "RC's seen_count 2^64-1 (not checked "
         "against the data, as no smallest seen entry is given): its three entries are read, the fourth index (the "
         "entry count's byte, 1) is not above 2 (bad_clock)"),
    ]:
        plain_bad(f"{name}.vault", mutate, "bad_clock", rule, base=sync3)
    plain_bad("clock-order-seen-above-after-table.vault",
              lambda d: seen(seen(d, RA, [(RA, (T + 101, 0))]), RB, [], b"\x80\x00"), "bad_varint",
              "RA's seen time for itself above its time (checked once the whole table is read) and RB's seen_count "
              "0 in two bytes (as read): the uvar is refused first", base=sync3)
    plain_bad("seen-count-not-minimal.vault", lambda d: seen(d, RA, full, b"\x83\x00"), "bad_varint",
              "RA's seen_count 83 00 (3 in two bytes)", base=sync3)
    plain_bad("seen-index-not-minimal.vault", lambda d: seen(d, RA, [(b"\x80\x00", (T, 0)), (RB, (T, 0))]),
              "bad_varint", "RA's first seen index 80 00 (0 in two bytes)", base=sync3)
    plain_bad("seen-index-beyond-64-bits.vault", lambda d: seen(d, RA, [(b"\xff" * 9 + b"\x02", (T, 0))]),
              "bad_varint", "RA's first seen index a 10-byte uvar whose tenth byte is 2 (beyond 64 bits)", base=sync3)

    # a tombstone at or below its replica's dropped: bad_tombstone, as its deleted stamp is read
    for name, mutate, rule in [
        ("bad-tombstone-at-dropped", lambda d: dropped(d, RA, (T + 90, 0)), "RA's tombstone deleted at RA's "
         "dropped (T+90)"),
        ("bad-tombstone-below-dropped", lambda d: dropped(d, RA, (T + 90, 1)), "RA's tombstone deleted one counter "
         "below RA's dropped"),
        ("bad-tombstone-below-dropped-at-time", lambda d: dropped(d, RA, (T + 100, 0)), "RA's dropped at its own "
         "time (T+100), RA's tombstone deleted at T+90"),
        ("bad-tombstone-at-dropped-kept-none", lambda d: (dropped(d, RA, (T + 90, 0)),
                                                          d["tombstones"][0][2].update(kept=None)),
         "RA's tombstone deleted at RA's dropped, nothing kept"),
        ("bad-tombstone-order-dropped-before-of", lambda d: (dropped(d, RA, (T + 90, 0)),
                                                             d["tombstones"][0][2].update(of=stamp(T + 91, 0, RA),
                                                                                          kept=None)),
         "RA's tombstone deleted at RA's dropped and of after deleted: the deleted stamp is read, and checked, "
         "first"),
    ]:
        plain_bad(f"{name}.vault", mutate, "bad_tombstone", rule, base=small3)
    plain_bad("bad-tombstone-at-dropped-other-replica.vault", lambda d: d["tombstones"].append(
        tombstone("by rb", stamp(T + 150, 0, RB), stamp(T + 150, 0, RB))), "bad_tombstone",
        "a second tombstone, by RB, deleted at RB's dropped (T+150; RA's dropped is below it)", base=sync3)
    plain_bad("clock-order-tombstone-index-before-dropped.vault", lambda d: d["tombstones"].append(
        tombstone("by index 3", stamp(T + 150, 0, Index(3)), stamp(T + 150, 0, RB))), "bad_clock",
        "a tombstone whose deleted stamp names index 3 (a table of 3): refused at the index, before any dropped",
        base=sync3)

    # running out of plaintext inside the replica table (the last of n replicas)
    rid = struct.pack("<Q", RC)
    t = struct.pack("<Q", time(T + 100, 0))
    cut_table("replica-truncated-id.vault", lambda n: rid[:5], "the plaintext ends inside the last replica's id")
    cut_table("replica-truncated-time.vault", lambda n: rid + t[:5], "the plaintext ends inside the last replica's "
              "time")
    cut_table("replica-truncated-dropped.vault", lambda n: rid + t + t[:3], "the plaintext ends inside the last "
              "replica's dropped")
    cut_table("replica-truncated-seen-count.vault", lambda n: rid + t + t, "the plaintext ends before the last "
              "replica's seen_count")
    cut_table("replica-truncated-seen-count-uvar.vault", lambda n: rid + t + t + b"\x80", "the plaintext ends "
              "inside the last replica's seen_count (a uvar byte 0x80, more to come)")
    cut_table("replica-truncated-seen-index.vault", lambda n: rid + t + t + uvar(1), "seen_count 1, the plaintext "
              "ends before the seen entry's index")
    cut_table("replica-truncated-seen-index-uvar.vault", lambda n: rid + t + t + uvar(1) + b"\x80",
              "seen_count 1, the plaintext ends inside the seen entry's index (a uvar byte 0x80, more to come)")
    cut_table("replica-truncated-seen-time.vault", lambda n: rid + t + t + uvar(1) + uvar(0) + t[:5],
              "seen_count 1, the plaintext ends inside the seen entry's time")
    cut_table("replica-truncated-seen-second.vault", lambda n: rid + t + t + uvar(2) + uvar(0) + t,
              "seen_count 2 (the table has more replicas: within its bound), the plaintext ends after the first seen "
              "entry")

    # tombstones: their count, their id
    bad("tombstone-count-exceeds-data.vault", seal(tombstones_fill3(5), "tombstone-count-exceeds-data"), 6,
        "entry_count_exceeds_data", "tombstone_count 5 with 140 bytes left (5 x 35 = 175 > 140; version 2's 25 "
        "would allow it)")
    def entry_id(d):
        d["tombstones"][0] = (d["entries"][0]["id"],) + d["tombstones"][0][1:]
    plain_bad("duplicate-id.vault", entry_id, "duplicate_id", "a tombstone with a kept version has the live entry's "
              "id", base=small3)
    plain_bad("clock-order-duplicate-id-before-dropped.vault", lambda d: (entry_id(d), dropped(d, RA, (T + 90, 0))),
              "duplicate_id", "a tombstone with the entry's id, deleted at its replica's dropped: the id is checked "
              "first", base=small3)

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

    key_links()

    notes = [
        "Written by `Tests/Vectors/generate_v3.py` (never edit by hand; it shares generate_v2.py's model and sealing),",
        "replayed by `python3 Tests/Vectors/check_v2.py Tests/Vectors/v3`; passphrase \"correct horse battery",
        "staple\", test KDF parameters. `expected.json`: the outcome of each file (a valid file: what",
        "`Tests/Interop/read_vault_v2.py` prints, with \"format_version\", replicas as {\"time\", \"dropped\",",
        "\"seen\": {replica: time}}, tombstones' \"deleted\", \"of\" and \"kept\"). One line per file, by name: outcome:",
        "the rule it breaks. What version 3 keeps of version 2 is in `../v2`.",
        "",
        "The layout changed (a replica's `dropped` and seen row, no plaintext `horizon`); removed with the horizon:",
        "`valid-v3-horizon-top.vault` (its place: `valid-v3-sync-top.vault`). Every other file was regenerated in",
        "the new layout for the same purpose (`v2-plaintext-under-v3-header.vault` now fails at RA's dropped,",
        "`bad_clock`, and `v3-plaintext-under-v2-header.vault` at the padding, `bad_padding`).",
        "",
        "Readings of docs/FORMAT.md (\"version 3\") these vectors take, where it leaves a choice (see `../README.md`):",
        "- A seen time is bounded by the time the table holds for the replica its index names (\"that replica's",
        "  `time`\"), not by the row's owner's: `valid-v3-sync-edges.vault` has seen times above the owner's time,",
        "  `clock-seen-above-time-later.vault` one above a later replica's.",
        "- `seen_count` is not checked against the data: `entry_count_exceeds_data` names the replica, entry and",
        "  tombstone counts only, and version 3 gives no smallest seen entry. A `seen_count` above the table fails at",
        "  the first index that cannot follow (`bad_clock`: `seen-count-above-table.vault`,",
        "  `seen-count-max-uvar.vault`); running out of plaintext inside a seen row is `entry_truncated`",
        "  (`replica-truncated-seen-second.vault`). (A `seen_count` above `replica_count` refused at once, as",
        "  `bad_clock`, gives the same outcomes: every truncated row here has `seen_count` within the table.)",
        "- Running out of plaintext inside the replica table is `entry_truncated` (version 2 names entries and counts",
        "  only; a version-2 replica cannot be cut, the count check refuses it first): `replica-truncated-*.vault`.",
        "- \"Each check as its field is read\" orders the new checks: the table's id order at the id, before",
        "  the rest of the replica (`clock-order-replica-id-before-seen-count.vault`); `dropped` before",
        "  `seen_count` (`clock-order-dropped-before-seen-count.vault`); a seen index before its time; a seen time 0",
        "  as read (`clock-order-seen-time-zero-before-later-replica.vault`), a seen time above its replica's once",
        "  the whole table is read (`clock-order-seen-above-after-table.vault`), before the entry count",
        "  (`clock-seen-above-before-entry-count.vault`); a tombstone's `dropped` check when its",
        "  deleted stamp is read: after the id and the stamp's index, before `of`",
        "  (`clock-order-duplicate-id-before-dropped.vault`, `clock-order-tombstone-index-before-dropped.vault`,",
        "  `bad-tombstone-order-dropped-before-of.vault`).",
        "- A tombstone is compared with its own (deleting) replica's `dropped` only, by time",
        "  (`valid-v3-sync-edges.vault`, `bad-tombstone-at-dropped-other-replica.vault`).",
        "- A plaintext too short for the replica count cannot be sealed: every plaintext is at least 256 bytes, and a",
        "  shorter body is `truncated` at the file's size, before any key (`truncated-body.vault`).",
        "- \"no cap but the plaintext's\" lifts history's caps (10 versions, 65,536 bytes), not the field rules'",
        "  1,024 fields (`valid-v3-kept-large.vault`, `kept-too-many-fields.vault`).",
        "- Running out of plaintext inside a tombstone is `entry_truncated` (version 3 keeps version 2's errors).",
        "- `of` <= `deleted`, `of` = `deleted` a tombstone whose deleted version is not known: nothing can be kept,",
        "  and a kept version is refused at its stamp (`bad_clock`), which cannot lie strictly between.",
        "- The tombstone's id is checked for repeats as it is read, before `of` (\"each check as its field is",
        "  read\"; `clock-order-duplicate-id-before-of.vault`).",
        "- Version 1 is refused (`unsupported-version-1.vault`), as in `../v2`, although version 2 lets a reader",
        "  read version 1 (MAY): these readers do not.",
        "- Not pinned by any vector: a kept version whose flags lack bit 0 (conflict) or set reserved bits (the",
        "  reader: accepted / `bad_history`, as version 2's versions); a tombstone deleted at time 0 by a replica",
        "  whose `dropped` is 0 (\"at or below its replica's `dropped`\" read literally refuses it, `bad_tombstone`,",
        "  which the reader does; read as \"0: none dropped\" it is valid); a seen row without its own replica or a",
        "  writer's row not equal to the table (writer rules, not reader rules).",
        ""]
    v2.write(OUT, ["# Format v3 test vectors", ""] + notes)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A hostile copy of a shared vault, written from docs/FORMAT.md's bytes alone (issue 33 §1's attack), for the tests.

    forge_copy.py TARGET OUT -r age1... [-r age1...] [--fork OLD --identity KEY]

Reads only what TARGET shows in the clear (its vault id and generation), makes a data key of its own, wraps it for
each recipient with the stock `age -r` (an x25519 stanza is a minimal age file of the data key), and seals a
version-2 copy with one entry ("planted") at TARGET's generation + 1. With --fork: the data key of OLD (a copy from
before a removal) is recovered with `age -d -i KEY` from KEY's stanza, as a removed recipient can, and the copy
carries a key link from that key to the new one, signed with the old key's signing key (docs/FORMAT.md, "Key
changes"): a valid signature, from a key the vault retired. Writes OUT (0600); prints nothing.
"""
import argparse, os, struct, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Vectors"))
import generate_v2 as v2  # noqa: E402  (the model, encoding and sealing written from the spec)
from nacl import signing  # noqa: E402


def header_fields(data):
    """vault_id, generation, data_key_id and the stanzas [(type, body)] of a version-2/3 file."""
    length = struct.unpack_from("<I", data, 10)[0]
    vault_id, generation, key_id = data[14:30], struct.unpack_from("<Q", data, 30)[0], data[38:54]
    count, offset, stanzas = struct.unpack_from("<H", data, 54)[0], 56, []
    for _ in range(count):
        kind, size = struct.unpack_from("<HI", data, offset)
        stanzas.append((kind, data[offset + 6:offset + 6 + size]))
        offset += 6 + size
    assert offset == length
    return vault_id, generation, key_id, stanzas


def age_stanza(recipient, data_key):
    """An x25519 stanza whose age file the stock `age -r` made."""
    made = subprocess.run(["age", "-r", recipient], input=data_key, capture_output=True, check=True).stdout
    assert len(made) == 232, f"age wrote {len(made)} bytes (grease stanzas?)"
    return (2, bytes([62]) + recipient.encode() + made)


def recovered_key(old, identity):
    """The data key of OLD, from the stanza of IDENTITY's recipient, with `age -d`."""
    recipient = subprocess.run(["age-keygen", "-y", identity], capture_output=True, check=True, text=True).stdout.strip()
    for kind, body in header_fields(old)[3]:
        if kind == 2 and body[1:63].decode() == recipient:
            return subprocess.run(["age", "-d", "-i", identity], input=body[63:], capture_output=True, check=True).stdout
    raise SystemExit("no stanza for that identity in the old copy")


def signing_key(data_key):
    return signing.SigningKey(v2.blake(b"vault key change signing", key=data_key))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("out")
    parser.add_argument("-r", dest="recipients", action="append", default=[])
    parser.add_argument("--fork")
    parser.add_argument("--identity")
    args = parser.parse_args()
    target = open(args.target, "rb").read()
    vault_id, generation, _, _ = header_fields(target)
    data_key, key_id = os.urandom(32), os.urandom(16)
    stanzas = [age_stanza(recipient, data_key) for recipient in args.recipients]
    if args.fork:
        old = open(args.fork, "rb").read()
        old_key_id = header_fields(old)[2]
        old_key = recovered_key(old, args.identity)
        new_signing = bytes(signing_key(data_key).verify_key)
        reason = b"\x03"
        message = b"vault key link v1" + vault_id + old_key_id + key_id + new_signing + reason
        signature = signing_key(old_key).sign(message).signature
        stanzas.append((4, old_key_id + key_id + new_signing + reason + signature))
    replica = int.from_bytes(os.urandom(8), "little")
    now = v2.T + 10 ** 9
    doc = {"vault_id": vault_id, "generation": generation + 1, "data_key_id": key_id, "stanzas": stanzas,
           "replicas": [(replica, (now, 0))],
           "entries": [v2.entry("planted " + os.urandom(4).hex(), "planted", v2.stamp(now, 0, replica), v2.stamp(now, 0, replica),
                                [v2.field("password", "hers", True)])],
           "tombstones": []}
    sealed = v2.seal(doc, "forged " + os.urandom(8).hex(), data_key=data_key)
    fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(sealed)


if __name__ == "__main__":
    main()

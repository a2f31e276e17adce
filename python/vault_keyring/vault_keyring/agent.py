"""The vault agent's wire protocol, version 6 (docs/AGENT.md): the few operations a keyring needs.

Frames: a 4-byte big-endian payload length, then version (6), kind (operation, or status 0 ok / 1 error / 2
locked), and fields: tag (1 byte), length (4 bytes big-endian), bytes.
"""
import os
import secrets
import socket
import stat
import struct

VERSION = 6
OP_RECORDS, OP_APPLY, OP_SEARCH = 12, 13, 19
TAG_PATH, TAG_NAME, TAG_VALUE, TAG_CODE, TAG_MESSAGE = 1, 2, 3, 9, 11
TAG_CHANGE, TAG_BOOL, TAG_ENTRY_ID, TAG_FIELD, TAG_SECRET = 17, 21, 25, 29, 30
CHANGE_SET_FIELD, CHANGE_DELETE, CHANGE_REQUIRE = 1, 3, 7
STATUS_OK, STATUS_ERROR, STATUS_LOCKED = 0, 1, 2
MAX_FRAME = 256 << 20


class AgentError(Exception):
    """The agent refused or failed a request (its code and message)."""


class Locked(Exception):
    """The agent does not hold the vault (or no agent runs)."""


def socket_path():
    path = os.environ.get("VAULT_AGENT_SOCK")
    if path:
        return path
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and runtime.startswith("/"):
        return runtime + "/vault/agent.sock"
    user = "/run/user/%d" % os.geteuid()
    if os.path.isdir(user):
        return user + "/vault/agent.sock"
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return state + "/vault/agent/agent.sock"


def recorded_vault():
    """The vault `vault git setup` recorded as this machine's ($XDG_CONFIG_HOME/vault/default-vault), or None: as
    vault reads it, only from a private regular file of this user's holding one absolute path."""
    config = os.environ.get("XDG_CONFIG_HOME")
    base = config + "/vault" if config and config.startswith("/") else os.path.expanduser("~/.config/vault")
    try:
        fd = os.open(base + "/default-vault", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            return None
        data = os.read(fd, 4097)
    finally:
        os.close(fd)
    line = data.split(b"\n", 1)[0]
    if len(data) > 4096 or b"\0" in data or not line.startswith(b"/"):
        return None
    return os.fsdecode(line)


def vault_path():
    path = os.environ.get("VAULT_PATH") or recorded_vault()
    if not path:
        data = os.environ.get("XDG_DATA_HOME")
        base = data + "/vault" if data and data.startswith("/") else os.path.expanduser("~/.local/share/vault")
        path = base + "/default.vault"
    path = os.path.abspath(path)
    # The agent knows a vault by its canonical path: the directory resolved, the name as it is.
    directory, name = os.path.split(path)
    return os.path.join(os.path.realpath(directory), name)


def _field(tag, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return struct.pack(">BI", tag, len(data)) + data


class Agent:
    """One connection to the agent; every request names the vault."""

    def __init__(self, path=None, vault=None, timeout=30):
        self.path = path or socket_path()
        self.vault = vault or vault_path()
        self.timeout = timeout

    def available(self):
        return os.path.exists(self.path)

    def _exchange(self, kind, fields):
        payload = bytes([VERSION, kind]) + _field(TAG_PATH, self.vault) + b"".join(fields)
        try:
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.settimeout(self.timeout)
            connection.connect(self.path)
        except OSError as error:
            raise Locked("no agent answers on %s (%s): run 'vault unlock'" % (self.path, error.strerror))
        with connection:
            # The agent must run as this user (SO_PEERCRED), as the vault's own clients check.
            credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", credentials)[1] != os.geteuid():
                raise AgentError("the process on %s is not this user's" % self.path)
            connection.sendall(struct.pack(">I", len(payload)) + payload)
            header = self._read(connection, 4)
            (length,) = struct.unpack(">I", header)
            if length < 2 or length > MAX_FRAME:
                raise AgentError("a malformed answer")
            answer = self._read(connection, length)
        if answer[0] != VERSION:
            raise AgentError("the agent speaks protocol version %d, this backend %d" % (answer[0], VERSION))
        fields, offset = [], 2
        while offset < len(answer):
            if offset + 5 > len(answer):
                raise AgentError("a malformed answer")
            tag, size = struct.unpack(">BI", answer[offset:offset + 5])
            fields.append((tag, answer[offset + 5:offset + 5 + size]))
            offset += 5 + size
        if answer[1] == STATUS_LOCKED:
            raise Locked("the vault %s is locked: run 'vault unlock'" % self.vault)
        if answer[1] == STATUS_ERROR:
            text = {tag: value.decode("utf-8", "replace") for tag, value in fields if tag in (TAG_CODE, TAG_MESSAGE)}
            raise AgentError("%s: %s" % (text.get(TAG_CODE, "error"), text.get(TAG_MESSAGE, "the agent failed")))
        return fields

    @staticmethod
    def _read(connection, count):
        data = b""
        while len(data) < count:
            chunk = connection.recv(count - len(data))
            if not chunk:
                raise AgentError("the agent closed the connection")
            data += chunk
        return data

    def search(self, prefix, required):
        """The entries named prefix... whose non-secret fields include every (field, value) of `required`:
        a list of (name, {field: value}) with the non-secret fields only."""
        fields = [_field(TAG_NAME, prefix)]
        for name, value in required:
            fields += [_field(TAG_FIELD, name), _field(TAG_VALUE, value)]
        entries, current, field = [], None, None
        for tag, value in self._exchange(OP_SEARCH, fields):
            if tag == TAG_ENTRY_ID:
                current = [None, {}]
                entries.append(current)
            elif tag == TAG_NAME and current is not None and current[0] is None:
                current[0] = value.decode("utf-8")
            elif tag == TAG_FIELD:
                field = value.decode("utf-8")
            elif tag == TAG_VALUE and field is not None and current is not None:
                current[1][field] = value.decode("utf-8", "replace")
                field = None
        return [(name, values) for name, values in entries]

    def password(self, name):
        """The `password` field of entry `name`, or None."""
        field, secret = None, None
        for tag, value in self._exchange(OP_RECORDS, [_field(TAG_NAME, name)]):
            if tag == TAG_FIELD:
                field = value.decode("utf-8")
            elif tag == TAG_VALUE and field == "password":
                secret = value.decode("utf-8")
                break
            elif tag == TAG_VALUE:
                field = None
        return secret

    def apply(self, changes):
        """One atomic batch: changes are (kind, [(tag, bytes or str)])."""
        fields = []
        for kind, change_fields in changes:
            fields.append(_field(TAG_CHANGE, bytes([kind])))
            fields += [_field(tag, value) for tag, value in change_fields]
        self._exchange(OP_APPLY, fields)


def new_entry_id():
    return secrets.token_hex(16)

"""keyring's backend on the vault agent: passwords as the Secret Service provider stores keyring's items."""
from keyring.backend import KeyringBackend
from keyring.errors import KeyringLocked, PasswordDeleteError, PasswordSetError

from . import agent as wire

PREFIX = "secret-service/"
APPLICATION = "Python keyring library"


class VaultKeyring(KeyringBackend):
    """Passwords in a vault unlocked in the vault agent, reached on its Unix socket (no D-Bus)."""

    @classmethod
    def priority(cls):
        if not wire.Agent().available():
            raise RuntimeError("no vault agent socket")
        return 9

    def __init__(self):
        super().__init__()
        self.agent = wire.Agent()

    def _find(self, service, username):
        required = [("attribute:service", service)]
        if username is not None:
            required.append(("attribute:username", username))
        try:
            return self.agent.search(PREFIX, required)
        except wire.Locked as error:
            raise KeyringLocked(str(error))

    def get_password(self, service, username):
        found = self._find(service, username)
        if not found:
            return None
        try:
            return self.agent.password(found[0][0])
        except wire.Locked as error:
            raise KeyringLocked(str(error))

    def set_password(self, service, username, password):
        found = self._find(service, username)
        if found:
            name = found[0][0]
            changes = [(wire.CHANGE_REQUIRE, [(wire.TAG_NAME, name), (wire.TAG_BOOL, b"\x01")])]
        else:
            name = PREFIX + wire.new_entry_id()
            changes = [(wire.CHANGE_REQUIRE, [(wire.TAG_NAME, name), (wire.TAG_BOOL, b"\x00")])]
            label = "Password for '%s' on '%s'" % (username, service)
            for field, value in [("label", label), ("content-type", "text/plain"), ("attribute:application", APPLICATION),
                                 ("attribute:service", service), ("attribute:username", username)]:
                changes.append((wire.CHANGE_SET_FIELD, [(wire.TAG_NAME, name), (wire.TAG_FIELD, field),
                                                        (wire.TAG_SECRET, b"\x00"), (wire.TAG_VALUE, value)]))
        changes.append((wire.CHANGE_SET_FIELD, [(wire.TAG_NAME, name), (wire.TAG_FIELD, "password"),
                                                (wire.TAG_SECRET, b"\x01"), (wire.TAG_VALUE, password)]))
        try:
            self.agent.apply(changes)
        except wire.Locked as error:
            raise KeyringLocked(str(error))
        except wire.AgentError as error:
            raise PasswordSetError(str(error))

    def delete_password(self, service, username):
        found = self._find(service, username)
        if not found:
            raise PasswordDeleteError("no password for '%s' on '%s'" % (username, service))
        try:
            self.agent.apply([(wire.CHANGE_DELETE, [(wire.TAG_NAME, found[0][0]), (wire.TAG_BOOL, b"\x00")])])
        except wire.AgentError as error:
            raise PasswordDeleteError(str(error))

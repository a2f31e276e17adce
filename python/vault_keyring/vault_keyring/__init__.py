"""A keyring backend on the vault agent's socket (see backend.VaultKeyring)."""
from .backend import VaultKeyring

__all__ = ["VaultKeyring"]

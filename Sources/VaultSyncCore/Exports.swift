// A sync needs the vault it syncs: `import VaultSyncCore` (and `import VaultSync`) brings VaultCore with it
// (`SecureKeyValueStore`, `SecureBytes`, `MergeReport`, `VaultError`).
@_exported import VaultCore

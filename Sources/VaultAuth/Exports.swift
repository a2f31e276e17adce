// The credential model (credentials, protection spaces, the vault-backed store, the prompting protocol) lives in
// VaultCredentials, which links no networking; VaultAuth re-exports it so that its users see one library
// (Hummingbird re-exports HummingbirdCore the same way).
@_exported import VaultCredentials

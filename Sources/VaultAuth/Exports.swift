// The credential model (credentials, protection spaces, the vault-backed store, the prompting protocol) lives in
// VaultCredentials and the authentication logic without I/O (HTTP messages, challenges, KeystoreAuthenticator,
// SigV4) in VaultAuthCore; neither links networking. VaultAuth, the transport over SwiftNIO and NIOSSL, re-exports
// both so that its users see one library (Hummingbird re-exports HummingbirdCore the same way).
@_exported import VaultAuthCore
@_exported import VaultCredentials

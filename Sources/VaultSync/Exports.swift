// `import VaultSync` is the whole sync library: the engine, the seam, the local-file and git copies
// (VaultSyncCore, no networking) with the S3 and OpenBao stores over VaultAuth's transport.
@_exported import VaultSyncCore

import VaultCredentials

/// The password of `credential` as a `String` (tests compare it with what they stored).
func password(of credential: Credential?) -> String? { credential?.password.stringValue }

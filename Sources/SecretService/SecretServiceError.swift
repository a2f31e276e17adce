/// The provider's failures: what a client is answered (its D-Bus error name and a message that names no secret), or
/// why the provider cannot start or run.
public enum SecretServiceError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The provider cannot start (no session bus, the name taken).
    case cannotStart(String)
    /// The bus connection broke.
    case connectionLost(String)
    /// `org.freedesktop.Secret.Error.IsLocked`: the item's or collection's vault is not unlocked in the agent.
    case isLocked(String)
    /// `org.freedesktop.Secret.Error.NoSession`: not a session of this caller's.
    case noSession(String)
    /// `org.freedesktop.Secret.Error.NoSuchObject`.
    case noSuchObject(String)
    /// `org.freedesktop.DBus.Error.InvalidArgs`: a malformed or out-of-bounds argument (nothing was changed).
    case invalidArguments(String)
    /// `org.freedesktop.DBus.Error.NotSupported`: an algorithm, or an operation this provider does not offer.
    case notSupported(String)
    /// `org.freedesktop.DBus.Error.UnknownMethod`.
    case unknownMethod(String)
    /// `org.freedesktop.DBus.Error.Failed`: the agent or the vault failed (its message says how).
    case failed(String)

    public var dbusName: String {
        switch self {
        case .isLocked: return "org.freedesktop.Secret.Error.IsLocked"
        case .noSession: return "org.freedesktop.Secret.Error.NoSession"
        case .noSuchObject: return "org.freedesktop.Secret.Error.NoSuchObject"
        case .invalidArguments: return "org.freedesktop.DBus.Error.InvalidArgs"
        case .notSupported: return "org.freedesktop.DBus.Error.NotSupported"
        case .unknownMethod: return "org.freedesktop.DBus.Error.UnknownMethod"
        case .cannotStart, .connectionLost, .failed: return "org.freedesktop.DBus.Error.Failed"
        }
    }

    public var description: String {
        switch self {
        case .cannotStart(let text), .failed(let text), .invalidArguments(let text), .notSupported(let text),
             .unknownMethod(let text), .noSession(let text), .noSuchObject(let text), .isLocked(let text):
            return text
        case .connectionLost(let text): return "the session bus connection was lost: \(text)"
        }
    }
}

/// Why a source cannot be imported, or a vault not exported. Every case names where (a line, an item, a file of
/// a store) and never holds a value of the source: messages built from it are safe to print and to log.
public enum ImportError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The source breaks its format at `location` (`line 12`, `item 3 ('GitHub')`, `entry 'Web/GitHub'`).
    case malformed(location: String, reason: String)
    /// The source is a kind this importer does not read (an encrypted Bitwarden export, a CSV header of another
    /// program), with what to do instead.
    case unsupported(reason: String, hint: String)
    /// The source is larger than ``ImportLimits`` allow.
    case tooLarge(what: String, limit: String)
    /// A file of a pass store did not decrypt (`gpg` failed): its path in the store and gpg's first line of error.
    case decryptionFailed(file: String, detail: String)

    public var description: String {
        switch self {
        case let .malformed(location, reason): return "\(location): \(reason)"
        case let .unsupported(reason, _): return reason
        case let .tooLarge(what, limit): return "\(what) is larger than \(limit)"
        case let .decryptionFailed(file, detail): return "cannot decrypt '\(file)'" + (detail.isEmpty ? "" : ": \(detail)")
        }
    }

    /// What the user can do, when there is something.
    public var hint: String? {
        switch self {
        case .malformed: return nil
        case let .unsupported(_, hint): return hint
        case .tooLarge: return "split the export (by folder or group) and import the parts one after the other"
        case .decryptionFailed:
            return "check that 'gpg --decrypt' opens it with your key (gpg-agent, pinentry), as 'pass show' does"
        }
    }
}

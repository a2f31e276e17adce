import FoundationEssentials
/// Why the user is asked for credentials.
public enum CredentialPromptReason: Equatable, Sendable {
    /// No credential is stored for the protection space.
    case noStoredCredential
    /// The stored credential of `username` was rejected by the server (it is stale).
    case storedCredentialRejected(username: String)
    /// The credential the user just entered for `username` was rejected by the server.
    case enteredCredentialRejected(username: String)
}

/// Asks the user for a username and password for a protection space (the SAP SDK's `BasicCredentialDiscovery`).
///
/// Implementations: ``TerminalCredentialPrompt`` (`/dev/tty`) and ``ClosureCredentialPrompt`` (embedding,
/// scripts, tests).
public protocol CredentialPrompting: Sendable {
    /// Asks for a credential for `space`.
    ///
    /// - Parameter suggestedUsername: a username to offer as the default, e.g. the rejected one.
    /// - Returns: the credential, or `nil` if the user declined.
    /// - Throws: ``AuthenticationError/noPromptAvailable(space:detail:)`` when the user cannot be asked at all
    ///   (the caller fails at once), or ``AuthenticationError/promptFailed(detail:)``.
    func credential(
        for space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) async throws -> Credential?
}

/// A ``CredentialPrompting`` that calls a closure: for embedding in an app, for scripts that pass a username
/// and password on the command line's file descriptors, and for tests.
public struct ClosureCredentialPrompt: CredentialPrompting {
    public typealias Handler = @Sendable (
        _ space: ProtectionSpace, _ reason: CredentialPromptReason, _ suggestedUsername: String?
    ) async throws -> Credential?

    private let handler: Handler

    public init(_ handler: @escaping Handler) {
        self.handler = handler
    }

    public func credential(
        for space: ProtectionSpace, reason: CredentialPromptReason, suggestedUsername: String?
    ) async throws -> Credential? {
        try await handler(space, reason, suggestedUsername)
    }
}

import VaultCore

extension AgentClient {
    /// What the agent answers to `vault recipients` (``AgentOperation/recipients``).
    public struct RecipientsAnswer: Sendable, Equatable {
        /// The recipients and labels after the request.
        public var listing: RecipientEdits.Listing
        /// The recipients added (add), or the entries the removed key could read (remove).
        public var changed: [String]
    }

    /// The request `vault recipients` makes of a vault the agent holds.
    public enum RecipientsRequest: Sendable {
        case list
        case add([String], label: String?)
        case remove(String, passphrase: SecureBytes?)
    }

    /// `request` on the vault at `path`, when the agent holds it; `nil` when it does not (the caller opens the vault
    /// itself and asks as it would without an agent).
    public func recipients(_ request: RecipientsRequest, at path: String) throws -> RecipientsAnswer? {
        let wire: AgentRequest.Recipients
        switch request {
        case .list: wire = .list
        case .add(let recipients, let label): wire = .add(recipients, label: label)
        case .remove(let recipient, let passphrase): wire = .remove(recipient, passphrase: passphrase)
        }
        let answer: AgentResponse
        do {
            answer = try self.request(.recipients(wire), on: path, timeoutSeconds: 120)
        } catch AgentError.locked {
            return nil
        }
        guard case .recipients(let listing, let changed) = answer else { throw AgentResponse.unexpected }
        return RecipientsAnswer(listing: listing, changed: changed)
    }
}

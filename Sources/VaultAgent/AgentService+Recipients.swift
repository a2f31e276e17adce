import VaultAge
import VaultCore

extension AgentService {
    /// `vault recipients` on a vault held here (``RecipientEdits``): no passphrase for a list or an addition (the
    /// data key held wraps the new stanzas), nor for a removal from a vault unlocked with its passphrase (the
    /// passphrase's key held wraps the new data key); a vault unlocked otherwise (an identity) needs the passphrase
    /// in the request (`wrong_passphrase` without it). The vault stays unlocked, under its new key after a removal.
    func perform(_ request: AgentRequest.Recipients, on store: any KeyValueVault) throws -> AgentResponse {
        guard let vault = store as? DocumentVault else { throw VaultError.needsVersion2(path: store.path) }
        try vault.reload()
        var changed: [String] = []
        switch request {
        case .list: break
        case .add(let texts, let label):
            let recipients = try texts.map { text throws -> any AgeStanzaRecipient in
                do { return try AgeKeys.recipient(parsing: text) } catch { throw AgentError.badRequest("not an age recipient: \(error)") }
            }
            changed = try RecipientEdits.add(recipients, label: label, to: vault) { adding, current in
                // age's rule (docs/FORMAT.md, "Never mixed"), as the CLI checked it on the header before asking.
                guard let first = current.first else { return }
                if adding.contains(where: { AgeKeys.isPostQuantum(recipient: $0) != AgeKeys.isPostQuantum(recipient: first) }) {
                    throw AgentError.badRequest("post-quantum and X25519 recipients are never mixed in one vault")
                }
            }.added
        case .remove(let recipient, let passphrase):
            guard vault.recipients.contains(recipient) else { throw AgentError.badRequest("the vault has no such recipient") }
            changed = try RecipientEdits.remove(recipient, passphrase: passphrase, from: vault)
        }
        return .recipients(RecipientEdits.listing(of: vault), changed: changed)
    }
}

import ArgumentParser
import FoundationEssentials
import Glibc
import VaultAge
import VaultAgent
import VaultCore

// The verbs about the vault as a whole rather than its entries: `vault passwd` and `vault info`.

package struct Passwd: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "passwd",
        abstract: "Change the vault's passphrase and its data key (a new random key; one atomic write).")

    @OptionGroup var newPassphrase: SecretSourceOptions<NewPassphraseSecret>

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        if let fd = newPassphrase.fd, fd == options.passphraseFD {
            throw ValidationError("the current and the new passphrase need different descriptors")
        }
    }

    package func run() throws {
        try reportingErrors(json: options.json) {
            if let header = try? VaultOpener.header(path: options.resolvedPath, options: options.storeOptions), !header.recipients.isEmpty {
                try changeKeepingRecipients()
                return
            }
            let path = try withVault(options) { vault in
                // Through the agent nothing was asked: whoever can reach the agent must still know the current
                // passphrase to change it (checked with the KDF, like an unlock).
                if vault is AgentVault {
                    try withPassphraseRetries(options) { current in
                        try VaultOpener.open(path: vault.path, passphrase: current, options: options.storeOptions).close()
                    }
                }
                let secret = try newPassphrase.read()
                    ?? VaultOptions.promptTwiceIfNeeded(prompt: "New passphrase: ", confirm: true)
                guard secret.count > 0 else { throw CLIError.emptyPassphrase }
                try vault.changePassphrase(to: secret, parameters: nil)
                return vault.path
            }
            if options.json { try writeJSON(["changed": true, "path": path]) }
            else { try writeToStdout("passphrase changed for vault '\(path)'\n") }
        }
    }
}

extension Passwd {
    /// A vault shared with recipients: the new data key is wrapped here for the new passphrase and again for every
    /// recipient (the library's passphrase change would drop their stanzas, which wrap the old key; the agent does
    /// not link age), the old key retired, and the agent's copy locked.
    func changeKeepingRecipients() throws {
        let store = options.makeStore()
        try store.checkAccess()
        var withoutIdentity = options
        withoutIdentity.identityFile = nil
        let opened = try withPassphraseRetries(withoutIdentity) { current in
            try VaultOpener.open(path: store.path, passphrase: current, options: options.storeOptions)
        }
        defer { opened.close() }
        guard let vault = opened as? DocumentVault else { throw VaultError.needsVersion2(path: store.path) }
        let secret = try newPassphrase.read() ?? VaultOptions.promptTwiceIfNeeded(prompt: "New passphrase: ", confirm: true)
        guard secret.count > 0 else { throw CLIError.emptyPassphrase }
        try vault.rotateKey(passphrase: secret, reason: .passphraseChange) { current, newKey in
            try current.map { try AgeKeys.recipient(parsing: $0.recipient).wrapStanza(newKey) }
        }
        if let client = try? AgentClient.connect() { _ = try? client.lock(path: store.path) }
        if options.json { try writeJSON(["changed": true, "path": store.path]) }
        else { try writeToStdout("passphrase changed for vault '\(store.path)'\n") }
    }
}

package struct Info: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show the vault's format and Argon2id parameters (no passphrase needed).")

    @Flag(help: "Also measure what an unlock costs here: one Argon2id with the vault's parameters (takes that long).")
    package var measure = false

    @OptionGroup var options: VaultOptions

    package func run() throws {
        try reportingErrors(json: options.json) {
            let store = options.makeStore()
            let info = try store.inspect()
            let unlockSeconds = measure ? try info.kdfParameters.measureSeconds() : nil
            if options.json {
                var object: [String: Any] = [
                    "path": store.path, "format_version": info.formatVersion, "kdf": "argon2id",
                    "opslimit": info.kdfParameters.opsLimit, "memlimit": info.kdfParameters.memLimitBytes,
                    "generation": info.generation, "file_size": info.fileByteCount,
                ]
                if let id = info.vaultID {
                    object["vault_id"] = id.description
                    object["stanzas"] = info.stanzaTypes
                }
                if let unlockSeconds { object["unlock_ms"] = Int((unlockSeconds * 1000).rounded()) }
                try writeJSON(object)
            } else {
                let unlock = unlockSeconds.map {
                    "unlock cost: \(Int(($0 * 1000).rounded())) ms here (one Argon2id with these parameters, measured)\n"
                } ?? ""
                let identity = info.vaultID.map {
                    "vault id:    \($0)\nopens with:  \(Self.opensWith(info.stanzaTypes))\n" + Self.keyChanges(info.stanzaTypes)
                } ?? ""
                try writeToStdout("""
                    vault:       \(store.path)
                    format:      version \(info.formatVersion)
                    \(identity)kdf:         Argon2id v1.3, \(info.kdfParameters)
                    written:     \(info.generation) \(info.generation == 1 ? "time" : "times")
                    file size:   \(info.fileByteCount) bytes

                    """ + unlock)
            }
        }
    }

    /// The key stanzas that open the vault in words, each kind once with its count, in the file's order: "the
    /// passphrase, 2 age identities (X25519)".
    static func opensWith(_ types: [String]) -> String {
        var counts: [(type: String, count: Int)] = []
        for type in types where type != "key_link" {
            if let index = counts.firstIndex(where: { $0.type == type }) { counts[index].count += 1 } else { counts.append((type, 1)) }
        }
        let words = counts.map { type, n -> String in
            switch type {
            case "argon2id": return n == 1 ? "the passphrase" : "\(n) passphrases"
            case "x25519": return "\(n) age \(n == 1 ? "identity" : "identities") (X25519)"
            case "mlkem768x25519": return "\(n) post-quantum age \(n == 1 ? "identity" : "identities") (ML-KEM-768 + X25519)"
            default:
                let number = type.hasPrefix("unknown(") ? String(type.dropFirst("unknown(".count).dropLast()) : type
                return "\(n) \(n == 1 ? "stanza" : "stanzas") of unknown type \(number)"
            }
        }
        return words.isEmpty ? "nothing (no key stanza)" : words.joined(separator: ", ")
    }

    /// "key changes: N recorded" (the `key_link` stanzas, which open nothing), or nothing when there is none.
    static func keyChanges(_ types: [String]) -> String {
        let n = types.count { $0 == "key_link" }
        return n == 0 ? "" : "key changes: \(n) recorded\n"
    }
}

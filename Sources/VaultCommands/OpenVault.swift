import FoundationEssentials
import Glibc
import VaultAge
import VaultAgent
import VaultCore
import VaultTerminal

// How a verb reaches the vault it names: through the agent, or opened here with the passphrase (either format).

/// Opens the vault named by `options` (format version 1 or 2, ``VaultOpener``), asking for the passphrase only
/// once the file is known to exist.
package func openStore(_ options: VaultOptions) throws -> any KeyValueVault {
    // A file the store would refuse (loose permissions, another owner, a link) is refused before the prompt.
    let store = try options.existingStore()
    if let identityPath = options.identityPath {
        // An age identity opens the vault's x25519 (or, in vault-net, mlkem768x25519) stanza: no passphrase, no
        // prompt (version 2 only).
        let identities = try loadIdentities(identityPath, passphraseFrom: options)
        let vault = try VaultOpener.open(path: store.path, options: options.storeOptions) { header in
            .unwrapped(try identityDataKey(of: header, identities: identities, label: store.path, options: options))
        }
        // A merge (`vault merge`, a sync) follows another copy's key change with the same identity.
        (vault as? DocumentVault)?.setOtherKey(VaultRecipientStanza.followingKey(identities))
        return vault
    }
    return try withPassphraseRetries(options) {
        try VaultOpener.open(path: store.path, passphrase: $0, options: options.storeOptions)
    }
}

/// The data key of the vault whose header is `header`, from the first of `identities` with a stanza there
/// (``VaultRecipientStanza/dataKey(of:identities:label:)``); none, in a file whose key replaced the one last seen of
/// this vault at a recipient's removal (a `git pull` after it): ``VaultError/removedRecipient(path:)``.
package func identityDataKey(
    of header: DocumentHeader, identities: [any AgeStanzaIdentity], label: String, options: VaultOptions
) throws -> SecureBytes {
    do {
        return try VaultRecipientStanza.dataKey(of: header, identities: identities, label: label)
    } catch VaultError.wrongIdentity(let path) {
        if let protection = options.storeOptions.rollbackProtection, RollbackGuard.removedRecipient(in: header, protection: protection) {
            throw VaultError.removedRecipient(path: path)
        }
        throw VaultError.wrongIdentity(path: path)
    }
}

/// Runs `body` with the passphrase; when it came from the terminal and was wrong, asks again, three tries in all
/// (as pinentry does). A passphrase from a file, a descriptor or the environment is tried once.
package func withPassphraseRetries<R>(_ options: VaultOptions, _ body: (SecureBytes) throws -> R) throws -> R {
    let asksTerminal = !options.hasPassphraseSource
    var attempt = 1
    while true {
        let passphrase = try options.passphrase()
        do {
            return try body(passphrase)
        } catch where asksTerminal && attempt < 3 && (error as? any CLIReportable)?.code == "wrong_passphrase" {
            attempt += 1
            writeToStderr("vault: incorrect passphrase; try \(attempt) of 3\n")
        }
    }
}

/// The vault named by `options`, unlocked: through the agent when it holds the vault (``AgentAccess``), else
/// opened here with the passphrase. The caller closes it.
package func openVault(_ options: VaultOptions) throws -> any KeyValueVault {
    if let vault = try AgentAccess.vault(for: options) { return vault }
    return try openStore(options)
}

/// Runs `body` with the vault named by `options` unlocked (``openVault(_:)``), and closes it after (a vault
/// opened here is locked again: the key and every decrypted value are zeroed).
package func withVault<R>(_ options: VaultOptions, _ body: (any KeyValueVault) throws -> R) throws -> R {
    let vault = try openVault(options)
    defer { vault.close() }
    return try body(vault)
}

/// The identities of the age identity file at `path` (`--identity`, `VAULT_IDENTITY`), read as a passphrase file is:
/// yours or root's, mode 0600 (else ``VaultError/unsafePermissions(path:reason:hint:)``, exit code 4), into guarded
/// memory.
///
/// - Throws: ``IdentityFileError`` (exit code 64) when it holds no valid identity.
package func loadIdentities(_ path: String, passphraseFrom options: VaultOptions? = nil) throws -> [any AgeStanzaIdentity] {
    let contents = try SecretInput.readIdentityFile(path)
    let vaultMagic: [UInt8] = [0x89, 0x56, 0x41, 0x55, 0x4C, 0x54, 0x0D, 0x0A]  // "\x89VAULT\r\n" (docs/FORMAT.md)
    if contents.count >= 8, contents.withUnsafeBytes({ $0.prefix(8).elementsEqual(vaultMagic) }) {
        // An identity sealed by 'vault identity new' (a vault of its own): opened with the passphrase options given,
        // which then are the identity's (the shared vault itself is opened with the identity).
        guard let options else { throw CLIError.message("'\(path)' is a sealed identity: it needs its passphrase", exitCode: Exit.usage) }
        var storeOptions = options.storeOptions
        storeOptions.acceptRollback = false
        let passphrase = try VaultOptions.passphrase(
            from: options.passphraseSource, prompt: "Passphrase for identity '\(TerminalText.escaped(path))': ", confirm: false,
            forNewVault: false)
        let sealed = try VaultOpener.open(path: path, passphrase: passphrase, options: storeOptions)
        defer { sealed.close() }
        guard let key = try sealed.getBytes(IdentityCommand.sealedEntry) else {
            throw CLIError.message("'\(path)' holds no identity (entry '\(IdentityCommand.sealedEntry)')", exitCode: Exit.usage)
        }
        do {
            return [try key.withUnsafeBytes { (bytes) throws(AgeError) in try AgeKeys.identity(parsing: bytes) }]
        } catch {
            throw IdentityFileError(path: path, reason: error)
        }
    }
    do {
        return try AgeKeys.parseIdentityFile(contents)
    } catch {
        throw IdentityFileError(path: path, reason: error)
    }
}

/// An identity file that holds no valid age identity.
package struct IdentityFileError: Error, CLIReportable, CustomStringConvertible {
    let path: String
    let reason: AgeError
    package var description: String { "cannot read identity file '\(path)': \(reason)" }
    package var exitCode: Int32 { Exit.usage }
    package var code: String { "invalid_identity" }
    package var hint: String? {
        if case .invalidIdentityLine(_, .unsupportedKeyType) = reason {
            // Only `vault` without vault-net's post-quantum code gets here: it runs vault-net for a post-quantum
            // identity it can see (a regular file, a sealed identity with its .pub), not one it cannot read twice.
            return "a post-quantum identity (AGE-SECRET-KEY-PQ-1...) is read by vault-net: give it as a regular file, or run vault-net"
        }
        return "an identity file holds AGE-SECRET-KEY-1... (or AGE-SECRET-KEY-PQ-1...) lines, as 'age-keygen -o key.txt' writes it"
    }
}

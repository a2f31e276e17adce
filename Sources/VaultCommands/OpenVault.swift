import Foundation
import VaultAgent
import VaultCore

// How a verb reaches the vault it names: through the agent, or opened here with the passphrase (either format).

/// Opens the vault named by `options` (format version 1 or 2, ``VaultOpener``), asking for the passphrase only
/// once the file is known to exist.
package func openStore(_ options: VaultOptions) throws -> any KeyValueVault {
    let store = options.makeStore()
    guard store.exists else { throw VaultError.vaultNotFound(path: store.path) }
    // A file the store would refuse (loose permissions, another owner, a link) is refused before the prompt.
    try store.checkAccess()
    return try withPassphraseRetries(options) {
        try VaultOpener.open(path: store.path, passphrase: $0, options: options.storeOptions)
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

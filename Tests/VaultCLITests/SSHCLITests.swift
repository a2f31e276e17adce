import Foundation
import Testing
import VaultTestSupport

/// `vault ssh import/generate/public/list/socket/env` against ssh-keygen's own files and output.
@Suite(.processTimeLimit, .enabled(if: OpenSSHTools.client, "OpenSSH's client tools are not installed"))
struct SSHCLITests {
    static func box() throws -> AgentBox {
        let box = try AgentBox()
        try box.initVault()
        return box
    }

    @Test(arguments: [("ed25519", "pass phrase"), ("ecdsa", ""), ("rsa", "")])
    func anImportedKeysPublicKeyAndListingAreSshKeygens(type: String, passphrase: String) throws {
        let box = try Self.box()
        let key = box.directory + "/id_" + type
        let pub = try OpenSSHTools.newKey(key, type: type, passphrase: passphrase)
        let passphraseFile = box.directory + "/key-passphrase"
        FileManager.default.createFile(atPath: passphraseFile, contents: Data((passphrase + "\n").utf8), attributes: [.posixPermissions: 0o600])
        let imported = try box.around(["ssh", "import", "work", key] + (passphrase.isEmpty ? [] : ["--key-passphrase-file", passphraseFile]))
        #expect(imported.status == 0, "\(imported.stderr)")
        let fingerprint = try OpenSSHTools.keygen(["-l", "-f", key + ".pub"]).trimmingCharacters(in: .newlines)
        #expect(imported.stdoutText == "imported \(fingerprint) as 'work'\n")
        #expect(try box.around(["ssh", "public", "work"]).stdoutText == pub + "\n")
        #expect(try box.around(["ssh", "list"]).stdoutText == "work  \(fingerprint)\n")
        // Keys are ordinary entries: the private key is a secret field, masked by show.
        let shown = try box.around(["show", "work"]).stdoutText
        #expect(shown.contains("private_key: ********") && shown.contains("public_key: \(pub)") && shown.contains("comment: user@example"))
        // From stdin, read into guarded memory as a file is: the same key.
        let fromStdin = try box.around(["ssh", "import", "piped", "--comment", "user@example"] + (passphrase.isEmpty ? [] : ["--key-passphrase-file", passphraseFile]),
                                       stdin: try Data(contentsOf: URL(fileURLWithPath: key)))
        #expect(fromStdin.status == 0 && fromStdin.stdoutText == "imported \(fingerprint) as 'piped'\n", "\(fromStdin.stderr)")
        #expect(try box.around(["ssh", "public", "piped"]).stdoutText == pub + "\n")
    }

    /// A PEM key (ssh-keygen -m PEM: PKCS#1 for RSA, SEC 1 for ECDSA) imports as ssh-keygen fingerprints it.
    @Test(arguments: ["rsa", "ecdsa"]) func aPEMKeyImports(type: String) throws {
        let box = try Self.box()
        let key = box.directory + "/pem_" + type
        _ = try OpenSSHTools.keygen(["-q", "-t", type, "-m", "PEM", "-N", "", "-C", "pem@example", "-f", key])
        #expect(try String(contentsOfFile: key, encoding: .utf8).hasPrefix(type == "rsa" ? "-----BEGIN RSA PRIVATE KEY-----" : "-----BEGIN EC PRIVATE KEY-----"))
        let imported = try box.around(["ssh", "import", "pem", key, "--comment", "pem@example"])
        let fingerprint = try OpenSSHTools.keygen(["-l", "-f", key + ".pub"]).trimmingCharacters(in: .newlines)
        #expect(imported.status == 0 && imported.stdoutText == "imported \(fingerprint) as 'pem'\n", "\(imported.stderr)")
    }

    @Test func anEncryptedKeyWithoutItsPassphraseOrAWrongOneStoresNothing() throws {
        let box = try Self.box()
        let key = box.directory + "/id"
        try OpenSSHTools.newKey(key, passphrase: "right")
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        // No terminal, no passphrase option: the key cannot be opened.
        let none = try box.around(["ssh", "import", "k", key])
        #expect(none.status == 1)
        #expect(none.stderr.contains("cannot import '\(key)': the key is encrypted and needs its passphrase; nothing stored") || none.stderr.contains("no terminal"), "\(none.stderr)")
        let wrongFile = box.directory + "/wrong"
        FileManager.default.createFile(atPath: wrongFile, contents: Data("wrong\n".utf8), attributes: [.posixPermissions: 0o600])
        let wrong = try box.around(["ssh", "import", "k", key, "--key-passphrase-file", wrongFile, "--json"])
        #expect(wrong.status == 64)
        #expect(wrong.stderr.contains("\"code\":\"wrong_passphrase\""), "\(wrong.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
    }

    @Test func aCorruptOrUnsupportedKeyIsAClearErrorAndTheVaultIsUnchanged() throws {
        let box = try Self.box()
        let key = box.directory + "/id"
        try OpenSSHTools.newKey(key)
        var lines = try String(contentsOfFile: key, encoding: .utf8).split(separator: "\n").map(String.init)
        // A character in the middle of the private section changed: the check words or the key no longer match.
        var middle = Array(lines[4])
        middle[20] = middle[20] == "A" ? "B" : "A"
        lines[4] = String(middle)
        let corrupt = box.directory + "/corrupt"
        try (lines.joined(separator: "\n") + "\n").write(toFile: corrupt, atomically: false, encoding: .utf8)
        let truncated = box.directory + "/truncated"
        try (lines.prefix(3).joined(separator: "\n") + "\n").write(toFile: truncated, atomically: false, encoding: .utf8)
        let p384 = box.directory + "/p384"
        try OpenSSHTools.keygen(["-q", "-t", "ecdsa", "-b", "384", "-N", "", "-f", p384])
        let before = try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
        for (file, code) in [(corrupt, "invalid_key"), (truncated, "invalid_key"), (key + ".pub", "invalid_key"), (p384, "unsupported_key")] {
            let result = try box.around(["ssh", "import", "k", file, "--json"])
            #expect(result.status == 64, "\(file): \(result.stderr)")
            #expect(result.stderr.contains("\"code\":\"\(code)\""), "\(file): \(result.stderr)")
            #expect(result.stderr.contains("nothing stored"), "\(file): \(result.stderr)")
        }
        // Larger than a key file can be (1 MiB), from a file or stdin: the same error, nothing stored.
        let large = box.directory + "/large"
        try Data(count: (1 << 20) + 1).write(to: URL(fileURLWithPath: large))
        let fromFile = try box.around(["ssh", "import", "k", large])
        #expect(fromFile.status == 1 && fromFile.stderr == "vault: the input from \(large) is longer than 1048576 bytes\n", "\(fromFile.stderr)")
        let fromStdin = try box.around(["ssh", "import", "k"], stdin: Data(count: (1 << 20) + 1))
        #expect(fromStdin.status == 1 && fromStdin.stderr == "vault: the input from stdin is longer than 1048576 bytes\n", "\(fromStdin.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: box.vaultPath)) == before)
        #expect(try box.around(["ssh", "list"]).stdoutText == "")
    }

    @Test func generatedKeysAreWhatSshKeygenFingerprintsAndAnExistingNameIsKept() throws {
        let box = try Self.box()
        for (name, type, label) in [("ed", "ed25519", "ED25519"), ("ec", "ecdsa", "ECDSA"), ("rsa", "rsa", "RSA")] {
            let made = try box.around(["ssh", "generate", name, "--type", type, "--bits", "2048", "--host", "github.com", "--host", "*.corp"])
            #expect(made.status == 0, "\(made.stderr)")
            let pubFile = box.directory + "/\(name).pub"
            try made.stdout.write(to: URL(fileURLWithPath: pubFile))
            let fingerprint = try OpenSSHTools.keygen(["-l", "-f", pubFile]).trimmingCharacters(in: .newlines)
            #expect(fingerprint.hasSuffix(" \(name) (\(label))"), "\(fingerprint)")
            let listed = try box.around(["ssh", "list"]).stdoutText
            #expect(listed.contains("\(name)  \(fingerprint)  hosts github.com,*.corp\n"), "\(listed)")
            #expect(try box.around(["ssh", "public", name]).stdout == made.stdout)
        }
        let again = try box.around(["ssh", "generate", "ed"])
        #expect(again.status != 0 && again.stderr.contains("already exists"), "\(again.stderr)")
        let notKey = try box.around(["put", "password-only"], stdin: Data("x".utf8))
        #expect(notKey.status == 0)
        let publicOfPassword = try box.around(["ssh", "public", "password-only"])
        #expect(publicOfPassword.status == 1 && publicOfPassword.stderr.contains("is not an ssh key"), "\(publicOfPassword.stderr)")
    }

    @Test func socketAndEnvNameTheSocketBesideTheAgents() throws {
        let box = try AgentBox()
        let expected = box.socketDirectory + "/ssh-agent.sock"
        #expect(try box.vault(["ssh", "socket"]).stdoutText == expected + "\n")
        #expect(try box.vault(["ssh", "env"]).stdoutText == "SSH_AUTH_SOCK='\(expected)'; export SSH_AUTH_SOCK;\n")
        #expect(try box.vault(["ssh", "env", "-c"]).stdoutText == "setenv SSH_AUTH_SOCK '\(expected)';\n")
    }
}

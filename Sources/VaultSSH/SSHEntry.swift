import FoundationEssentials
import VaultCore

/// An ssh key as the vault keeps it: an ordinary entry (it syncs, is shared, has history) with these fields.
///
/// | field | |
/// |---|---|
/// | `private_key` | secret: the key as an unencrypted openssh-key-v1 file |
/// | `public_key` | its authorized_keys line |
/// | `comment` | the key's comment |
/// | `hosts` | optional: ssh_config patterns, comma- or space-separated, where the key is offered |
/// | `forward` | optional: `yes` lets a forwarded agent connection use it (default no) |
/// | `confirm` | optional: `yes` asks before each signature (SSH_ASKPASS) |
public struct SSHEntry: Sendable {
    public static let privateKeyField = "private_key"
    public static let publicKeyField = "public_key"
    public static let commentField = "comment"
    public static let hostsField = "hosts"
    public static let forwardField = "forward"
    public static let confirmField = "confirm"

    public let name: String
    public let publicKey: SSHPublicKey
    public let comment: String
    /// The `hosts` patterns (empty: the key is for every host).
    public let hosts: [String]
    public let forward: Bool
    public let confirm: Bool
    /// The vault the entry was read from, when the reader says (the agent: whose idle timeout a signature restarts).
    public var vaultPath: String?
    /// Which version of the entry this is: its id and when it was last written (a parsed key is kept for this).
    public let revision: Revision
    let privateKeyText: SecureBytes

    public struct Revision: Hashable, Sendable {
        let id: DocumentID
        let modified: HybridTimestamp
    }

    /// The ssh key of `record`, or `nil` when the entry is not one (no `private_key` and `public_key` fields, or a
    /// public key that does not parse: such an entry is left alone, never an error for the others).
    public init?(_ record: EntryRecord) {
        guard let privateKey = record.field(Self.privateKeyField), let publicLine = record.field(Self.publicKeyField),
              let line = String(validating: publicLine.value.unprotectedBytes, as: UTF8.self),
              let publicKey = try? SSHPublicKey(line: line)
        else { return nil }
        func text(_ field: String) -> String? {
            record.field(field).flatMap { String(validating: $0.value.unprotectedBytes, as: UTF8.self) }
        }
        name = record.name
        self.publicKey = publicKey
        comment = text(Self.commentField) ?? ""
        hosts = Self.patterns(text(Self.hostsField) ?? "")
        forward = Self.isYes(text(Self.forwardField))
        confirm = Self.isYes(text(Self.confirmField))
        privateKeyText = privateKey.value
        revision = Revision(id: record.id, modified: record.modified)
    }

    /// A list of patterns as a `hosts` field holds it.
    public static func patterns(_ text: String) -> [String] {
        text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init)
    }

    static func isYes(_ text: String?) -> Bool {
        guard let text else { return false }
        return ["yes", "true", "1", "on"].contains(text.lowercased().filter { !$0.isWhitespace })
    }

    /// The private key, parsed in place from its field's guarded memory (listing keys parses none; the agent
    /// keeps what this gives until the vault locks: SSHKeyCache).
    public func privateKey() throws(SSHError) -> SSHPrivateKey {
        let parsed = privateKeyText.withUnsafeBytes { text in
            Result { () throws(SSHError) in
                do { return try OpenSSHKeyFile.read(armored: text) { nil } } catch let error as SSHError { throw error } catch { throw .notAPrivateKey }
            }
        }
        let key = try parsed.get()
        guard key.publicKey == publicKey else { throw .keyMismatch }
        return key
    }
}

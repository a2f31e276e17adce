import Foundation
import VaultTestSupport

/// A sandbox for a vault shared by recipients (issue 20): the owner, with the passphrase file and a state directory
/// (rollback records) of its own, and teammates, each with an identity file and no passphrase source, on machines
/// named by their state directories.
class SharedVaultSandbox: @unchecked Sendable {
    let box: Sandbox

    init(box: Sandbox) throws { self.box = box }

    convenience init() throws { try self.init(box: Sandbox()) }

    var state: [String: String] { ["XDG_STATE_HOME": box.directory + "/state-owner"] }

    /// `vault` as the owner (the passphrase file).
    @discardableResult
    func owner(_ arguments: [String], stdin: Data = Data()) throws -> CLIResult {
        try box.vault(arguments, stdin: stdin, extraEnvironment: state)
    }

    /// `vault` with an identity file and no passphrase source; `machine` names the state directory.
    @discardableResult
    func with(_ identity: String, _ arguments: [String], stdin: Data = Data(), machine: String = "owner") throws -> CLIResult {
        try box.vault(arguments + ["--identity", identity], stdin: stdin, passphrase: false,
                      extraEnvironment: ["XDG_STATE_HOME": box.directory + "/state-" + machine])
    }

    /// The vault file's bytes (empty when it does not exist).
    var bytes: [UInt8] { [UInt8](FileManager.default.contents(atPath: box.vaultPath) ?? Data()) }
}

import ArgumentParser
import Foundation
import VaultCore

/// Failures of the CLI itself (the library's are ``VaultError``).
package enum CLIError: Error, CustomStringConvertible {
    case noPassphraseSource
    case emptyPassphrase
    case passphrasesDiffer
    case noSuchEntry(name: String, path: String)
    case message(String, exitCode: Int32)

    package var description: String {
        switch self {
        case .noPassphraseSource:
            return "no passphrase: there is no terminal to ask on"
        case .emptyPassphrase:
            return "the passphrase is empty"
        case .passphrasesDiffer:
            return "the passphrases do not match"
        case .noSuchEntry(let name, let path):
            return "no entry '\(name)' in vault '\(path)'"
        case .message(let text, _):
            return text
        }
    }

    package var hint: String? {
        switch self {
        case .noPassphraseSource:
            return "pass --passphrase-fd N or --passphrase-file PATH, or set VAULT_PASSPHRASE"
        case .noSuchEntry:
            return "'vault list' shows the names"
        default:
            return nil
        }
    }
}

/// The fixed exit codes listed in `vault --help`.
package enum Exit {
    package static let failure: Int32 = 1
    package static let notFound: Int32 = 2
    package static let authentication: Int32 = 3
    package static let permissions: Int32 = 4
    package static let busy: Int32 = 5
    package static let corrupt: Int32 = 6
    package static let usage: Int32 = 64

    /// Classifies the errors of libraries this module does not link (the network verbs' in `vault-net`); set
    /// once at start-up, before any command runs.
    package nonisolated(unsafe) static var classifyOther: ((Error) -> (exitCode: Int32, code: String, message: String, hint: String?)?)?

    /// The exit code, a stable snake_case code for `--json`, the message and a hint for `error`.
    package static func classify(_ error: Error) -> (exitCode: Int32, code: String, message: String, hint: String?) {
        switch error {
        case let error as VaultError:
            let (exitCode, code): (Int32, String)
            switch error {
            case .wrongPassphrase: (exitCode, code) = (authentication, "wrong_passphrase")
            case .corrupt: (exitCode, code) = (corrupt, "corrupt")
            case .unsupportedVersion: (exitCode, code) = (corrupt, "unsupported_version")
            case .unsupportedKDF: (exitCode, code) = (corrupt, "unsupported_kdf")
            case .kdfParametersOutOfRange: (exitCode, code) = (corrupt, "kdf_parameters_out_of_range")
            case .unsafePermissions: (exitCode, code) = (permissions, "unsafe_permissions")
            case .busy: (exitCode, code) = (busy, "busy")
            case .invalidKey: (exitCode, code) = (usage, "invalid_name")
            case .vaultNotFound: (exitCode, code) = (failure, "no_vault")
            case .vaultAlreadyExists: (exitCode, code) = (failure, "vault_exists")
            case .notOpen: (exitCode, code) = (failure, "not_open")
            case .valueTooLarge: (exitCode, code) = (failure, "value_too_large")
            case .typeMismatch: (exitCode, code) = (failure, "type_mismatch")
            case .io: (exitCode, code) = (failure, "io_error")
            case .cryptoFailure: (exitCode, code) = (failure, "crypto_failure")
            case .rollbackDetected: (exitCode, code) = (corrupt, "rollback_detected")
            }
            return (exitCode, code, error.description, error.hint)
        case let error as CLIError:
            switch error {
            case .noPassphraseSource: return (failure, "no_passphrase_source", error.description, error.hint)
            case .emptyPassphrase: return (usage, "empty_passphrase", error.description, error.hint)
            case .passphrasesDiffer: return (usage, "passphrases_differ", error.description, error.hint)
            case .noSuchEntry: return (notFound, "no_such_entry", error.description, error.hint)
            case .message(_, let exitCode): return (exitCode, "error", error.description, error.hint)
            }
        default:
            if let classified = classifyOther?(error) { return classified }
            return (failure, "error", String(describing: error), nil)
        }
    }
}

/// Runs a verb's work; any error is reported on stderr (text or JSON) and turned into its exit code.
package func reportingErrors(json: Bool, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        let (exitCode, code, message, hint) = Exit.classify(error)
        if json {
            var object: [String: Any] = ["code": code, "exit_code": Int(exitCode), "message": message]
            if let hint { object["hint"] = hint }
            let data = (try? JSONSerialization.data(withJSONObject: ["error": object], options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            FileHandle.standardError.write(data + Data("\n".utf8))
        } else {
            var text = "vault: \(message)\n"
            if let hint { text += "hint: \(hint)\n" }
            FileHandle.standardError.write(Data(text.utf8))
        }
        throw ExitCode(exitCode)
    }
}

/// Writes bytes to stdout exactly, from wherever they are (guarded memory included).
package func writeToStdout(_ bytes: UnsafeRawBufferPointer) throws {
    var offset = 0
    while offset < bytes.count {
        let n = write(1, bytes.baseAddress! + offset, bytes.count - offset)
        if n < 0 {
            if errno == EINTR { continue }
            throw VaultError.io(operation: "cannot write", path: "stdout", errno: errno)
        }
        offset += n
    }
}

package func writeToStdout(_ text: String) throws {
    try Array(text.utf8).withUnsafeBytes { try writeToStdout($0) }
}

/// One JSON value on stdout with sorted keys and a newline.
package func writeJSON(_ object: Any) throws {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    try data.withUnsafeBytes { try writeToStdout($0) }
    try writeToStdout("\n")
}

import VaultCore

/// The library's own failures on the wire (protocol version 3): an error answer carries, besides the CLI's
/// presentation (code, exit code, message, hint), the ``VaultError`` case and its arguments, so that a client
/// throws the same error the local store would (``AgentVault`` and the local store fail alike, and the CLI
/// presents both the same way). Arguments are text; numbers in decimal. None is ever a secret.
enum AgentErrorWire {
    /// The case's name and arguments.
    static func encode(_ error: VaultError) -> (name: String, arguments: [String]) {
        switch error {
        case .wrongPassphrase(let path): return ("wrongPassphrase", [path])
        case .wrongIdentity(let path): return ("wrongIdentity", [path])
        case .corrupt(let path, let reason): return ("corrupt", [path] + encode(reason))
        case .unsupportedVersion(let path, let version): return ("unsupportedVersion", [path, "\(version)"])
        case .kdfParametersOutOfRange(let path, let ops, let mem): return ("kdfParametersOutOfRange", [path, "\(ops)", "\(mem)"])
        case .unsupportedKDF(let path, let algorithm): return ("unsupportedKDF", [path, "\(algorithm)"])
        case .vaultNotFound(let path): return ("vaultNotFound", [path])
        case .vaultAlreadyExists(let path): return ("vaultAlreadyExists", [path])
        case .unsafePermissions(let path, let reason, let hint): return ("unsafePermissions", [path, reason, hint])
        case .busy(let path, let seconds): return ("busy", [path, "\(seconds)"])
        case .notOpen: return ("notOpen", [])
        case .invalidEntryName(let reason): return ("invalidEntryName", [reason])
        case .invalidFileName(let name): return ("invalidFileName", [name])
        case .valueTooLarge(let key, let count): return ("valueTooLarge", [key, "\(count)"])
        case .typeMismatch(let key, let reason): return ("typeMismatch", [key, reason])
        case .io(let operation, let path, let code): return ("io", [operation, path, "\(code)"])
        case .cryptoFailure(let function): return ("cryptoFailure", [function])
        case .rollbackDetected(let path, let seen, let file): return ("rollbackDetected", [path, "\(seen)", "\(file)"])
        case .noSuchEntry(let key, let path): return ("noSuchEntry", [key, path])
        case .entryExists(let key, let path): return ("entryExists", [key, path])
        case .retiredKey(let path, let reason): return ("retiredKey", [path] + (reason.map { [$0.rawValue] } ?? []))
        case .otherVault(let path): return ("otherVault", [path])
        case .keyChanged(let path): return ("keyChanged", [path])
        case .otherKey(let path, let reason): return ("otherKey", [path] + (reason.map { [$0.rawValue] } ?? []))
        case .vaultTooLarge(let path, let count): return ("vaultTooLarge", [path, "\(count)"])
        case .generationExhausted(let path): return ("generationExhausted", [path])
        case .invalidFieldName(let reason): return ("invalidFieldName", [reason])
        case .noSuchVersion(let key, let version): return ("noSuchVersion", [key, "\(version)"])
        case .noSuchField(let key, let field): return ("noSuchField", [key, field])
        case .fieldExists(let key, let field): return ("fieldExists", [key, field])
        case .needsVersion2(let path): return ("needsVersion2", [path])
        case .missingOwnWrites(let path): return ("missingOwnWrites", [path])
        case .storageConflict(let path): return ("storageConflict", [path])
        case .notTheSameVault(let path): return ("notTheSameVault", [path])
        case .behindHorizon(let path): return ("behindHorizon", [path])
        case .clockExhausted: return ("clockExhausted", [])
        case .unauthorizedKey(let path): return ("unauthorizedKey", [path])
        case .staleKey(let path): return ("staleKey", [path])
        case .notARecipient(let path): return ("notARecipient", [path])
        case .removedRecipient(let path): return ("removedRecipient", [path])
        case .clockAhead(let path, let replica, let milliseconds): return ("clockAhead", [path, "\(replica.rawValue)", "\(milliseconds)"])
        case .untrustedCopy(let path, let reason): return ("untrustedCopy", [path, reason])
        case .massDeletion(let path, let names): return ("massDeletion", [path] + names)
        }
    }

    /// The error `name` and `arguments` spell (``encode(_:)``'s inverse), `nil` for a case or arguments this build
    /// does not know (the client then shows the agent's presentation). `path` maps each argument: the agent names
    /// a vault by its canonical path, the client by the spelling it was given.
    static func decode(_ name: String, _ a: [String], path: (String) -> String = { $0 }) -> VaultError? {
        func n<T: FixedWidthInteger>(_ i: Int) -> T? { i < a.count ? T(a[i]) : nil }
        func count(_ expected: Int) -> Bool { a.count == expected }
        switch name {
        case "wrongPassphrase" where count(1): return .wrongPassphrase(path: path(a[0]))
        case "wrongIdentity" where count(1): return .wrongIdentity(path: path(a[0]))
        case "corrupt" where a.count >= 2:
            guard let reason = decodeCorruption(Array(a[1...])) else { return nil }
            return .corrupt(path: path(a[0]), reason: reason)
        case "unsupportedVersion" where count(2): return n(1).map { .unsupportedVersion(path: path(a[0]), version: $0) }
        case "kdfParametersOutOfRange" where count(3):
            guard let ops: UInt64 = n(1), let mem: UInt64 = n(2) else { return nil }
            return .kdfParametersOutOfRange(path: path(a[0]), opsLimit: ops, memLimitBytes: mem)
        case "unsupportedKDF" where count(2): return n(1).map { .unsupportedKDF(path: path(a[0]), algorithm: $0) }
        case "vaultNotFound" where count(1): return .vaultNotFound(path: path(a[0]))
        case "vaultAlreadyExists" where count(1): return .vaultAlreadyExists(path: path(a[0]))
        case "unsafePermissions" where count(3): return .unsafePermissions(path: path(a[0]), reason: a[1], hint: a[2])
        case "busy" where count(2): return Double(a[1]).map { .busy(path: path(a[0]), timeoutSeconds: $0) }
        case "notOpen" where count(0): return .notOpen
        case "invalidEntryName" where count(1): return .invalidEntryName(reason: a[0])
        case "invalidFileName" where count(1): return .invalidFileName(a[0])
        case "valueTooLarge" where count(2): return n(1).map { .valueTooLarge(key: a[0], byteCount: $0) }
        case "typeMismatch" where count(2): return .typeMismatch(key: a[0], reason: a[1])
        case "io" where count(3): return n(2).map { .io(operation: a[0], path: path(a[1]), errno: $0) }
        case "cryptoFailure" where count(1): return .cryptoFailure(function: a[0])
        case "rollbackDetected" where count(3):
            guard let seen: UInt64 = n(1), let file: UInt64 = n(2) else { return nil }
            return .rollbackDetected(path: path(a[0]), seenGeneration: seen, fileGeneration: file)
        case "noSuchEntry" where count(2): return .noSuchEntry(key: a[0], path: path(a[1]))
        case "entryExists" where count(2): return .entryExists(key: a[0], path: path(a[1]))
        case "retiredKey" where count(1): return .retiredKey(path: path(a[0]))
        case "retiredKey" where count(2): return KeyChangeReason(rawValue: a[1]).map { .retiredKey(path: path(a[0]), reason: $0) }
        case "otherVault" where count(1): return .otherVault(path: path(a[0]))
        case "keyChanged" where count(1): return .keyChanged(path: path(a[0]))
        case "otherKey" where count(1): return .otherKey(path: path(a[0]))
        case "otherKey" where count(2): return KeyChangeReason(rawValue: a[1]).map { .otherKey(path: path(a[0]), reason: $0) }
        case "vaultTooLarge" where count(2): return n(1).map { .vaultTooLarge(path: path(a[0]), byteCount: $0) }
        case "generationExhausted" where count(1): return .generationExhausted(path: path(a[0]))
        case "invalidFieldName" where count(1): return .invalidFieldName(a[0])
        case "noSuchVersion" where count(2): return n(1).map { .noSuchVersion(key: a[0], version: $0) }
        case "noSuchField" where count(2): return .noSuchField(key: a[0], field: a[1])
        case "fieldExists" where count(2): return .fieldExists(key: a[0], field: a[1])
        case "needsVersion2" where count(1): return .needsVersion2(path: path(a[0]))
        case "missingOwnWrites" where count(1): return .missingOwnWrites(path: path(a[0]))
        case "storageConflict" where count(1): return .storageConflict(path: path(a[0]))
        case "notTheSameVault" where count(1): return .notTheSameVault(path: path(a[0]))
        case "behindHorizon" where count(1): return .behindHorizon(path: path(a[0]))
        case "clockExhausted" where count(0): return .clockExhausted
        case "unauthorizedKey" where count(1): return .unauthorizedKey(path: path(a[0]))
        case "staleKey" where count(1): return .staleKey(path: path(a[0]))
        case "notARecipient" where count(1): return .notARecipient(path: path(a[0]))
        case "removedRecipient" where count(1): return .removedRecipient(path: path(a[0]))
        case "clockAhead" where count(3):
            guard let replica: UInt64 = n(1), let milliseconds: UInt64 = n(2) else { return nil }
            return .clockAhead(path: path(a[0]), replica: ReplicaID(rawValue: replica), milliseconds: milliseconds)
        case "untrustedCopy" where count(2): return .untrustedCopy(path: path(a[0]), reason: a[1])
        case "massDeletion" where a.count >= 1: return .massDeletion(path: path(a[0]), names: Array(a[1...]))
        default: return nil
        }
    }

    /// A corruption as its code and, when it has one, its number.
    static func encode(_ reason: Corruption) -> [String] {
        switch reason {
        case .truncated(let count), .tooLarge(let count), .sizeMismatch(let count), .entryCountExceedsData(let count),
             .entryTruncated(let count), .badNameLength(let count), .nameNotUTF8(let count), .badValueLength(let count),
             .badHeaderLength(let count), .badStanza(let count), .badName(let count), .badField(let count),
             .badHistory(let count), .tooManyStanzas(let count), .badRecipient(let count), .badAgeFile(let count),
             .duplicateRecipient(let count), .badKeyLink(let count):
            return [reason.code, "\(count)"]
        case .unknownFlags(let flags): return [reason.code, "\(flags)"]
        // The rule's detail and the kept version's place are in the message, which the answer carries besides.
        case .inKeptVersion(_, let inner): return encode(inner)
        case .badClock(let rule): return [reason.code, rule.parts.name, rule.parts.argument]
        default: return [reason.code]
        }
    }

    static func decodeCorruption(_ a: [String]) -> Corruption? {
        if a.count == 3, a[0] == "bad_clock" { return ClockRule(name: a[1], argument: a[2]).map { .badClock($0) } }
        let number = a.count == 2 ? Int(a[1]) : nil
        guard a.count == 1 || number != nil else { return nil }
        let plain: [Corruption] = [.badMagic, .plaintextTooShort, .duplicateName, .badPadding, .noUsableStanza, .headerMACMismatch,
                                   .bodyMACMismatch, .bodyBindingMismatch, .duplicateID, .badTombstone, .badVarint]
        if a.count == 1 { return plain.first { $0.code == a[0] } }
        guard let number else { return nil }
        let numbered: [(Int) -> Corruption] = [
            { .truncated(byteCount: $0) }, { .tooLarge(byteCount: $0) }, { .sizeMismatch(byteCount: $0) },
            { .entryCountExceedsData(count: $0) }, { .entryTruncated(index: $0) }, { .badNameLength(index: $0) },
            { .nameNotUTF8(index: $0) }, { .badValueLength(index: $0) }, { .badHeaderLength($0) }, { .badStanza(index: $0) },
            { .badName(index: $0) }, { .badField(entry: $0) }, { .badHistory(entry: $0) }, { .tooManyStanzas(count: $0) },
            { .badRecipient(index: $0) }, { .badAgeFile(index: $0) }, { .duplicateRecipient(index: $0) }, { .badKeyLink(index: $0) },
        ]
        if a[0] == Corruption.unknownFlags(0).code { return UInt8(exactly: number).map { .unknownFlags($0) } }
        return numbered.lazy.map { $0(number) }.first { $0.code == a[0] }
    }
}

import VaultSyncCore

extension StringProtocol {
    /// Foundation's `trimmingCharacters(in:)` for the three sets the CLI trims (``trimming(_:)``), under
    /// Foundation's name in the CLI, which imports FoundationEssentials only.
    func trimmingCharacters(in set: TrimmedCharacters) -> String { trimming(set) }
}

/// The sets ``Swift/StringProtocol/trimmingCharacters(in:)`` takes, under the CLI's name for them.
typealias TrimmedCharacters = VaultSyncCore.TrimmedCharacters

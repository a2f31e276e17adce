import Testing
import VaultCommands
import VaultCore

/// Issue 33 §3, the question on a mass deletion: a "yes" is consent to the names shown, not to whatever a later attempt
/// of the same sync deletes (an S3 412 or a rejected git push makes it merge again, with what another writer put there
/// meanwhile). Only `--accept-deletions` is blanket consent.
@Suite struct DeletionConsentTests {
    /// A merge attempt that would delete `names` (refused unless accepted), reporting them deleted when accepted.
    func attempt(_ names: [String]) -> (Bool) throws -> MergeReport {
        { accepted in
            guard accepted else { throw VaultError.massDeletion(path: "remote", names: names) }
            var report = MergeReport()
            report.deleted = names
            return report
        }
    }

    @Test func aYesCoversTheNamesShownAndALaterAttemptDeletingOthersAsksAgain() throws {
        let shown = (0..<12).map { "e\($0)" }
        var asked: [[String]] = []
        var answer = true
        let consent = DeletionConsent(accepted: false) { _, names in
            asked.append(names)
            return answer
        }
        #expect(try consent.merging(label: "remote", attempt(shown)).deleted == shown)
        // The next attempt (the remote moved) deletes the same names, or fewer: merged without asking again.
        #expect(try consent.merging(label: "remote", attempt(Array(shown.prefix(11)))).deleted.count == 11)
        #expect(asked == [shown])
        // One that deletes a name outside that set is asked about again; "no" refuses it.
        answer = false
        let more = shown + ["new"]
        #expect(throws: (any Error).self) { try consent.merging(label: "remote", attempt(more)) }
        #expect(asked == [shown, more])
    }

    /// With nothing to ask on (the terminal's question throws the mass deletion), the later attempt is refused.
    @Test func withNothingToAskALaterAttemptDeletingOtherNamesIsRefused() throws {
        var first = true
        let consent = DeletionConsent(accepted: false) { label, names in
            guard first else { throw VaultError.massDeletion(path: label, names: names) }
            first = false
            return true
        }
        let shown = (0..<12).map { "e\($0)" }
        _ = try consent.merging(label: "remote", attempt(shown))
        #expect(throws: VaultError.massDeletion(path: "remote", names: ["x"] + shown)) {
            try consent.merging(label: "remote", attempt(["x"] + shown))
        }
    }

    /// `--accept-deletions` is blanket consent: nothing is asked, any attempt merges.
    @Test func acceptDeletionsIsBlanketConsent() throws {
        let consent = DeletionConsent(accepted: true) { _, _ in
            Issue.record("asked")
            return false
        }
        #expect(try consent.merging(label: "remote", attempt(["a", "b"])).deleted == ["a", "b"])
    }
}

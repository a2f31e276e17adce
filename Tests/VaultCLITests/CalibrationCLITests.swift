import Foundation
import VaultTestSupport
import Testing

/// `vault init --kdf calibrate:TIME` and `vault info --measure`. No timing is asserted (the machine may be
/// loaded): only that the chosen parameters are in the accepted range, that progress goes to stderr, and that
/// the measured unlock cost is reported.
@Suite struct CalibrationCLITests {
    private static func directory() throws -> String {
        try makePrivateDirectory(prefix: "vault-calibration")
    }

    struct CalibrationFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    @Test func calibrateRecordsParametersInTheAcceptedRangeAndShowsProgress() throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let passphraseFile = dir + "/passphrase"
        try "calibration test\n".write(toFile: passphraseFile, atomically: false, encoding: .utf8)
        chmod(passphraseFile, 0o600)
        let vault = dir + "/c.vault"
        let result = try CLI.run(
            ["init", "--kdf", "calibrate:50ms", "--vault", vault, "--passphrase-file", passphraseFile, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("calibrating Argon2id (1/4): 64 MiB, 2 passes takes"))
        let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        let ops = object?["opslimit"] as? Int ?? 0
        let mem = object?["memlimit"] as? Int ?? 0
        #expect((2...4).contains(ops))
        #expect(((64 << 20)...(1 << 30)).contains(mem) && mem % (1 << 20) == 0)

        let info = try CLI.run(["info", "--vault", vault, "--measure"])
        #expect(info.status == 0, "\(info.stderr)")
        #expect(info.stdoutText.contains("kdf:         Argon2id v1.3, \(mem >> 20) MiB, \(ops) passes\n"))
        #expect(info.stdoutText.contains("unlock cost: "))
        #expect(info.stdoutText.contains(" ms here (one Argon2id with these parameters, measured)\n"))

        let json = try CLI.run(["info", "--vault", vault, "--measure", "--json"])
        let measured = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
        #expect((measured?["unlock_ms"] as? Int ?? -1) > 0)
        // Without --measure, info stays instant and says nothing about cost.
        #expect(try !CLI.run(["info", "--vault", vault]).stdoutText.contains("unlock cost"))
    }

    @Test func badCalibrationTargetsAreUsageErrors() throws {
        for value in ["calibrate:", "calibrate:fast", "calibrate:0ms", "calibrate:500", "turbo"] {
            let result = try CLI.run(["init", "--kdf", value, "--vault", "/nonexistent/x.vault"])
            #expect(result.status == 64, "\(value): \(result.stderr)")
        }
    }
}

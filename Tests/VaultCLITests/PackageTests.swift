import Foundation
import Testing
import VaultTestSupport

/// The Debian package (scripts/package-deb), built from the release binaries of the install
/// (scripts/install's build directory, `.build-install/release`: `scripts/test-install` or `scripts/install` makes
/// them; CI runs the install test first) and checked by scripts/test-package: contents and control, lintian, the
/// units with `systemd-analyze verify`, installed in a private dpkg root where vault runs vault-net from
/// /usr/lib/vault and the agent serves init, put and get on the socket `systemd-socket-activate` hands it, then
/// purged with nothing left.
///
/// Without those binaries or the tools (dpkg-deb, lintian, systemd-socket-activate: scripts/install-deps --test),
/// it is skipped saying so; under CI (`CI=true`) it runs and their absence fails.
@Suite(.processTimeLimit) struct PackageTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let binaries = ProcessInfo.processInfo.environment["VAULT_INSTALL_BINARIES"]
        ?? repository.appendingPathComponent(".build-install/release").path
    static let tools = ["dpkg-deb", "dpkg-shlibdeps", "lintian", "systemd-socket-activate", "systemd-analyze"]

    static var missing: [String] {
        let path = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        let absentTools = tools.filter { tool in !path.contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") } }
        let absentBinaries = ["vault", "vault-net", "generate-manual"]
            .filter { !FileManager.default.isExecutableFile(atPath: "\(binaries)/\($0)") }
            .map { "\(binaries)/\($0) (run scripts/test-install or scripts/install first)" }
        return absentTools + absentBinaries
    }

    static var runs: Bool { missing.isEmpty || ProcessInfo.processInfo.environment["CI"] == "true" }

    @Test(.enabled(if: runs, "the package test needs what is missing here: \(missing.joined(separator: ", ")) (scripts/install-deps --test)"))
    func thePackageInstallsServesThroughItsSocketActivatedAgentAndPurgesClean() throws {
        try #require(Self.missing.isEmpty, "missing under CI: \(Self.missing.joined(separator: ", "))")
        let result = try CLI.exec(
            Self.repository.appendingPathComponent("scripts/test-package").path, [],
            environment: ["VAULT_INSTALL_BINARIES": Self.binaries, "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"],
            timeout: 600)
        // The script's output is long (the install's, lintian's, the agent's): its end says what failed. Asked once,
        // into a Bool: an expectation over the whole text made Swift Testing spin for minutes describing it.
        let tail = String(result.stderr.suffix(6000))
        let ok = result.stderr.contains("test-package: ok")
        #expect(result.status == 0, "scripts/test-package: exit \(result.status)\n\(tail)")
        #expect(ok, "no 'test-package: ok' in its output; its end:\n\(tail)")
    }
}

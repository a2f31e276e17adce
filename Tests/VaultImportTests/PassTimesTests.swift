import Foundation
import Testing
@testable import VaultImport

@Suite struct PassTimesTests {
    static let git = ["/usr/bin/git", "/usr/local/bin/git"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var runs: Bool { git != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    @Test func gitLogGivesTheNewestAndOldestCommitOfEachFile() {
        // `git log -z --name-only --format=%x01%at`, newest first.
        let output = Data("\u{1}1700000000\0\nb é.gpg\0web/a.gpg\0\u{1}1600000000\0\nweb/a.gpg\0".utf8)
        #expect(PassTimes.parse(output) == [
            "b é.gpg": PassTimes.Times(created: 1_700_000_000_000, modified: 1_700_000_000_000),
            "web/a.gpg": PassTimes.Times(created: 1_600_000_000_000, modified: 1_700_000_000_000),
        ])
        #expect(PassTimes.parse(Data()) == [:])
    }

    @Test(.enabled(if: runs, "needs git: scripts/install-deps --test"))
    func aStoreInGitTakesItsCommitsElseTheFilesTimes() throws {
        let git = try #require(Self.git, "git is needed (CI=true)")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("passtimes-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/web", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func run(_ arguments: [String], date: String? = nil) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: git)
            process.arguments = ["-C", directory, "-c", "user.name=t", "-c", "user.email=t@example.invalid"] + arguments
            var environment = ProcessInfo.processInfo.environment
            if let date { environment["GIT_AUTHOR_DATE"] = date; environment["GIT_COMMITTER_DATE"] = date }
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(arguments)")
        }
        try Data("1".utf8).write(to: URL(fileURLWithPath: directory + "/web/a.gpg"))
        try run(["init", "-q"])
        try run(["add", "."])
        try run(["commit", "-qm", "one"], date: "@1600000000 +0000")
        try Data("2".utf8).write(to: URL(fileURLWithPath: directory + "/web/a.gpg"))
        try run(["commit", "-qam", "two"], date: "@1700000000 +0000")
        // Not committed: the file's own time.
        try Data("3".utf8).write(to: URL(fileURLWithPath: directory + "/loose.gpg"))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_500_000_000)], ofItemAtPath: directory + "/loose.gpg")
        let times = PassTimes.read(directory: directory, files: ["web/a.gpg", "loose.gpg"])
        #expect(times == [
            "web/a.gpg": PassTimes.Times(created: 1_600_000_000_000, modified: 1_700_000_000_000),
            "loose.gpg": PassTimes.Times(created: 1_500_000_000_000, modified: 1_500_000_000_000),
        ])
    }
}

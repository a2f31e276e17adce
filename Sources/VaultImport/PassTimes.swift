import Foundation
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// When each file of a pass store was made and last changed: what the store's git history says (`pass git init`
/// commits every change; the author time of the newest and of the oldest commit that touched the file), else the
/// file's modification time (a store without git, or a file not committed). A clone sets every file's time to the
/// clone's, which is why git's word comes first.
enum PassTimes {
    struct Times: Equatable {
        var created: UInt64
        var modified: UInt64
    }

    /// The times of `files` (paths relative to `directory`), in milliseconds since the epoch; a file with neither a
    /// commit nor a readable time is left out (its entry takes the import's time).
    static func read(directory: String, files: [String], git: String = "git") -> [String: Times] {
        var times = FileManager.default.fileExists(atPath: directory + "/.git") ? fromGit(directory: directory, git: git) : [:]
        for file in files where times[file] == nil {
            var info = stat()
            guard stat(directory + "/" + file, &info) == 0 else { continue }
            let milliseconds = UInt64(max(0, info.st_mtim.tv_sec)) * 1000 + UInt64(max(0, info.st_mtim.tv_nsec)) / 1_000_000
            times[file] = Times(created: milliseconds, modified: milliseconds)
        }
        let wanted = Set(files)
        return times.filter { wanted.contains($0.key) }
    }

    /// `git log`'s view: `git -C DIR log --relative -z --name-only --format=%x01%at`, newest commit first; `[:]`
    /// when git is not there or fails (the files' own times are taken then).
    static func fromGit(directory: String, git: String) -> [String: Times] {
        guard let executable = try? GPG.locate(git) else { return [:] }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-C", directory, "-c", "core.quotepath=off", "log", "--relative", "-z", "--name-only", "--no-renames",
                             "--format=%x01%at", "--", "."]
        let output = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        do { try process.run() } catch { return [:] }
        let data = (try? output.fileHandleForReading.readToEnd()) ?? Data()
        exited.wait()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else { return [:] }
        return parse(data)
    }

    /// The times in `git log -z --name-only --format=%x01%at`'s output: a token `\u{1}SECONDS` starts a commit, the
    /// names after it (the first one after a line feed) are the files it touched.
    static func parse(_ data: Data) -> [String: Times] {
        var times: [String: Times] = [:]
        var current: UInt64?
        for token in data.split(separator: 0, omittingEmptySubsequences: true) {
            var text = String(decoding: token, as: UTF8.self)
            if text.hasPrefix("\u{1}") {
                current = UInt64(text.dropFirst()).map { $0 * 1000 }
                continue
            }
            if text.hasPrefix("\n") { text.removeFirst() }
            guard let time = current, !text.isEmpty else { continue }
            if let known = times[text] {
                times[text] = Times(created: min(known.created, time), modified: max(known.modified, time))
            } else {
                times[text] = Times(created: time, modified: time)
            }
        }
        return times
    }
}

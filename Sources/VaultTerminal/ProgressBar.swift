#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VaultCore

/// A progress bar on stderr for a long operation (an import, an export, a first sync): what it does, a bar, the
/// count done of the total, and the time left once it can be told, redrawn in place at most ten times a second and
/// erased when done:
///
///     exporting [#########-----------] 120/500 entries, 0:42 left
///
/// Only when stderr is a terminal (``onTerminal(_:total:unit:)`` gives `nil` otherwise: nothing when piped, so a
/// log or a script sees no carriage returns). Names and values are never shown.
public final class ProgressBar {
    let label: String
    let total: Int
    let unit: String
    let started = Posix.monotonicSeconds()
    var done = 0
    var drawn = -1.0
    var line = StderrLine()

    init(label: String, total: Int, unit: String) {
        self.label = label
        self.total = total
        self.unit = unit
    }

    /// A bar for `total` steps, or `nil` when stderr is not a terminal or there is nothing to count.
    public static func onTerminal(_ label: String, total: Int, unit: String = "entries") -> ProgressBar? {
        guard total > 0, isatty(2) == 1 else { return nil }
        return ProgressBar(label: label, total: total, unit: unit)
    }

    /// `count` more steps done; redrawn when a tenth of a second has passed since the last drawing, or at the end.
    public func advance(by count: Int = 1) {
        done = min(total, done + count)
        let now = Posix.monotonicSeconds()
        guard done == total || now - drawn >= 0.1 else { return }
        drawn = now
        line.draw(Self.line(label: label, done: done, total: total, unit: unit, elapsed: now - started))
    }

    /// `done` steps done in all (a count that only grows: a smaller one changes nothing).
    public func advance(to done: Int) {
        if done > self.done { advance(by: done - self.done) }
    }

    /// Erases the bar (the line is left as it was before).
    public func finish() { line.erase() }

    /// The bar's text: label, 20 cells, count, and the time left (from the rate so far, once a second has passed).
    static func line(label: String, done: Int, total: Int, unit: String, elapsed: Double) -> String {
        let cells = total > 0 ? done * 20 / total : 0
        var text = "\(label) [" + String(repeating: "#", count: cells) + String(repeating: "-", count: 20 - cells) + "] \(done)/\(total) \(unit)"
        if done < total, done > 0, elapsed >= 1 {
            let left = Int((elapsed / Double(done) * Double(total - done)).rounded(.up))
            text += ", \(StderrLine.clock(left)) left"
        }
        return text
    }

}

/// The progress of a download whose size is not known (an answer without a Content-Length, as OpenBao's chunked
/// ones): the bytes in so far, the rate, and the time it has taken, on stderr, in place; no bar and no time left,
/// which cannot be known:
///
///     fetching 312 KiB, 156 KiB/s, 0:02
///
/// Drawn only once the download has lasted ``delay`` seconds (a fast one draws nothing), then at most ten times a
/// second, and erased at the end; only when stderr is a terminal (``onTerminal(_:)``), as ``ProgressBar``.
public final class ByteProgress {
    /// How long a download lasts before it is shown.
    public static let delay = 0.5
    let label: String
    let started: Double
    var drawn = -1.0
    var line = StderrLine()

    init(label: String, started: Double) {
        self.label = label
        self.started = started
    }

    /// A count for a download starting now, or `nil` when stderr is not a terminal.
    public static func onTerminal(_ label: String) -> ByteProgress? {
        isatty(2) == 1 ? ByteProgress(label: label, started: Posix.monotonicSeconds()) : nil
    }

    /// `bytes` in so far: drawn once the download has lasted ``delay``, a tenth of a second after the last drawing.
    public func advance(to bytes: Int) {
        if let text = text(bytes: bytes, now: Posix.monotonicSeconds()) { line.draw(text) }
    }

    /// The line to draw at `now` for `bytes` in, or `nil` when there is none yet (too early, or drawn less than a
    /// tenth of a second ago).
    func text(bytes: Int, now: Double) -> String? {
        let elapsed = now - started
        guard elapsed >= Self.delay, now - drawn >= 0.1 else { return nil }
        drawn = now
        return Self.line(label: label, bytes: bytes, elapsed: elapsed)
    }

    /// Erases the line (the line is left as it was before).
    public func finish() { line.erase() }

    /// The text: label, the bytes in (KiB, or MiB with one decimal from 1 MiB), the rate, and the time taken (m:ss).
    static func line(label: String, bytes: Int, elapsed: Double) -> String {
        let rate = elapsed > 0 ? Int(Double(bytes) / elapsed) : 0
        return "\(label) \(size(bytes)), \(size(rate))/s, \(StderrLine.clock(Int(elapsed)))"
    }

    static func size(_ bytes: Int) -> String {
        guard bytes >= 1 << 20 else { return "\(bytes / 1024) KiB" }
        let tenths = bytes * 10 / (1 << 20)
        return "\(tenths / 10).\(tenths % 10) MiB"
    }
}

/// One line on stderr, drawn in place (carriage return, then the rest of the old line cleared) and erased, if it
/// was drawn.
struct StderrLine {
    private(set) var shown = false

    mutating func draw(_ text: String) {
        shown = true
        Self.write("\r" + text + "\u{1B}[K")
    }

    mutating func erase() {
        guard shown else { return }
        Self.write("\r\u{1B}[K")
        shown = false
    }

    /// `seconds` as m:ss.
    static func clock(_ seconds: Int) -> String {
        "\(seconds / 60):" + (seconds % 60 < 10 ? "0" : "") + "\(seconds % 60)"
    }

    static func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}

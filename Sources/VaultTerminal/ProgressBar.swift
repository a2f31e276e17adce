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
    var shown = false

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
        draw(Self.line(label: label, done: done, total: total, unit: unit, elapsed: now - started))
    }

    /// `done` steps done in all (a count that only grows: a smaller one changes nothing).
    public func advance(to done: Int) {
        if done > self.done { advance(by: done - self.done) }
    }

    /// Erases the bar (the line is left as it was before).
    public func finish() {
        guard shown else { return }
        write("\r\u{1B}[K")
        shown = false
    }

    /// The bar's text: label, 20 cells, count, and the time left (from the rate so far, once a second has passed).
    static func line(label: String, done: Int, total: Int, unit: String, elapsed: Double) -> String {
        let cells = total > 0 ? done * 20 / total : 0
        var text = "\(label) [" + String(repeating: "#", count: cells) + String(repeating: "-", count: 20 - cells) + "] \(done)/\(total) \(unit)"
        if done < total, done > 0, elapsed >= 1 {
            let left = Int((elapsed / Double(done) * Double(total - done)).rounded(.up))
            text += ", \(left / 60):" + (left % 60 < 10 ? "0" : "") + "\(left % 60) left"
        }
        return text
    }

    private func draw(_ text: String) {
        shown = true
        write("\r" + text + "\u{1B}[K")
    }

    private func write(_ text: String) {
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

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import VaultCore

/// A line on stderr while waiting for work that tells no progress (the agent's answer to `recipients remove`,
/// which re-encrypts the vault): what is done and the time taken, drawn only once the wait has lasted ``delay``
/// seconds (a fast answer draws nothing), redrawn each second, erased when the work ends:
///
///     re-encrypting... 0:02
///
/// Only when stderr is a terminal: nothing when piped. The line is drawn by a thread of its own (the waiting one is
/// blocked) and erased before ``during(_:_:)`` returns or throws.
public final class WaitingLine: Sendable {
    /// How long a wait lasts before it is shown.
    public static let delay = 0.5
    let label: String
    let started = Posix.monotonicSeconds()
    /// The line, and whether the work has ended (nothing is drawn after that).
    let state = Mutex<(line: StderrLine, ended: Bool)>((StderrLine(), false))
    /// The drawing thread waits on `read` for the end: `write` closed.
    let wake: (read: Int32, write: Int32)

    init?(label: String) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        // Not inherited by a program the waiting command might start meanwhile.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.label = label
        self.wake = (ends[0], ends[1])
    }

    /// Runs `work`, showing `label` and the time taken while it lasts longer than ``delay`` on a terminal.
    /// (`onTerminal`: whether stderr is a terminal; tests say so.)
    public static func during<T>(_ label: String, onTerminal: Bool = isatty(2) == 1, _ work: () throws -> T) rethrows -> T {
        guard onTerminal, let line = WaitingLine(label: label) else { return try work() }
        return try line.showing(work)
    }

    /// Runs `work` with this line drawn by a thread of its own, ended (and its pipe closed) when the work ends.
    func showing<T>(_ work: () throws -> T) rethrows -> T {
        let caller = pthread_self()
        startDetachedThread {
            // With no thread to be had, this runs here, before the work: no line then (it would never end).
            if pthread_equal(pthread_self(), caller) == 0 { self.draw() } else { close(self.wake.read) }
        }
        defer { end() }
        return try work()
    }

    /// The drawing thread: after ``delay``, then each second, the line with the time taken, until the end.
    func draw() {
        var wait = Self.delay
        while true {
            var fd = pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)
            let ready = poll(&fd, 1, Int32(wait * 1000))
            if ready < 0 && errno == EINTR { continue }
            // Woken (the write end closed) or poll failing: the end.
            guard ready == 0 else { break }
            let ended = state.withLock { state in
                if !state.ended { state.line.draw(Self.text(label: label, elapsed: Posix.monotonicSeconds() - started)) }
                return state.ended
            }
            if ended { break }
            wait = 1
        }
        close(wake.read)
    }

    /// The work has ended: the line erased if drawn, the thread woken to end.
    func end() {
        state.withLock { state in
            state.ended = true
            state.line.erase()
        }
        close(wake.write)
    }

    static func text(label: String, elapsed: Double) -> String {
        "\(label) \(StderrLine.clock(Int(elapsed)))"
    }
}

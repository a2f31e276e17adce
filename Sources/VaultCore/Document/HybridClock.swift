import VaultSodium
#if canImport(Glibc)
import Glibc
#endif

/// Which copy of a vault made a change: 8 random bytes, one per user and vault (kept in the state directory
/// beside the rollback record), so that two machines never issue the same timestamp.
public struct ReplicaID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// A new random replica id.
    public static func random() -> ReplicaID {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { Sodium.fillRandom($0) }
        return ReplicaID(rawValue: value)
    }

    public static func < (a: ReplicaID, b: ReplicaID) -> Bool { a.rawValue < b.rawValue }

    /// 16 lowercase hex digits.
    public var description: String { Posix.hex(withUnsafeBytes(of: rawValue.bigEndian, Array.init)) }
}

/// A hybrid logical clock timestamp (Kulkarni et al., "Logical Physical Clocks", 2014): wall-clock milliseconds
/// (48 bits), a counter (16 bits) for events within one millisecond or while the wall clock lags, and the replica
/// that issued it. Ordered by milliseconds, then counter, then replica: two replicas never tie.
public struct HybridTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The largest millisecond value a timestamp holds (2^48 − 1: the year 10889).
    public static let maximumMilliseconds: UInt64 = (1 << 48) - 1

    public let milliseconds: UInt64
    public let counter: UInt16
    public let replica: ReplicaID

    public init(milliseconds: UInt64, counter: UInt16, replica: ReplicaID) {
        precondition(milliseconds <= Self.maximumMilliseconds, "milliseconds beyond 48 bits")
        self.milliseconds = milliseconds
        self.counter = counter
        self.replica = replica
    }

    public static func < (a: HybridTimestamp, b: HybridTimestamp) -> Bool {
        (a.milliseconds, a.counter, a.replica.rawValue) < (b.milliseconds, b.counter, b.replica.rawValue)
    }

    /// The time part as one 64-bit number: milliseconds << 16 | counter (what the file stores).
    public var packed: UInt64 { milliseconds << 16 | UInt64(counter) }

    /// The timestamp of time part `packed` (``packed``) issued by `replica`.
    public init(packed: UInt64, replica: ReplicaID) {
        self.init(milliseconds: packed >> 16, counter: UInt16(truncatingIfNeeded: packed), replica: replica)
    }

    /// The timestamp `replica` issues next, after `last` (its own latest, or the latest it has seen), at wall
    /// time `now`: later than `last` whatever the wall clock says. The milliseconds follow the wall clock when
    /// it is ahead, else stay and the counter counts; a full counter moves to the next millisecond (the clock
    /// "waits" a millisecond, without sleeping).
    ///
    /// - Throws: ``VaultError/clockExhausted`` past the year 10889, or when `last` is already the largest.
    public static func next(after last: HybridTimestamp?, replica: ReplicaID, now: UInt64) throws -> HybridTimestamp {
        let wall = min(now, maximumMilliseconds)
        guard let last else { return HybridTimestamp(milliseconds: wall, counter: 0, replica: replica) }
        if wall > last.milliseconds { return HybridTimestamp(milliseconds: wall, counter: 0, replica: replica) }
        if last.counter < UInt16.max {
            return HybridTimestamp(milliseconds: last.milliseconds, counter: last.counter + 1, replica: replica)
        }
        guard last.milliseconds < maximumMilliseconds else { throw VaultError.clockExhausted }
        return HybridTimestamp(milliseconds: last.milliseconds + 1, counter: 0, replica: replica)
    }

    /// `milliseconds.counter@replica`, e.g. `1764139200000.3@0123456789abcdef`.
    public var description: String { "\(milliseconds).\(counter)@\(replica)" }
}

/// Where a document's timestamps take wall time from: injected, so that merge code, tests and the agent decide
/// what "now" is, and a document never reads a clock by itself.
public protocol WallClock: Sendable {
    /// Milliseconds since the Unix epoch.
    func milliseconds() -> UInt64
}

/// The system's real-time clock.
public struct SystemWallClock: WallClock {
    public init() {}

    public func milliseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        guard now.tv_sec >= 0 else { return 0 }
        return UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec) / 1_000_000
    }
}

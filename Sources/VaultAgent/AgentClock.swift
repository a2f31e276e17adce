import VaultCore

/// The clock the agent's timeouts run on: seconds from a fixed point, never going back. The agent runs on
/// ``BootClock``; its tests pass a clock of their own and move it by hand, so that expiry is tested without
/// waiting for it.
public protocol AgentClock: Sendable {
    /// Seconds since an arbitrary fixed point; never less than an earlier reading.
    var now: Double { get }
}

/// `CLOCK_BOOTTIME`: like the monotonic clock, but it keeps counting through suspend, so a laptop that sleeps
/// past a vault's limit wakes with that vault locked.
public struct BootClock: AgentClock {
    public init() {}

    /// The corresponding C function is `clock_gettime(CLOCK_BOOTTIME)`.
    public var now: Double { Posix.bootTimeSeconds() }
}

/// Zeroed guarded regions a store keeps between writes, so that a write does not map, lock, unlock and unmap
/// a new region each time (a third of the cost of a put on a large vault, Benchmarks/README.md).
struct RegionPool: Sendable {
    /// The zeroed region of the plaintext the last write replaced, for the next write's plaintext.
    var spare: SecureBytes?
    /// The wiped region of the last batch's values, for the next batch.
    private var arena: GuardedArena?

    /// Zeroes a replaced plaintext region and keeps it, when nothing else holds it.
    mutating func keep(_ replaced: consuming SecureBytes?) {
        guard var region = replaced.take(), isKnownUniquelyReferenced(&region) else { return }
        region.wipe()
        spare = region
    }

    /// Wipes a written (or failed) batch's values and keeps their region, unless a copy of the batch holds it.
    mutating func keep(_ values: consuming GuardedArena?) {
        guard var values = values.take(), isKnownUniquelyReferenced(&values) else { return }
        values.wipe()
        arena = values
    }

    /// The kept batch region, or a new one.
    mutating func takeArena() -> GuardedArena {
        arena.take() ?? GuardedArena()
    }
}

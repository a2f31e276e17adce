import VaultSodium
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
/// Secret bytes in libsodium-guarded memory, zeroed and freed when the last reference goes away.
///
/// The region comes from `sodium_malloc`: guard pages around it, a canary before it, `mlock`ed where the
/// limits allow, and excluded from core dumps. The bytes are reachable only inside ``withUnsafeBytes(_:)``;
/// `description` never shows them. Use it for passphrases, keys and decrypted values.
///
/// ``SecureBytes`` is immutable once made; build it with ``init(count:initializer:)`` to write into the
/// guarded region directly without an intermediate copy (or, in this package, with `init(capacity:appending:)`
/// from pieces).
public final class SecureBytes: @unchecked Sendable {
    // The bytes are immutable after init and only read afterwards, so sharing across threads is safe (`regionMoved`
    // changes only on an instance nobody else holds: ``recycling(_:count:slack:initializer:)``).
    private let pointer: UnsafeMutableRawPointer
    /// The number of secret bytes.
    public let count: Int
    /// The size of the guarded region, `count` or more: a region can be recycled for bytes of another size.
    let capacity: Int
    /// Set when the region has moved to another instance (``recycling(_:count:slack:initializer:)``).
    private var regionMoved = false
    /// The instance whose region these bytes lie in, when they are a slice of it (``slice(_:)``): kept alive by
    /// this one, and never freed, wiped or recycled through it.
    private let owner: SecureBytes?

    /// Allocates `count` guarded bytes and lets `initializer` fill them.
    public init<E: Error>(
        count: Int,
        initializer: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        precondition(count >= 0)
        self.count = count
        self.capacity = count
        self.owner = nil
        self.pointer = Sodium.allocate(byteCount: count)
        // If the initializer throws, the instance is already fully initialised, so deinit frees the region.
        try initializer(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    fileprivate init(region pointer: UnsafeMutableRawPointer, count: Int, capacity: Int, owner: SecureBytes? = nil) {
        self.pointer = pointer
        self.count = count
        self.capacity = capacity
        self.owner = owner
    }

    /// Bytes `range` of these as an instance of their own that shares this region: no new guarded region (each is
    /// several kernel mappings, of at most 65,530 a process has), and the region lives while either does. For many
    /// values out of one batch: 100,000 puts as document changes, or the values of a request the agent received.
    package func slice(_ range: Range<Int>) -> SecureBytes {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "a slice past the secret bytes")
        return SecureBytes(region: pointer + range.lowerBound, count: range.count, capacity: range.count, owner: owner ?? self)
    }

    /// `count` bytes filled by `initializer`, in the region of `spare` when it is large enough and nobody else
    /// holds it (`spare` is then emptied), else in a new region with `slack` extra bytes of capacity.
    ///
    /// A new guarded region costs `mmap`, `mprotect` and an `mlock` that faults in every page, and freeing it
    /// `munlock` and `munmap`: for a vault rewritten on every put that was a third of the cost of a put.
    /// A spare is zeroed when it is kept (``wipe()``), so nothing past `count` is left from earlier contents.
    static func recycling<E: Error>(
        _ spare: inout SecureBytes?, count: Int, slack: Int,
        initializer: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) -> SecureBytes {
        precondition(count >= 0)
        let bytes: SecureBytes
        if var region = spare.take(), isKnownUniquelyReferenced(&region), region.owner == nil, region.capacity >= count {
            region.regionMoved = true
            bytes = SecureBytes(region: region.pointer, count: count, capacity: region.capacity)
        } else {
            let capacity = count + slack
            bytes = SecureBytes(region: Sodium.allocate(byteCount: capacity), count: count, capacity: capacity)
        }
        try initializer(UnsafeMutableRawBufferPointer(start: bytes.pointer, count: count))
        return bytes
    }

    /// Zeroes the whole region. Only for an instance nobody else holds (a spare kept for ``recycling``).
    func wipe() {
        precondition(owner == nil, "wiping a slice of another's region")
        Sodium.zero(pointer, byteCount: capacity)
    }

    /// Copies `bytes` into guarded memory. The caller remains responsible for wiping its own copy.
    public convenience init(_ bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { buffer in
            _ = buffer.initializeMemory(as: UInt8.self, from: bytes)
        }
    }

    /// Copies the UTF-8 bytes of `string` into guarded memory.
    ///
    /// Swift strings cannot be wiped: prefer reading secrets as bytes straight into ``SecureBytes``.
    public convenience init(string: String) {
        var string = string
        let count = string.utf8.count
        self.init(count: count) { buffer in
            string.withUTF8 { utf8 in
                if count > 0 { buffer.copyMemory(from: UnsafeRawBufferPointer(utf8)) }
            }
        }
    }

    /// `count` random bytes from the kernel's CSPRNG.
    public static func random(count: Int) -> SecureBytes {
        SecureBytes(count: count) { Sodium.fillRandom($0) }
    }

    deinit {
        // Sodium.free zeroes before unmapping; a slice's region is its owner's to free.
        if !regionMoved && owner == nil { Sodium.free(pointer, byteCount: capacity) }
    }

    /// Calls `body` with the secret bytes. The pointer must not escape the closure.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The bytes as a `String` if they are valid UTF-8.
    ///
    /// This makes an ordinary (unwiped) copy: an API that must return `String` cannot avoid it.
    public var stringValue: String? {
        withUnsafeBytes { buffer in
            String(validating: buffer.bindMemory(to: UInt8.self), as: UTF8.self)
        }
    }

    /// A copy of the bytes as an ordinary (unwiped) array. Avoid where you can.
    public var unprotectedBytes: [UInt8] {
        withUnsafeBytes { Array($0) }
    }
}

extension SecureBytes {
    /// Keeps up to `count` freed small regions, zeroed, for the next allocation of the same size (a long-lived
    /// process that allocates and frees the same sizes all day: the agent; ``VaultSodium/Sodium/keepSpareRegions(_:)``).
    package static func keepSpareRegions(_ count: Int) {
        Sodium.keepSpareRegions(count)
    }

    /// Bytes appended front to back by `build` into a new guarded region of `capacity` bytes: the result holds
    /// what was appended (at most `capacity`: appending more traps). For secrets assembled from pieces (a header
    /// line, an environment block, a value and its newline): no offsets to keep by hand, and a caller that knows
    /// only a bound (words of different lengths) gets the exact bytes without a second region.
    package convenience init<E: Error>(capacity: Int, appending build: (inout Appender) throws(E) -> Void) throws(E) {
        precondition(capacity >= 0)
        let region = Sodium.allocate(byteCount: capacity)
        var appender = Appender(UnsafeMutableRawBufferPointer(start: region, count: capacity))
        do throws(E) {
            try build(&appender)
        } catch {
            Sodium.free(region, byteCount: capacity)
            throw error
        }
        self.init(region: region, count: appender.count, capacity: capacity)
    }

    /// Appends to a guarded region front to back (``init(capacity:appending:)``); it lives only inside `build`.
    package struct Appender: ~Copyable {
        private let region: UnsafeMutableRawBufferPointer
        /// The number of bytes appended so far.
        package private(set) var count = 0

        fileprivate init(_ region: UnsafeMutableRawBufferPointer) {
            self.region = region
        }

        /// Copies `bytes` to the end.
        package mutating func append(_ bytes: UnsafeRawBufferPointer) {
            precondition(bytes.count <= region.count - count, "appending past the capacity of guarded memory")
            if let base = bytes.baseAddress, bytes.count > 0 {
                (region.baseAddress! + count).copyMemory(from: base, byteCount: bytes.count)
            }
            count += bytes.count
        }

        /// Appends one byte.
        package mutating func append(_ byte: UInt8) {
            precondition(count < region.count, "appending past the capacity of guarded memory")
            region[count] = byte
            count += 1
        }

        /// Copies the bytes of `secret` to the end.
        package mutating func append(_ secret: SecureBytes) {
            secret.withUnsafeBytes { append($0) }
        }

        /// Appends the UTF-8 bytes of `text` (not a secret: a name, a separator, a key of a format).
        package mutating func append(_ text: String) {
            for byte in text.utf8 { append(byte) }
        }

        /// Appends `number` in little-endian byte order.
        package mutating func append<T: FixedWidthInteger>(littleEndian number: T) {
            Swift.withUnsafeBytes(of: number.littleEndian) { append($0) }
        }
    }
}

extension SecureBytes: Equatable {
    /// Constant-time comparison (`sodium_memcmp`); different lengths are unequal.
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) } }
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { "SecureBytes(\(count) bytes, redacted)" }
    public var debugDescription: String { description }
}

/// Growable guarded memory that bytes are appended to: the values of a batch of changes.
///
/// One `sodium_malloc` region, replaced by one at least twice as large when full (the old one is zeroed and
/// freed), so a batch of 100,000 values costs a handful of mappings rather than one per value (the kernel
/// refuses more than `vm.max_map_count`, 65,530 by default). Appended bytes never move within the arena, so
/// a range returned by ``append(_:)`` stays valid.
// Unchecked: mutable, with no lock of its own. A batch is filled by one thread; a store keeps a spare one only
// under its own lock. Sendable so that the store's `Mutex` can hold the spare.
final class GuardedArena: @unchecked Sendable {
    private var pointer: UnsafeMutableRawPointer?
    private var capacity = 0
    /// The number of bytes appended.
    private(set) var count = 0
    /// One more each time bytes already appended are removed or zeroed (``removeFirst(_:)``, ``removeLast(_:)``,
    /// ``wipe()``): while it and ``count`` are unchanged, every byte appended is where it was, as it was.
    private(set) var generation = 0

    /// Copies `bytes` to the end and returns where they are.
    func append(_ bytes: UnsafeRawBufferPointer) -> Range<Int> {
        let start = count
        reserve(bytes.count)
        if let base = bytes.baseAddress, bytes.count > 0 {
            (pointer! + start).copyMemory(from: base, byteCount: bytes.count)
        }
        count += bytes.count
        return start..<count
    }

    /// Lets `fill` write up to `byteCount` bytes at the end; keeps as many as it returns (`.success(n)`).
    func append<Failure: Error>(
        upTo byteCount: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Result<Int, Failure>
    ) -> Result<Int, Failure> {
        reserve(byteCount)
        let result = fill(UnsafeMutableRawBufferPointer(start: pointer! + count, count: byteCount))
        if case .success(let n) = result {
            precondition(n >= 0 && n <= byteCount)
            count += n
        }
        return result
    }

    /// Drops the first `n` bytes: the rest moves to the front and the bytes it leaves behind are zeroed.
    func removeFirst(_ n: Int) {
        generation += 1
        precondition(n <= count)
        guard let pointer, n > 0 else { return }
        memmove(pointer, pointer + n, count - n)  // the regions overlap
        Sodium.zero(pointer + count - n, byteCount: n)
        count -= n
    }

    /// Zeroes and drops the last `n` bytes.
    func removeLast(_ n: Int) {
        generation += 1
        precondition(n <= count)
        if let pointer, n > 0 { Sodium.zero(pointer + count - n, byteCount: n) }
        count -= n
    }

    /// Makes room for `byteCount` more bytes in one region (each growth is a new guarded region: an mmap,
    /// mprotect and mlock, and the old one's munlock and munmap).
    func reserve(_ byteCount: Int) {
        guard byteCount > capacity - count else { return }
        let newCapacity = max(count + byteCount, capacity * 2, 4096)
        let grown = Sodium.allocate(byteCount: newCapacity)
        if let pointer {
            grown.copyMemory(from: pointer, byteCount: count)
            Sodium.free(pointer, byteCount: capacity)
        }
        pointer = grown
        capacity = newCapacity
    }

    /// A new arena with the same bytes at the same offsets (so ranges into this one are valid in it), and room for
    /// `extra` more: in `spare` (an empty arena nobody else holds: ``RegionPool``) when its region is large enough,
    /// else in a new region with room for `slack` more bytes besides, so that a later copy fits in it.
    func copy(reserving extra: Int, recycling spare: GuardedArena? = nil, slack: Int = 0) -> GuardedArena {
        let copy = GuardedArena.empty(room: count + extra, recycling: spare, slack: slack)
        if let pointer, count > 0 { copy.pointer!.copyMemory(from: pointer, byteCount: count) }
        copy.count = count
        return copy
    }

    /// An empty arena with room for `byteCount` bytes: `spare` when it is empty and has the room, else a new one
    /// with `slack` more.
    static func empty(room byteCount: Int, recycling spare: GuardedArena?, slack: Int) -> GuardedArena {
        if let spare, spare.count == 0, spare.capacity >= byteCount { return spare }
        let arena = GuardedArena()
        arena.reserve(byteCount + slack)
        return arena
    }

    /// The appended bytes as a ``SecureBytes`` that takes the region over (no copy, no new region); the arena is
    /// empty afterwards.
    fileprivate func handOver() -> SecureBytes {
        guard let region = pointer else { return SecureBytes(count: 0) { _ in } }
        let bytes = SecureBytes(region: region, count: count, capacity: capacity)
        (pointer, capacity, count) = (nil, 0, 0)
        generation += 1
        return bytes
    }

    /// Zeroes the appended bytes and empties the arena, keeping its region.
    func wipe() {
        generation += 1
        if let pointer, count > 0 { Sodium.zero(pointer, byteCount: count) }
        count = 0
    }

    /// Calls `body` with the appended bytes. The pointer must not escape the closure.
    func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    deinit {
        if let pointer { Sodium.free(pointer, byteCount: capacity) }
    }
}

/// Guarded memory that a reader fills from a descriptor, for secrets of unknown length: the bytes go from the
/// kernel straight into guarded memory, and ``secureBytes()`` makes the immutable ``SecureBytes``.
package final class SecretBuffer {
    private let arena = GuardedArena()

    package init() {}

    /// The number of bytes read so far.
    package var count: Int { arena.count }

    /// The last byte, if any.
    package var last: UInt8? {
        arena.withUnsafeBytes { $0.last }
    }

    /// Lets `fill` write up to `byteCount` bytes at the end; keeps as many as it returns.
    package func append<Failure: Error>(
        upTo byteCount: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Result<Int, Failure>
    ) -> Result<Int, Failure> {
        arena.append(upTo: byteCount, fill)
    }

    /// Makes room for `byteCount` more bytes at once, for a writer that knows its size: growing region by region
    /// costs a guarded allocation each time (a 10,000-name list grew six times).
    package func reserve(_ byteCount: Int) {
        arena.reserve(byteCount)
    }

    /// Copies `bytes` to the end (not generic: a writer appends many small fields, and an unspecialised
    /// generic call looks its metadata up each time).
    package func append(_ bytes: UnsafeRawBufferPointer) {
        _ = arena.append(bytes)
    }

    /// Zeroes and drops the last byte.
    package func removeLast() { arena.removeLast(1) }

    /// Drops the first `n` bytes (the rest moves to the front; what it leaves behind is zeroed).
    package func removeFirst(_ n: Int) { arena.removeFirst(n) }

    /// Zeroes every byte and empties the buffer, keeping its region for the next bytes.
    package func wipe() { arena.wipe() }

    /// Calls `body` with the bytes. The pointer must not escape the closure.
    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try arena.withUnsafeBytes(body)
    }

    /// A copy of the bytes (the buffer's own region is zeroed when it is released).
    package func secureBytes() -> SecureBytes {
        arena.withUnsafeBytes { bytes in SecureBytes(count: bytes.count) { $0.copyMemory(from: bytes) } }
    }

    /// The bytes, in the buffer's own region, which the result takes over (no copy; the buffer is empty after).
    package func takeSecureBytes() -> SecureBytes {
        arena.handOver()
    }
}

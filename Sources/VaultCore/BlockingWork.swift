#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `body` on a thread of its own and returns its result to the awaiting task.
///
/// The store blocks (file I/O, `fsync`, waiting for another process's lock, Argon2id): called directly from
/// `async` code it would park one of the few threads of Swift's cooperative pool (two on a 2-core machine)
/// and starve every other task. The thread is made per call (tens of microseconds, nothing next to the work).
public func runBlocking<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        startDetachedThread { continuation.resume(with: Result { try body() }) }
    }
}

/// Starts a detached POSIX thread with a 1 MiB stack that runs `work` once (Foundation's `Thread`, without
/// linking Foundation's internationalisation into every binary that embeds the store).
///
/// The corresponding C functions are `pthread_attr_setstacksize`, `pthread_create` and `pthread_detach`.
package func startDetachedThread(_ work: @escaping @Sendable () -> Void) {
    final class Box: Sendable {
        let work: @Sendable () -> Void
        init(_ work: @escaping @Sendable () -> Void) { self.work = work }
    }
    let box = Unmanaged.passRetained(Box(work))
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, 1 << 20)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let started = pthread_create(&thread, &attributes, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.work()
        return nil
    }, box.toOpaque())
    if started != 0 {
        // No thread to be had (EAGAIN: the process's limit): run the work here rather than never.
        box.takeRetainedValue().work()
    }
}

extension SecureKeyValueStore {
    /// Runs `body` with this store off the cooperative pool (``runBlocking(_:)``): the async face of the
    /// store, for its blocking calls from `async` code.
    ///
    /// ```swift
    /// let user = try await store.perform { try $0.getString("username") }
    /// ```
    public func perform<R: Sendable>(_ body: @escaping @Sendable (SecureKeyValueStore) throws -> R) async throws -> R {
        try await runBlocking { try body(self) }
    }
}

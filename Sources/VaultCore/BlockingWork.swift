import Foundation

/// Runs `body` on a thread of its own and returns its result to the awaiting task.
///
/// The store blocks (file I/O, `fsync`, waiting for another process's lock, Argon2id): called directly from
/// `async` code it would park one of the few threads of Swift's cooperative pool (two on a 2-core machine)
/// and starve every other task. The thread is made per call (tens of microseconds, nothing next to the work).
public func runBlocking<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.stackSize = 1 << 20
        thread.start()
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

import Synchronization
import Foundation
import VaultAuth

/// Told how many bytes of a copy a fetch has read, of how many (the answer's Content-Length; `nil` when it gives
/// none, as OpenBao's chunked answers), after each piece; and at the end of the fetch, however it ended, the count
/// read as its own total (when a body was read): a count with no total is then erased (`vault sync`'s progress on a
/// terminal).
public typealias FetchProgressHook = @Sendable (_ received: Int, _ total: Int?) -> Void

/// One fetch's progress for a ``FetchProgressHook``: the pieces of a 200 answer's body (an error's body is not the
/// copy), then ``end()``.
final class FetchProgress: Sendable {
    let hook: FetchProgressHook?
    private let received = Mutex(0)

    init(_ hook: FetchProgressHook?) { self.hook = hook }

    /// What the HTTP client calls after each piece of the body (`nil` without a hook).
    var pieces: ((HTTPResponse, Int) -> Void)? {
        hook.map { hook in
            { response, count in
                guard response.statusCode == 200 else { return }
                self.received.withLock { $0 = count }
                hook(count, response.headers["Content-Length"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) })
            }
        }
    }

    /// The fetch is over (its body in, or failed): the count so far as its total, when some of a body was read (an
    /// answer with none, a 304 or an error, tells nothing: a later fetch of the same sync is shown afresh).
    func end() {
        let count = received.withLock { $0 }
        if count > 0 { hook?(count, count) }
    }
}

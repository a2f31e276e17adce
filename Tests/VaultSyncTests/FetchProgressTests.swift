import Foundation
import Synchronization
import Testing
import VaultAuthCore
@testable import VaultSync

/// What a store's fetch tells `vault sync`'s progress: the bytes of a 200 answer's body after each piece, of its
/// Content-Length when it gives one; at the end, however the fetch ended, the count read as its own total.
@Suite struct FetchProgressTests {
    final class Reports: Sendable {
        let seen = Mutex<[String]>([])
        var hook: FetchProgressHook { { received, total in self.seen.withLock { $0.append("\(received)/\(total.map(String.init) ?? "?")") } } }
    }

    static let url = URL(string: "http://127.0.0.1:8200/v1/secret/data/team")!

    static func answer(_ status: Int, length: String? = nil) -> HTTPResponse {
        var headers = HTTPHeaderFields()
        if let length { headers.add("Content-Length", length) }
        return HTTPResponse(statusCode: status, url: url, headers: headers)
    }

    @Test func piecesOfAnAnswerThenItsEnd() throws {
        let chunked = Reports()
        let progress = FetchProgress(chunked.hook)
        let pieces = try #require(progress.pieces)
        pieces(Self.answer(200), 4096)
        pieces(Self.answer(200), 9000)
        progress.end()
        #expect(chunked.seen.withLock { $0 } == ["4096/?", "9000/?", "9000/9000"])

        let sized = Reports()
        let known = FetchProgress(sized.hook)
        known.pieces?(Self.answer(200, length: " 6000 "), 6000)
        known.end()
        #expect(sized.seen.withLock { $0 } == ["6000/6000", "6000/6000"])
    }

    /// An error's body is not the copy: not counted, and its end tells nothing (a later fetch is shown afresh).
    @Test func anErrorsBodyIsNotCounted() {
        let reports = Reports()
        let progress = FetchProgress(reports.hook)
        progress.pieces?(Self.answer(404, length: "120"), 120)
        progress.end()
        #expect(reports.seen.withLock { $0 }.isEmpty)
        #expect(FetchProgress(nil).pieces == nil)
    }
}

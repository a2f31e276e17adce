import Foundation
import VaultTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small HTTP server on 127.0.0.1 (VaultTestSupport's `http_test_server.py counting`) that counts requests and
/// records their `Authorization` headers.
///
/// Routes (realm `counting`; users set with ``setPassword(_:for:)``):
/// - `/protected`: 200 `hello` with a valid credential, else 401 with a Basic challenge;
/// - `/forbidden`: 403 with a valid credential, else 401;
/// - `/redirect?to=URL`: 302 to URL;
/// - `/bearer`, `/digest`: 401 with only a Bearer or Digest challenge;
/// - `/_control/...`: the test's own calls, not counted.
final class CountingServer: @unchecked Sendable {
    struct Request: Decodable, Equatable {
        let path: String
        let authorization: String?
    }

    private let python: PythonServer
    var port: Int { python.port }

    /// Starts the server; it stops in ``stop()`` or when the test process's end closes its stdin.
    init() throws {
        python = try PythonServer(.counting)
    }

    func stop() { python.stop() }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    private func control(_ pathAndQuery: String) async throws -> Data {
        var request = URLRequest(url: url("/_control/" + pathAndQuery))
        request.timeoutInterval = 10
        let (data, response) = try await URLSession.shared.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw POSIXError(.EIO) }
        return data
    }

    func setPassword(_ password: String, for user: String) async throws {
        let query = "user=\(user.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
            + "&password=\(password.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
        _ = try await control("set-password?" + query)
    }

    /// Every request so far (control calls excluded), in order.
    func requests() async throws -> [Request] {
        try JSONDecoder().decode([Request].self, from: try await control("log"))
    }
}

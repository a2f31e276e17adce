import Foundation
import VaultTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small HTTP server on 127.0.0.1 (Python's `http.server`, started by the test) that counts requests and
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

    static let script = #"""
import http.server, json, sys, threading, base64, urllib.parse
users = {}
log = []
lock = threading.Lock()
REALM = 'counting'

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def reply(self, status, body=b'', headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def authorized(self):
        value = self.headers.get('Authorization')
        if not value or not value.startswith('Basic '):
            return False
        try:
            user, _, password = base64.b64decode(value[6:]).decode('utf-8').partition(':')
        except Exception:
            return False
        with lock:
            return user in users and users[user] == password
    def challenge(self):
        self.reply(401, b'unauthorized', [('WWW-Authenticate', 'Basic realm="%s", charset="UTF-8"' % REALM)])
    def handle_any(self):
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query)
        if url.path.startswith('/_control/'):
            if url.path == '/_control/log':
                with lock:
                    body = json.dumps(log).encode()
                return self.reply(200, body)
            if url.path == '/_control/set-password':
                with lock:
                    users[query['user'][0]] = query['password'][0]
                return self.reply(200)
            return self.reply(404)
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        with lock:
            log.append({'path': url.path, 'authorization': self.headers.get('Authorization')})
        if url.path == '/protected':
            return self.reply(200, b'hello') if self.authorized() else self.challenge()
        if url.path == '/forbidden':
            return self.reply(403, b'forbidden') if self.authorized() else self.challenge()
        if url.path == '/redirect':
            return self.reply(302, b'', [('Location', query['to'][0])])
        if url.path == '/digest':
            return self.reply(401, b'digest only', [('WWW-Authenticate', 'Digest realm="d", nonce="abc", qop="auth"')])
        if url.path == '/bearer':
            return self.reply(401, b'bearer only', [('WWW-Authenticate', 'Bearer realm="api"')])
        return self.reply(404, b'not found')
    do_GET = handle_any
    do_POST = handle_any
    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
print('PORT', server.server_address[1], flush=True)
threading.Thread(target=lambda: (sys.stdin.read(), server.shutdown()), daemon=True).start()
server.serve_forever()
"""#

    private let python: PythonServer
    var port: Int { python.port }

    /// Starts the server; it stops in ``stop()`` or when the test process's end closes its stdin.
    init() throws {
        python = try PythonServer(script: Self.script)
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

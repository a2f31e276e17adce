import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import VaultTestSupport

/// `vault device ...` and `DemoApp` end to end, against the built `mobile-services-emulator` on loopback.
/// Every process runs with `setsid` (no terminal): nothing can prompt.
@Suite(.processTimeLimit) struct DeviceCLITests {
    static let appId = "com.example.demo"
    static let password = "s3cret:with-colon"

    static let agenciesTable = """
        AGENCY    NAME                  CITY       COUNTRY  TELEPHONE
        00000055  Fly High              Berlin     DE       +49 30 8812345
        00000061  Happy Hopping         Berlin     DE       +49 30 4066190
        00000087  Pink Panther          Frankfurt  DE       +49 69 4123454
        00000093  Your Choice           Nuernberg  DE       +49 911 3312347
        00000099  Travel from Walldorf  Walldorf   DE       +49 6227 2938

        """

    /// A sandbox with an initialised vault and a password file for `alice`.
    static func makeBox(password: String = DeviceCLITests.password) throws -> (Sandbox, String) {
        let box = try Sandbox()
        try box.initVault()
        let passwordFile = box.directory + "/password"
        try box.write(password + "\n", to: passwordFile)
        return (box, passwordFile)
    }

    static func register(_ box: Sandbox, _ emulator: EmulatorProcess, passwordFile: String, flags: Bool = true) throws -> CLIResult {
        var arguments = ["device", "register", "--username", "alice", "--password-file", passwordFile, "--allow-insecure-http"]
        if flags { arguments += ["--server", emulator.server, "--app-id", appId] }
        return try box.vault(arguments)
    }

    static func demoApp(_ box: Sandbox, _ arguments: [String]) throws -> CLIResult {
        try CLI.exec(
            CLI.binDirectory.appendingPathComponent("DemoApp").path,
            arguments + ["--passphrase-file", box.passphraseFile, "--allow-insecure-http"],
            environment: box.environment)
    }

    static func keys(_ box: Sandbox) throws -> [String] {
        let list = try box.vault(["list"])
        #expect(list.status == 0)
        return list.stdoutText.split(separator: "\n").map(String.init)
    }

    static func vaultBytes(_ box: Sandbox) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: box.vaultPath))
    }

    @Test func registerThenStatusThenTheDemoAppListsTheAgencies() async throws {
        let (box, passwordFile) = try Self.makeBox()
        let emulator = try EmulatorProcess(directory: box.directory)
        defer { emulator.stop() }

        let registered = try Self.register(box, emulator, passwordFile: passwordFile)
        #expect(registered.status == 0)
        #expect(registered.stdoutText == "registered with \(emulator.server) (application \(Self.appId)) as alice\n")
        #expect(registered.stderr == "")
        let space = "credential/\(emulator.server)/mobile-services/"
        #expect(try Self.keys(box) == [
            "appcid", space + "password", space + "username", "credential/primary", "mobileservices.appid",
            "mobileservices.server",
        ])
        #expect(try box.vault(["get", space + "username"]).stdoutText == "alice")
        #expect(try box.vault(["get", "mobileservices.server"]).stdoutText == emulator.server)
        let appcid = try box.vault(["get", "appcid"]).stdoutText
        #expect(try await emulator.connectionIds() == [appcid])

        try await emulator.resetStats()
        let status = try box.vault(["device", "status", "--allow-insecure-http"])
        #expect(status.status == 0)
        #expect(status.stdoutText == "registered with \(emulator.server) (application \(Self.appId))\n")
        #expect(status.stderr == "")
        let json = try box.vault(["device", "status", "--allow-insecure-http", "--json"])
        #expect(json.status == 0)
        #expect(json.stdoutText == #"{"application_id":"com.example.demo","registered":true,"server":"\#(emulator.server)"}"# + "\n")
        #expect(try await emulator.stats() == ["serviceRoot": ["200": 2]])

        try await emulator.resetStats()
        let demo = try Self.demoApp(box, [])
        #expect(demo.status == 0, "\(demo.stderr)")
        #expect(demo.stdoutText == Self.agenciesTable)
        #expect(demo.stderr == "registration with \(emulator.server) verified\n")
        #expect(try await emulator.stats() == ["serviceRoot": ["200": 1], "travelAgencies": ["200": 1]])
        for output in [registered.stdoutText, registered.stderr, status.stderr, demo.stdoutText, demo.stderr] {
            #expect(!output.contains(Self.password))
        }
    }

    @Test func demoAppTwiceTheSecondRunAsksNothingAndChecksOnce() async throws {
        let box = try Sandbox()  // no vault yet: the DemoApp creates it, as the tutorials' app does
        let passwordFile = box.directory + "/password"
        try box.write(Self.password + "\n", to: passwordFile)
        let emulator = try EmulatorProcess(directory: box.directory)
        defer { emulator.stop() }

        let first = try Self.demoApp(box, [
            "--server", emulator.server, "--app-id", Self.appId, "--username", "alice", "--password-file", passwordFile,
        ])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdoutText == Self.agenciesTable)
        #expect(first.stderr == "created vault '\(box.vaultPath)'\nregistered with \(emulator.server) (application \(Self.appId))\n")

        try await emulator.resetStats()
        let second = try Self.demoApp(box, [])  // no flags, no terminal (setsid)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdoutText == Self.agenciesTable)
        #expect(second.stderr == "registration with \(emulator.server) verified\n")
        #expect(try await emulator.stats() == ["serviceRoot": ["200": 1], "travelAgencies": ["200": 1]])
    }

    @Test func demoAppWithoutCredentialsAndWithoutTerminalFailsAtOnce() async throws {
        let box = try Sandbox()
        try box.initVault()
        let emulator = try EmulatorProcess(directory: box.directory)
        defer { emulator.stop() }
        let before = try Self.vaultBytes(box)
        let result = try Self.demoApp(box, ["--server", emulator.server, "--app-id", Self.appId])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == """
            DemoApp: cannot ask for credentials for \(emulator.server) (realm "mobile-services"): cannot open terminal '/dev/tty': No such device or address
            hint: pass --username NAME with --password-fd N or --password-file PATH, or run on a terminal

            """)
        #expect(try Self.vaultBytes(box) == before)
    }

    @Test func removedRegistrationIsPurgedThenRegisteredAgain() async throws {
        let (box, passwordFile) = try Self.makeBox()
        let emulator = try EmulatorProcess(directory: box.directory)
        defer { emulator.stop() }
        #expect(try Self.register(box, emulator, passwordFile: passwordFile).status == 0)
        let oldAppcid = try box.vault(["get", "appcid"]).stdoutText

        #expect(try await emulator.deleteConnection(oldAppcid) == 204)  // the administrator
        let status = try box.vault(["device", "status", "--allow-insecure-http"])
        #expect(status.status == 2)
        #expect(status.stdout.isEmpty)
        #expect(status.stderr == """
            vault: the registration with '\(emulator.server)' for application '\(Self.appId)' was removed on the server (HTTP 404); appcid, username and password were deleted from the vault
            hint: register again with 'vault device register'

            """)
        #expect(try Self.keys(box) == ["mobileservices.appid", "mobileservices.server"])

        // The server and app id are remembered: no --server/--app-id needed.
        let again = try Self.register(box, emulator, passwordFile: passwordFile, flags: false)
        #expect(again.status == 0, "\(again.stderr)")
        let newAppcid = try box.vault(["get", "appcid"]).stdoutText
        #expect(newAppcid != oldAppcid)
        #expect(try await emulator.connectionIds() == [newAppcid])

        // And through the DemoApp: 404 on start, purge, register again, list.
        #expect(try await emulator.deleteConnection(newAppcid) == 204)
        try await emulator.resetStats()
        let demo = try Self.demoApp(box, ["--username", "alice", "--password-file", passwordFile])
        #expect(demo.status == 0, "\(demo.stderr)")
        #expect(demo.stdoutText == Self.agenciesTable)
        #expect(demo.stderr == "the registration was removed on the server; registered again with \(emulator.server)\n")
        #expect(try await emulator.stats() == [
            "serviceRoot": ["404": 1], "connections.create": ["401": 1, "201": 1], "travelAgencies": ["200": 1],
        ])
    }

    /// Issue 11, item 19 and issue 25 §4: the user's own `username` and `password` are never overwritten, adopted
    /// or purged by registration: the credential lives under `credential/…`, so registering leaves them as they are
    /// (and never sends them). An `appcid` of the user's own is refused before any request (exit 7), and the
    /// server holds no registration the vault could not record.
    @Test func registrationNeverOverwritesTheUsersOwnEntries() async throws {
        let (box, passwordFile) = try Self.makeBox()
        let emulator = try EmulatorProcess(directory: box.directory)
        defer { emulator.stop() }
        #expect(try box.vault(["put", "username"], stdin: Data("my-own-name".utf8)).status == 0)
        #expect(try box.vault(["put", "password"], stdin: Data("my-own-password".utf8)).status == 0)
        let registered = try Self.register(box, emulator, passwordFile: passwordFile)
        #expect(registered.status == 0, "\(registered.stderr)")
        #expect(try box.vault(["get", "username"]).stdoutText == "my-own-name")
        #expect(try box.vault(["get", "password"]).stdoutText == "my-own-password")
        #expect(try box.vault(["get", "credential/\(emulator.server)/mobile-services/username"]).stdoutText == "alice")
        #expect(try box.vault(["device", "status", "--allow-insecure-http"]).status == 0)

        // An `appcid` of the user's own (no `mobileservices.server` next to it) is refused the same way.
        let (other, otherPasswordFile) = try Self.makeBox()
        #expect(try other.vault(["put", "appcid"], stdin: Data("mine".utf8)).status == 0)
        let appcid = try Self.register(other, emulator, passwordFile: otherPasswordFile)
        #expect(appcid.status == 7 && appcid.stderr.hasPrefix("vault: the vault already has entries 'appcid' that no credential or registration"), "\(appcid.stderr)")
        #expect(try other.vault(["get", "appcid"]).stdoutText == "mine")
    }

    @Test func wrongPasswordExitsThreeAndStoresNothing() async throws {
        let (box, passwordFile) = try Self.makeBox(password: "wrong-password")
        let emulator = try EmulatorProcess(directory: box.directory)
        defer { emulator.stop() }
        let before = try Self.vaultBytes(box)
        let result = try Self.register(box, emulator, passwordFile: passwordFile)
        #expect(result.status == 3)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == """
            vault: credentials rejected: the server at \(emulator.server) (realm "mobile-services") rejected the password for 'alice'

            """)
        #expect(!result.stderr.contains("wrong-password"))
        #expect(try Self.vaultBytes(box) == before)
        #expect(try Self.keys(box) == [])
        #expect(try await emulator.connectionIds() == [])

        let json = try box.vault([
            "device", "register", "--server", emulator.server, "--app-id", Self.appId, "--username", "alice",
            "--password-file", passwordFile, "--allow-insecure-http", "--json",
        ])
        #expect(json.status == 3)
        #expect(json.stderr.hasPrefix(#"{"error":{"code":"credentials_rejected","exit_code":3,"#))
        #expect(try Self.vaultBytes(box) == before)
    }

    @Test func serverDownIsAClearErrorAndTheVaultIsByteIdentical() async throws {
        let (box, passwordFile) = try Self.makeBox()
        // Registered first, then the server goes away.
        let emulator = try EmulatorProcess(directory: box.directory)
        #expect(try Self.register(box, emulator, passwordFile: passwordFile).status == 0)
        let server = emulator.server
        emulator.stop()

        let before = try Self.vaultBytes(box)
        let status = try box.vault(["device", "status", "--allow-insecure-http"])
        #expect(status.status == 1)
        #expect(status.stderr.hasPrefix("vault: cannot reach the mobile-services server at '\(server)/\(Self.appId)': "))
        #expect(status.stderr.hasSuffix("\nhint: check the URL and that the server is running; nothing was changed\n"))
        let demo = try Self.demoApp(box, [])
        #expect(demo.status == 1)
        #expect(demo.stderr.hasPrefix("DemoApp: cannot reach the mobile-services server at '\(server)/\(Self.appId)': "))
        #expect(try Self.vaultBytes(box) == before)
        #expect(try Self.keys(box).contains("appcid"))

        // Registering against a dead server: nothing stored either.
        let (fresh, freshPassword) = try Self.makeBox()
        let freshBefore = try Self.vaultBytes(fresh)
        let register = try fresh.vault([
            "device", "register", "--server", server, "--app-id", Self.appId, "--username", "alice",
            "--password-file", freshPassword, "--allow-insecure-http",
        ])
        #expect(register.status == 1)
        #expect(register.stderr.hasPrefix(
            "vault: cannot reach the mobile-services server at '\(server)/odata/applications/latest/\(Self.appId)/Connections': "))
        #expect(try Self.vaultBytes(fresh) == freshBefore)
    }

    @Test func malformedCreatedBodyIsAnErrorAndNothingIsStored() async throws {
        let (box, passwordFile) = try Self.makeBox()
        let server = try MalformedRegistrationServer(body: #"{"d":{"ApplicationConnectionId":null}}"#)
        defer { server.stop() }
        let before = try Self.vaultBytes(box)
        let result = try box.vault([
            "device", "register", "--server", server.server, "--app-id", Self.appId, "--username", "alice",
            "--password-file", passwordFile, "--allow-insecure-http",
        ])
        #expect(result.status == 1)
        #expect(result.stderr == """
            vault: registration failed: '\(server.server)/odata/applications/latest/\(Self.appId)/Connections' answered HTTP 201 with an unreadable body: no string 'd.ApplicationConnectionId'

            """)
        #expect(try Self.vaultBytes(box) == before)
        #expect(try Self.keys(box) == [])
    }

    @Test func notRegisteredExitsTwoAndUnregisterRemovesTheAppcid() async throws {
        let (box, passwordFile) = try Self.makeBox()
        let emulator = try EmulatorProcess(directory: box.directory)
        defer { emulator.stop() }

        let unconfigured = try box.vault(["device", "status"])
        #expect(unconfigured.status == 1)
        #expect(unconfigured.stderr.hasPrefix("vault: no mobile-services server is configured\n"))

        #expect(try Self.register(box, emulator, passwordFile: passwordFile).status == 0)
        let twice = try Self.register(box, emulator, passwordFile: passwordFile)
        #expect(twice.status == 1)
        #expect(twice.stderr.hasPrefix("vault: this vault already holds a registration with '\(emulator.server)'"))

        let unregister = try box.vault(["device", "unregister", "--allow-insecure-http"])
        #expect(unregister.status == 0, "\(unregister.stderr)")
        #expect(unregister.stdoutText == "unregistered from \(emulator.server)\n")
        #expect(try await emulator.connectionIds() == [])
        let space = "credential/\(emulator.server)/mobile-services/"
        #expect(try Self.keys(box) == [
            space + "password", space + "username", "credential/primary", "mobileservices.appid",
            "mobileservices.server",
        ])

        let status = try box.vault(["device", "status", "--allow-insecure-http", "--json"])
        #expect(status.status == 2)
        #expect(status.stderr.hasPrefix(#"{"error":{"code":"not_registered","exit_code":2,"#))
        let again = try box.vault(["device", "unregister", "--allow-insecure-http"])
        #expect(again.status == 2)
    }

    @Test func helpListsTheDeviceExitCodes() throws {
        let help = try CLI.run(["device", "--help"])
        #expect(help.status == 0)
        #expect(help.stdoutText.contains("2   not registered"))
        let top = try CLI.run(["--help"])
        #expect(top.stdoutText.contains("device"))
    }
}

/// The built `mobile-services-emulator` on a free loopback port, with users `alice` and `bob`.
final class EmulatorProcess: @unchecked Sendable {
    private let process = Process()
    let port: Int

    init(directory: String) throws {
        let usersFile = directory + "/users.txt"
        FileManager.default.createFile(
            atPath: usersFile, contents: Data("alice:\(DeviceCLITests.password)\nbob:hunter2\n".utf8),
            attributes: [.posixPermissions: 0o600])
        let binary = CLI.binDirectory.appendingPathComponent("mobile-services-emulator").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: binary])
        }
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--port", "0", "--app-id", DeviceCLITests.appId, "--users-file", usersFile]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // A server that never says it listens must not hang the test.
        let pid = process.processIdentifier
        let killer = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: killer)
        defer { killer.cancel() }
        var line = Data()
        while true {  // "listening on http://127.0.0.1:PORT"; EOF ends the read too
            let byte = stdout.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("listening on http://127.0.0.1:"), let port = text.split(separator: ":").last.flatMap({ Int($0) })
        else {
            kill(pid, SIGKILL)
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "emulator did not start: \(text)"])
        }
        self.port = port
    }

    deinit { stop() }

    var server: String { "http://127.0.0.1:\(port)" }

    /// SIGTERM, then SIGKILL if it has not exited within 10 s.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitForExit()
    }

    private func admin(_ method: String, _ path: String) async throws -> (Data, Int) {
        var request = URLRequest(url: URL(string: server + path)!)
        request.httpMethod = method
        request.timeoutInterval = 10
        let (data, response) = try await URLSession.shared.data(for: request)
        return (data, (response as? HTTPURLResponse)?.statusCode ?? 0)
    }

    /// The request counters, without the administrator routes: route → status → count.
    func stats() async throws -> [String: [String: Int]] {
        struct Stats: Decodable { let routes: [String: [String: Int]] }
        let (data, status) = try await admin("GET", "/admin/stats")
        #expect(status == 200)
        return try JSONDecoder().decode(Stats.self, from: data).routes.filter { !$0.key.hasPrefix("admin.") }
    }

    func resetStats() async throws {
        #expect(try await admin("DELETE", "/admin/stats").1 == 204)
    }

    /// Deletes a registration as an administrator would; the status.
    func deleteConnection(_ appcid: String) async throws -> Int {
        try await admin("DELETE", "/admin/connections/\(appcid)").1
    }

    func connectionIds() async throws -> [String] {
        struct List: Decodable {
            struct Connection: Decodable { let ApplicationConnectionId: String }
            let connections: [Connection]
        }
        let (data, status) = try await admin("GET", "/admin/connections")
        #expect(status == 200)
        return try JSONDecoder().decode(List.self, from: data).connections.map(\.ApplicationConnectionId)
    }
}

/// Python's `http.server` answering every request without `Authorization` with a Basic challenge and every
/// other one with `201` and a fixed (malformed) body.
final class MalformedRegistrationServer: @unchecked Sendable {
    private let python: PythonServer
    var port: Int { python.port }

    init(body: String) throws {
        python = try PythonServer(.scripted(status: 201, body: Data(body.utf8)))
    }

    var server: String { python.origin }

    func stop() { python.stop() }
}

import Foundation
import MobileServicesEmulator
import Testing

@Suite("Users file and configuration")
struct ConfigurationTests {
    @Test("comments, blank lines, CRLF and colons in passwords")
    func parsesUsers() throws {
        let text = "# users\n\nalice:s3cret:with-colon\r\n   # indented comment\n\t\nbob:hunter2\ncarol: spaced pass \n"
        let users = try UsersFile.parse(text)
        #expect(users == ["alice": "s3cret:with-colon", "bob": "hunter2", "carol": " spaced pass "])
    }

    @Test(
        "malformed lines name their line number and never the password",
        arguments: [
            ("alice:pw\nbogus line\n", 2, UsersFileError.Reason.missingSeparator),
            ("# c\n:pw\n", 2, .emptyUserName),
            ("alice:\n", 1, .emptyPassword),
            ("\n\nal ice:pw\n", 3, .invalidUserName),
            (" alice:pw\n", 1, .invalidUserName),
            ("alice:pw\nbob:x\nalice:other\n", 3, .duplicateUser("alice")),
        ])
    func malformedLine(text: String, line: Int, reason: UsersFileError.Reason) {
        #expect {
            try UsersFile.parse(text)
        } throws: { error in
            guard let error = error as? UsersFileError else { return false }
            return error.lineNumber == line && error.reason == reason
                && error.description.contains("line \(line)") && !error.description.contains("pw")
        }
    }

    @Test("a file without users is an error", arguments: ["", "# only comments\n\n", "\r\n"])
    func noUsers(text: String) {
        #expect(throws: UsersFileError(lineNumber: nil, reason: .noUsers)) { try UsersFile.parse(text) }
    }

    @Test("load reads a file and reports an unreadable path")
    func load() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("emu-users-\(UUID().uuidString).txt")
        try "bob:hunter2\n".write(to: url, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(try UsersFile.load(path: url.path) == ["bob": "hunter2"])
        #expect(throws: UsersFileError(lineNumber: nil, reason: .unreadable("/nonexistent/users.txt"))) {
            try UsersFile.load(path: "/nonexistent/users.txt")
        }
    }

    @Test("configuration validation")
    func configuration() throws {
        let ok = try EmulatorConfiguration(appId: "com.sap.tutorial.demoapp", users: ["u": "p"])
        #expect(ok.maxBodySize == 64 * 1024)
        #expect(ok.adminToken == nil)
        for bad in ["", "admin", "odata", "a/b", "a b", ".hidden", "com.example.demo?x", String(repeating: "a", count: 201)] {
            #expect(throws: EmulatorConfigurationError.invalidAppId(bad)) { try EmulatorConfiguration(appId: bad, users: ["u": "p"]) }
        }
        #expect(throws: EmulatorConfigurationError.noUsers) { try EmulatorConfiguration(appId: "a", users: [:]) }
        #expect(throws: EmulatorConfigurationError.invalidUserName("a:b")) { try EmulatorConfiguration(appId: "a", users: ["a:b": "p"]) }
        #expect(throws: EmulatorConfigurationError.emptyPassword(user: "u")) { try EmulatorConfiguration(appId: "a", users: ["u": ""]) }
        #expect(throws: EmulatorConfigurationError.invalidAdminToken) { try EmulatorConfiguration(appId: "a", users: ["u": "p"], adminToken: "") }
        #expect(throws: EmulatorConfigurationError.invalidAdminToken) { try EmulatorConfiguration(appId: "a", users: ["u": "p"], adminToken: "a b") }
        #expect(throws: EmulatorConfigurationError.invalidMaxBodySize(0)) { try EmulatorConfiguration(appId: "a", users: ["u": "p"], maxBodySize: 0) }
    }

    @Test("one loopback rule for the admin API's peers and the executable's --host")
    func loopbackHosts() {
        for host in ["localhost", "127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            #expect(isLoopbackHost(host), "\(host)")
        }
        for host in ["0.0.0.0", "10.0.0.1", "::", "::ffff:10.0.0.1", "localhost.example.com", "128.0.0.1", ""] {
            #expect(!isLoopbackHost(host), "\(host)")
        }
    }
}

import Foundation

/// What one emulator instance serves: one application id, a fixed set of users, and how the administrator API is
/// protected.
///
/// The initializer validates everything, so a value of this type is always usable.
public struct EmulatorConfiguration: Sendable {
    /// The application id, e.g. `com.example.demo`. It appears in
    /// `/odata/applications/latest/{appId}/Connections` and in the service root `/{appId}`.
    public let appId: String
    /// user name → password. Compared in constant time (per byte of the longer of the two passwords).
    public let users: [String: String]
    /// When set, every `/admin/...` request must carry `Authorization: Bearer <adminToken>`.
    /// When `nil`, the administrator API needs no token but is refused (403) to any peer that is not on loopback.
    public let adminToken: String?
    /// Largest request body accepted, in bytes; larger bodies get `413 Content Too Large`.
    public let maxBodySize: Int

    /// The default body limit, 64 KiB.
    public static let defaultMaxBodySize = 64 * 1024

    public init(
        appId: String,
        users: [String: String],
        adminToken: String? = nil,
        maxBodySize: Int = EmulatorConfiguration.defaultMaxBodySize
    ) throws(EmulatorConfigurationError) {
        guard Self.isValidAppId(appId) else { throw .invalidAppId(appId) }
        guard !users.isEmpty else { throw .noUsers }
        for (name, password) in users {
            guard UsersFile.isValidUserName(name) else { throw .invalidUserName(name) }
            guard !password.isEmpty else { throw .emptyPassword(user: name) }
        }
        if let adminToken {
            guard !adminToken.isEmpty, adminToken.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
            else { throw .invalidAdminToken }
        }
        guard maxBodySize > 0 else { throw .invalidMaxBodySize(maxBodySize) }
        self.appId = appId
        self.users = users
        self.adminToken = adminToken
        self.maxBodySize = maxBodySize
    }

    /// 1 to 200 characters of `A-Z a-z 0-9 . _ -`, not starting with a dot, and neither `admin` nor `odata`
    /// (those first path segments belong to other routes).
    public static func isValidAppId(_ appId: String) -> Bool {
        guard (1...200).contains(appId.utf8.count), !appId.hasPrefix("."), appId != "admin", appId != "odata" else {
            return false
        }
        return appId.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9", ".", "_", "-": true
            default: false
            }
        }
    }
}

/// Why an ``EmulatorConfiguration`` was refused. Never carries a password.
public enum EmulatorConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidAppId(String)
    case noUsers
    case invalidUserName(String)
    case emptyPassword(user: String)
    case invalidAdminToken
    case invalidMaxBodySize(Int)

    public var description: String {
        switch self {
        case .invalidAppId(let appId):
            "invalid application id \"\(appId)\": use 1-200 characters of A-Z a-z 0-9 . _ - (not \"admin\" or \"odata\")"
        case .noUsers: "no users configured"
        case .invalidUserName(let name): "invalid user name \"\(name)\": it must be non-empty, without ':', spaces or control characters"
        case .emptyPassword(let user): "user \"\(user)\" has an empty password"
        case .invalidAdminToken: "the admin token must be non-empty printable ASCII without spaces"
        case .invalidMaxBodySize(let size): "invalid maximum body size \(size)"
        }
    }
}

/// The users file of the emulator: one `user:password` per line.
///
/// - Blank lines and lines whose first non-blank character is `#` are ignored.
/// - A line is split at its **first** colon, so a password may contain `:`; a user name may not.
/// - The password is taken verbatim (spaces included); only a trailing `\r` (CRLF files) is removed.
/// - A malformed line, a duplicate user, or a file without users is an error naming the line number.
///   Error messages never repeat the line's content, so no password can leak into a log.
public enum UsersFile {
    public static func parse(_ text: String) throws(UsersFileError) -> [String: String] {
        var users: [String: String] = [:]
        var lineNumber = 0
        // "\r\n" is one Character in Swift, so it is a separator of its own.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            lineNumber += 1
            var line = Substring(rawLine)
            if line.hasSuffix("\r") { line = line.dropLast() }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":") else {
                throw UsersFileError(lineNumber: lineNumber, reason: .missingSeparator)
            }
            let name = String(line[..<colon])
            let password = String(line[line.index(after: colon)...])
            guard !name.isEmpty else { throw UsersFileError(lineNumber: lineNumber, reason: .emptyUserName) }
            guard isValidUserName(name) else { throw UsersFileError(lineNumber: lineNumber, reason: .invalidUserName) }
            guard !password.isEmpty else { throw UsersFileError(lineNumber: lineNumber, reason: .emptyPassword) }
            guard users[name] == nil else {
                throw UsersFileError(lineNumber: lineNumber, reason: .duplicateUser(name))
            }
            users[name] = password
        }
        guard !users.isEmpty else { throw UsersFileError(lineNumber: nil, reason: .noUsers) }
        return users
    }

    /// Reads and parses a users file.
    public static func load(path: String) throws(UsersFileError) -> [String: String] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw UsersFileError(lineNumber: nil, reason: .unreadable(path))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw UsersFileError(lineNumber: nil, reason: .notUTF8)
        }
        return try parse(text)
    }

    /// Non-empty, no `:`, no whitespace and no control characters.
    public static func isValidUserName(_ name: String) -> Bool {
        !name.isEmpty
            && name.unicodeScalars.allSatisfy { scalar in
                scalar != ":" && !scalar.properties.isWhitespace && scalar.value >= 0x20 && scalar.value != 0x7F
            }
    }
}

/// A users file that cannot be used. `description` names the line; it never contains a password.
public struct UsersFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: Equatable, Sendable {
        case missingSeparator
        case emptyUserName
        case invalidUserName
        case emptyPassword
        case duplicateUser(String)
        case noUsers
        case unreadable(String)
        case notUTF8
    }

    /// 1-based line number, `nil` for errors about the whole file.
    public let lineNumber: Int?
    public let reason: Reason

    public init(lineNumber: Int?, reason: Reason) {
        self.lineNumber = lineNumber
        self.reason = reason
    }

    public var description: String {
        let what: String =
            switch reason {
            case .missingSeparator: "expected user:password (no ':' found)"
            case .emptyUserName: "empty user name before ':'"
            case .invalidUserName: "invalid user name (no spaces or control characters allowed)"
            case .emptyPassword: "empty password after ':'"
            case .duplicateUser(let name): "user \"\(name)\" is listed more than once"
            case .noUsers: "no users (expected lines of user:password)"
            case .unreadable(let path): "cannot read \(path)"
            case .notUTF8: "the file is not UTF-8 text"
            }
        if let lineNumber {
            return "users file, line \(lineNumber): \(what)"
        }
        return "users file: \(what)"
    }
}

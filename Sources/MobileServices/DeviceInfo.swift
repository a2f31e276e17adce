import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the registration tells the server about this device: the body of the Connections `POST`.
///
/// The tutorials fill it from `UIDevice` (model, system name and version, device name); on Linux the same three
/// come from the host: ``current()``.
public struct DeviceInfo: Sendable, Equatable, Codable {
    /// `DeviceType`: the machine type, e.g. `x86_64` (`uname -m`). The server requires it non-empty.
    public var deviceType: String
    /// `DeviceModel`: the operating system's name and version, e.g. `Ubuntu 24.04` (`/etc/os-release`).
    public var deviceModel: String
    /// `UserName`: the device's name, `user@host`. (The server records the authenticated user, not this.)
    public var userName: String

    public init(deviceType: String, deviceModel: String, userName: String) {
        self.deviceType = deviceType
        self.deviceModel = deviceModel
        self.userName = userName
    }

    enum CodingKeys: String, CodingKey {
        case deviceType = "DeviceType"
        case deviceModel = "DeviceModel"
        case userName = "UserName"
    }

    /// This host: `uname` machine, `NAME VERSION_ID` from `/etc/os-release` (else `/usr/lib/os-release`, else
    /// `uname` sysname and release), and `user@host` (effective user's login name, `gethostname`).
    public static func current() -> DeviceInfo {
        var names = utsname()
        _ = uname(&names)
        let machine = Self.string(from: &names.machine)
        let sysname = Self.string(from: &names.sysname)
        let release = Self.string(from: &names.release)

        var model = "\(sysname) \(release)"
        for path in ["/etc/os-release", "/usr/lib/os-release"] {
            if let text = try? String(contentsOfFile: path, encoding: .utf8),
               let described = Self.describeOSRelease(text) {
                model = described
                break
            }
        }

        var user = ProcessInfo.processInfo.environment["USER"] ?? ""
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name {
            user = String(cString: name)
        }
        if user.isEmpty { user = "uid\(geteuid())" }
        var host = [CChar](repeating: 0, count: 256)
        let hostName = gethostname(&host, host.count - 1) == 0
            ? String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "localhost"

        return DeviceInfo(
            deviceType: machine.isEmpty ? "unknown" : machine, deviceModel: model, userName: "\(user)@\(hostName)")
    }

    /// `NAME VERSION_ID` from the text of an os-release file (e.g. `Debian GNU/Linux 12`), `NAME` alone when there
    /// is no `VERSION_ID`, `PRETTY_NAME` when there is no `NAME`; `nil` when none is present.
    ///
    /// Values may be double- or single-quoted, with backslash escapes inside double quotes (os-release(5)).
    public static func describeOSRelease(_ text: String) -> String? {
        var fields: [String: String] = [:]
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            guard !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals])
            var value = Substring(line[line.index(after: equals)...])
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = value.dropFirst().dropLast()
                if first == "\"" {
                    var unescaped = ""
                    var escaping = false
                    for character in value {
                        if escaping { unescaped.append(character); escaping = false }
                        else if character == "\\" { escaping = true }
                        else { unescaped.append(character) }
                    }
                    fields[key] = unescaped
                    continue
                }
            }
            fields[key] = String(value)
        }
        if let name = fields["NAME"], !name.isEmpty {
            if let version = fields["VERSION_ID"], !version.isEmpty { return "\(name) \(version)" }
            return name
        }
        if let pretty = fields["PRETTY_NAME"], !pretty.isEmpty { return pretty }
        return nil
    }

    private static func string<T>(from tuple: inout T) -> String {
        withUnsafeBytes(of: &tuple) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}

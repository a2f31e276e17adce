import Foundation

/// The path shapes the emulator knows, and the parsing of a raw path into them.
extension EmulatorResponder {
    enum Target {
        case connections(appId: String)
        case connection(appId: String, key: String?)  // nil: malformed key predicate
        case serviceRoot(appId: String)
        case travelAgencies(appId: String)
        case adminConnections
        case adminConnection(String)
        case adminStats
        case unknown
    }

    static func target(of segments: [String]) -> Target {
        switch segments.count {
        case 1:
            return .serviceRoot(appId: segments[0])
        case 2 where segments[0] == "admin" && segments[1] == "connections":
            return .adminConnections
        case 2 where segments[0] == "admin" && segments[1] == "stats":
            return .adminStats
        case 2 where segments[1].isEmpty:
            return .serviceRoot(appId: segments[0])
        case 2 where segments[1] == "TravelAgencies":
            return .travelAgencies(appId: segments[0])
        case 3 where segments[0] == "admin" && segments[1] == "connections" && !segments[2].isEmpty:
            return .adminConnection(segments[2])
        case 5 where segments[0] == "odata" && segments[1] == "applications" && segments[2] == "latest":
            let last = segments[4]
            if last == "Connections" { return .connections(appId: segments[3]) }
            if last.hasPrefix("Connections(") {
                return .connection(appId: segments[3], key: parseKey(last.dropFirst("Connections(".count)))
            }
            return .unknown
        default:
            return .unknown
        }
    }

    /// `'abc')` → `abc`; anything else → nil.
    static func parseKey(_ rest: Substring) -> String? {
        guard rest.count >= 3, rest.hasPrefix("'"), rest.hasSuffix("')") else { return nil }
        let key = rest.dropFirst().dropLast(2)
        guard !key.isEmpty, !key.contains("'") else { return nil }
        return String(key)
    }

    /// Splits `/a/b` into percent-decoded segments (`["a", "b"]`; `/a/` gives `["a", ""]`). nil for a path that
    /// does not start with `/`, or bad percent-encoding.
    static func decodeSegments(_ path: String) -> [String]? {
        guard path.hasPrefix("/") else { return nil }
        var segments: [String] = []
        for raw in path.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            guard let decoded = String(raw).removingPercentEncoding else { return nil }
            segments.append(decoded)
        }
        return segments
    }

    /// A path piece fit for a log line: at most 100 characters, control characters replaced.
    static func loggable(_ text: String) -> String {
        let cleaned = String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
        return cleaned.count > 100 ? String(cleaned.prefix(100)) + "..." : cleaned
    }
}

import Foundation
import VaultCore

/// Times as the formats write them, to and from milliseconds since the Unix epoch.
enum Times {
    /// `2026-11-26T16:18:03.120Z`: ISO 8601 in UTC with milliseconds. Computed (``UTCTime``), not by Foundation's
    /// ISO8601DateFormatter: that one builds an ICU date format on each use, 0.5 ms, and an export of 25,000
    /// entries writes three times for each.
    static func iso8601(milliseconds: UInt64) -> String {
        UTCTime.iso8601(milliseconds: Int64(clamping: milliseconds), fractional: true)
    }

    /// `2026-11-26T16:18:03Z`: ISO 8601 in UTC, whole seconds (KeePass's XML).
    static func iso8601Seconds(milliseconds: UInt64) -> String {
        UTCTime.iso8601(milliseconds: Int64(clamping: milliseconds), fractional: false)
    }

    /// The milliseconds of an ISO 8601 date and time (with or without fractional seconds, `Z` or an offset);
    /// `nil` for anything else, or a time before 1970.
    static func milliseconds(iso8601 text: String) -> UInt64? {
        // RFC 3339, what every exporter writes, is read here; anything else goes to Foundation's formatter.
        if let milliseconds = UTCTime.milliseconds(iso8601: text) {
            return milliseconds >= 0 ? UInt64(milliseconds) : nil
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var date = formatter.date(from: text)
        if date == nil {
            formatter.formatOptions = [.withInternetDateTime]
            date = formatter.date(from: text)
        }
        return date.flatMap { milliseconds(seconds: $0.timeIntervalSince1970) }
    }

    /// Seconds since the epoch as milliseconds, `nil` before 1970 or beyond the year 10889.
    static func milliseconds(seconds: Double) -> UInt64? {
        guard seconds.isFinite, seconds >= 0, seconds < 281_474_976_710 else { return nil }
        return UInt64((seconds * 1000).rounded())
    }

    /// KeePass's times: ISO 8601 in an XML export, or (KDBX 4's inner XML) base64 of a little-endian int64 of
    /// seconds since 0001-01-01T00:00:00Z.
    static func milliseconds(keePass text: String) -> UInt64? {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let iso = milliseconds(iso8601: text) { return iso }
        guard let data = Data(base64Encoded: text), data.count == 8 else { return nil }
        let seconds = data.reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
        // 0001-01-01 to 1970-01-01: 62,135,596,800 seconds.
        let unix = seconds - 62_135_596_800
        return unix >= 0 ? milliseconds(seconds: Double(unix)) : nil
    }
}

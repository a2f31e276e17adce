import Foundation
import Testing
@testable import VaultImport

/// ``Times`` against Foundation's ISO8601DateFormatter, which it replaced for speed (an export of 25,000 entries
/// spent 9 of its 17 s building ICU formatters): the same text for every time written, the same milliseconds for every
/// RFC 3339 time read.
struct TimesTests {
    private static func foundationText(_ milliseconds: UInt64, fractional: Bool) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = fractional ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
        // Whole milliseconds as a Double with a tenth of a millisecond added: Foundation truncates, and 0.120 s is
        // 0.11999… as a Double.
        return formatter.string(from: Date(timeIntervalSince1970: (Double(milliseconds) + 0.1) / 1000))
    }

    private static func foundationMilliseconds(_ text: String) -> UInt64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var date = formatter.date(from: text)
        if date == nil {
            formatter.formatOptions = [.withInternetDateTime]
            date = formatter.date(from: text)
        }
        return date.flatMap { Times.milliseconds(seconds: $0.timeIntervalSince1970) }
    }

    @Test func theTextIsFoundationsForTenThousandTimes() {
        var generator = SystemRandomNumberGenerator()
        let times: [UInt64] = [0, 999, 1000, 951_782_400_000, 1_764_173_883_120, 253_402_300_799_999]
            + (0..<10_000).map { _ in UInt64.random(in: 0...253_402_300_799_999, using: &generator) }
        for time in times {
            #expect(Times.iso8601(milliseconds: time) == Self.foundationText(time, fractional: true))
            #expect(Times.iso8601Seconds(milliseconds: time) == Self.foundationText(time, fractional: false))
            #expect(Times.milliseconds(iso8601: Times.iso8601(milliseconds: time)) == time)
        }
    }

    @Test(arguments: [
        "2025-11-26T16:18:03Z", "2025-11-26T16:18:03.120Z", "2025-11-26T16:18:03.1Z", "2025-11-26T16:18:03.12Z",
        "2025-11-26t16:18:03z", "2025-11-26T16:18:03+01:00", "2025-11-26T16:18:03.5-09:30", "2000-02-29T00:00:00Z",
        "1970-01-01T00:00:00Z", "1970-01-01T00:30:00+01:00", "9999-12-31T23:59:59.999Z",
        // Not times: each is nil both ways.
        "2001-02-29T00:00:00Z", "2025-13-01T00:00:00Z", "2025-11-31T00:00:00Z", "2025-11-26T24:00:00Z",
        "2025-11-26T16:60:00Z", "2025-11-26 16:18:03Z", "2025-11-26T16:18:03", "2025-11-26T16:18:03.Z",
        "2025-11-26T16:18Z", "", "yesterday", "2025-11-26T16:18:03Zjunk", "1969-12-31T23:59:59Z",
    ])
    func rfc3339IsReadAsFoundationReadsIt(text: String) {
        #expect(Times.milliseconds(iso8601: text) == Self.foundationMilliseconds(text), "\(text)")
    }

    /// More than three digits of a second: rounded to the nearest millisecond (Foundation's formatter keeps the
    /// digits as a Double, which the old code rounded).
    @Test func digitsBeyondTheMillisecondRound() {
        #expect(Times.milliseconds(iso8601: "1970-01-01T00:00:01.2344Z") == 1234)
        #expect(Times.milliseconds(iso8601: "1970-01-01T00:00:01.2345Z") == 1235)
        #expect(Times.milliseconds(iso8601: "1970-01-01T00:00:01.9999999Z") == 2000)
    }
}

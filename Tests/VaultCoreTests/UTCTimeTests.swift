import Testing
@testable import VaultCore

/// ``UTCTime`` against Python's `datetime` (UTC, proleptic Gregorian), the values computed once by
/// `datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=ms)`.
struct UTCTimeTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (1_764_173_883_120, "2025-11-26T16:18:03.120Z"),
        (4_102_444_800_000, "2100-01-01T00:00:00.000Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
    ])
    func millisecondsAsISO8601(milliseconds: Int64, expected: String) {
        #expect(UTCTime.iso8601(milliseconds: milliseconds, fractional: true) == expected)
        #expect(UTCTime.iso8601(milliseconds: milliseconds, fractional: false) == expected.prefix(19) + "Z")
    }

    @Test func aTimeNoCalendarHoldsIsWrittenWithoutATrap() {
        for seconds in [Double.nan, .infinity, -.infinity, 1e300, -1e300] {
            #expect(!UTCTime.iso8601(seconds: seconds, fractional: true).isEmpty)
        }
        #expect(!UTCTime.iso8601(milliseconds: .min, fractional: true).isEmpty)
        #expect(!UTCTime.iso8601(milliseconds: .max, fractional: true).isEmpty)
    }

    @Test func secondsAreTruncatedToTheMillisecond() {
        #expect(UTCTime.iso8601(seconds: 1_764_173_883.1209, fractional: true) == "2025-11-26T16:18:03.120Z")
        #expect(UTCTime.iso8601(seconds: -0.0005, fractional: true) == "1969-12-31T23:59:59.999Z")
    }
}

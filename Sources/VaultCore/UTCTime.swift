/// Times in UTC as ISO 8601 text, computed here (Howard Hinnant's civil-from-days): no formatter, no time zone data,
/// no ICU, so that what prints a time does not link Foundation's internationalization (34 MB of ICU data in a static
/// `vault`: Benchmarks/README.md, "Size").
package enum UTCTime {
    /// `2026-11-26T16:18:03.120Z` (`fractional`, milliseconds truncated) or `2026-11-26T16:18:03Z`, for
    /// `milliseconds` since the Unix epoch (negative: before 1970).
    package static func iso8601(milliseconds: Int64, fractional: Bool) -> String {
        let (seconds, millis) = floorDivision(milliseconds, 1000)
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        let (year, month, day) = civil(fromDays: days)
        var text = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(secondOfDay / 3600, 2) + ":"
            + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
        if fractional { text += "." + pad(millis, 3) }
        // (Years before 1 and after 9999 have no four-digit form: they are written with their sign and digits.)
        return text + "Z"
    }

    /// ``iso8601(milliseconds:fractional:)`` for seconds since the epoch (sub-millisecond parts truncated).
    /// A time beyond ±2^62 ms (or not finite) is written as the nearest of those bounds: never a trap on a stored
    /// time a vault file made up.
    package static func iso8601(seconds: Double, fractional: Bool) -> String {
        let bound = Double(Int64(1) << 62)
        let milliseconds = (seconds * 1000).rounded(.down)
        let clamped = milliseconds.isNaN ? 0 : min(max(milliseconds, -bound), bound)
        return iso8601(milliseconds: Int64(clamped), fractional: fractional)
    }

    /// Year, month (1–12) and day (1–31) of the day `days` after 1970-01-01 (proleptic Gregorian).
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

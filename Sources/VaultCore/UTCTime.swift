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

    /// The milliseconds since the Unix epoch of an RFC 3339 date and time: `YYYY-MM-DDTHH:MM:SS`, optional fractional
    /// seconds (any number of digits, rounded to the millisecond), then `Z` or `±HH:MM`.
    /// `nil` for anything else: a day the month does not have, an hour past 23, a leap second, a lowercase `t` or `z`
    /// (what Foundation's ISO 8601 formatter refuses too).
    package static func milliseconds(iso8601 text: String) -> Int64? {
        var text = text
        return text.withUTF8 { bytes -> Int64? in
            var index = 0
            func number(_ width: Int) -> Int64? {
                guard index + width <= bytes.count else { return nil }
                var value: Int64 = 0
                for offset in index..<index + width {
                    let byte = bytes[offset]
                    guard byte >= 0x30, byte <= 0x39 else { return nil }
                    value = value * 10 + Int64(byte - 0x30)
                }
                index += width
                return value
            }
            func expect(_ characters: UInt8...) -> Bool {
                guard index < bytes.count, characters.contains(bytes[index]) else { return false }
                index += 1
                return true
            }
            guard let year = number(4), expect(0x2D), let month = number(2), expect(0x2D), let day = number(2),
                  expect(0x54), let hour = number(2), expect(0x3A), let minute = number(2), expect(0x3A),
                  let second = number(2) else { return nil }
            guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour < 24,
                  minute < 60, second < 60 else { return nil }
            var millis: Int64 = 0
            if expect(0x2E) {
                var digits = 0, fraction: Int64 = 0, roundUp = false
                while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                    if digits < 3 { fraction = fraction * 10 + Int64(bytes[index] - 0x30) }
                    else if digits == 3 { roundUp = bytes[index] >= 0x35 }
                    digits += 1
                    index += 1
                }
                guard digits > 0 else { return nil }
                for _ in digits..<max(digits, 3) { fraction *= 10 }
                millis = fraction + (roundUp ? 1 : 0)
            }
            var offsetSeconds: Int64 = 0
            if !expect(0x5A) {
                guard index < bytes.count, bytes[index] == 0x2B || bytes[index] == 0x2D else { return nil }
                let sign: Int64 = bytes[index] == 0x2D ? -1 : 1
                index += 1
                guard let offsetHours = number(2), expect(0x3A), let offsetMinutes = number(2), offsetHours < 24,
                      offsetMinutes < 60 else { return nil }
                offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
            }
            guard index == bytes.count else { return nil }
            let seconds = days(fromCivil: year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
            return (seconds - offsetSeconds) * 1000 + millis
        }
    }

    /// The day number (days after 1970-01-01) of a proleptic Gregorian date: the inverse of ``civil(fromDays:)``.
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
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

import ArgumentParser

/// A duration on the command line: bare seconds (`90`), or integers with units, alone or together (`90s`, `15m`,
/// `8h`, `1d`, `1h30m`); from 1 second to 366 days. Anything else (a unit twice, an overflow, zero) is refused.
package struct Duration: ExpressibleByArgument, CustomStringConvertible, Sendable {
    package static let longestSeconds = 366 * 24 * 3600

    package let seconds: Int
    package let description: String

    package init?(argument: String) {
        guard !argument.isEmpty, argument.utf8.count <= 32 else { return nil }
        var total = 0, number: Int?, seen = Set<Character>()
        for character in argument {
            if let digit = character.wholeNumberValue, character.isASCII {
                let (times, overflow1) = (number ?? 0).multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times.addingReportingOverflow(digit)
                guard !overflow1, !overflow2, sum <= Self.longestSeconds else { return nil }
                number = sum
                continue
            }
            let unit: Int
            switch character {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86_400
            default: return nil
            }
            guard let count = number, seen.insert(character).inserted else { return nil }
            let (part, overflow) = count.multipliedReportingOverflow(by: unit)
            guard !overflow, part <= Self.longestSeconds else { return nil }
            total += part
            number = nil
        }
        if let bare = number {
            guard seen.isEmpty else { return nil }  // "1h30": a number without its unit after a unit
            total = bare
        }
        guard total > 0, total <= Self.longestSeconds else { return nil }
        seconds = total
        description = argument
    }
}

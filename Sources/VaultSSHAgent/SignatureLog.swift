import Synchronization
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The agent's last signatures, without secrets: time, key, host when bound, forwarded or not, SSHSIG namespace.
/// `vault agent status` shows them (the `signatures@vault` extension on the ssh-agent socket).
package final class SignatureLog: Sendable {
    package struct Record: Sendable, Equatable {
        package var time: String
        package var key: String
        package var fingerprint: String
        package var host: String?
        package var forwarded: Bool
        package var namespace: String?

        /// One line: `TIME signed with KEY (FINGERPRINT) for HOST, forwarded, namespace NS`.
        package var line: String {
            var text = "\(time) signed with '\(key)' (\(fingerprint))"
            if let host { text += " for \(host)" }
            if forwarded { text += ", forwarded" }
            if let namespace { text += ", namespace \(namespace)" }
            return text
        }
    }

    /// How many are kept.
    package static let capacity = 64
    private let records = Mutex<[Record]>([])

    package init() {}

    package func append(_ record: Record) {
        records.withLock {
            $0.append(record)
            if $0.count > Self.capacity { $0.removeFirst($0.count - Self.capacity) }
        }
    }

    /// The last records, oldest first.
    package var last: [Record] { records.withLock { $0 } }
}

extension UTCTime {
    /// Now, ISO 8601 in UTC, to the second.
    static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return iso8601(seconds: Double(spec.tv_sec), fractional: false)
    }
}

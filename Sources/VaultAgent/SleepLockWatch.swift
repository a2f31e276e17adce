import CVaultSystem
import Synchronization
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// Locks every vault when the machine is about to sleep or the session's screen is locked: logind's
/// `PrepareForSleep(true)` (org.freedesktop.login1.Manager) and a session's `Lock` (org.freedesktop.login1.Session)
/// on the system bus, as gpg-agent users get from their desktop and KeePassXC does itself.
///
/// `vault` is a static binary, so no D-Bus library is linked in: ``DBusSignalConnection`` speaks the little of the
/// D-Bus wire protocol this needs (SASL EXTERNAL, `Hello`, `AddMatch`, reading signals). The match rules name
/// `sender='org.freedesktop.login1'`: the bus delivers only signals from the name's owner, which on a system bus
/// only logind may be (its policy). A machine without a system bus or logind (a server, a container) is not watched,
/// and nothing else changes.
enum SleepLockWatch {
    /// The match rules: the manager's sleep signal, and any session's lock signal (another user's session locking
    /// locks this agent too: more locking, never less).
    static let rules = [
        "type='signal',sender='org.freedesktop.login1',path='/org/freedesktop/login1',interface='org.freedesktop.login1.Manager',member='PrepareForSleep'",
        "type='signal',sender='org.freedesktop.login1',interface='org.freedesktop.login1.Session',member='Lock'",
    ]

    /// The system bus's socket: `DBUS_SYSTEM_BUS_ADDRESS` when it is a `unix:path=` address, else the standard one.
    static func systemBusPath(environment: (String) -> String?) -> String? {
        guard let address = environment("DBUS_SYSTEM_BUS_ADDRESS"), !address.isEmpty else { return "/run/dbus/system_bus_socket" }
        // The first address of the list whose transport is a path (abstract sockets and TCP are not used).
        for candidate in address.split(separator: ";") where candidate.hasPrefix("unix:") {
            for pair in candidate.dropFirst(5).split(separator: ",") where pair.hasPrefix("path=") {
                return unescape(String(pair.dropFirst(5)))
            }
        }
        return nil
    }

    /// D-Bus address values escape bytes as `%XX`.
    static func unescape(_ value: String) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(value.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
               let decoded = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) {
                bytes.append(decoded)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Connects and watches on a thread of its own until the process ends; `lock` is called for each signal that
    /// asks for it (with a word for the log). Whether it watches: no bus, and it logs why, once.
    @discardableResult
    static func start(log: @escaping @Sendable (String) -> Void, lock: @escaping @Sendable (String) -> Void) -> Bool {
        guard let path = systemBusPath(environment: Posix.environment) else {
            log("the system bus's address is not a socket path; sleep and screen lock are not watched")
            return false
        }
        let connection: DBusSignalConnection
        do {
            connection = try DBusSignalConnection(path: path)
            for rule in rules { try connection.addMatch(rule) }
        } catch {
            // A machine without a system bus (a server, a container) says nothing: nothing changes there. One that
            // names a bus, or has its socket, and cannot be watched says so.
            if Posix.environment("DBUS_SYSTEM_BUS_ADDRESS") != nil || access(path, F_OK) == 0 {
                log("cannot watch the system bus for sleep and screen lock (\(error)); vaults lock on their timeouts only")
            }
            return false
        }
        log("locking every vault when the machine sleeps or the screen locks (logind, \(path))")
        startDetachedThread {
            while true {
                guard let signal = try? connection.nextSignal() else {
                    log("the system bus closed the connection; sleep and screen lock are no longer watched")
                    return
                }
                switch (signal.interface, signal.member) {
                case ("org.freedesktop.login1.Manager", "PrepareForSleep") where signal.firstBoolean == true:
                    lock("the machine is going to sleep")
                case ("org.freedesktop.login1.Session", "Lock"):
                    lock("the session's screen was locked")
                default:
                    continue
                }
            }
        }
        return true
    }
}

/// A D-Bus connection that authenticates as this user, says `Hello`, adds match rules and reads signals: the
/// D-Bus Specification's wire format (little-endian messages, the header's fields, SASL EXTERNAL), no more.
final class DBusSignalConnection: Sendable {
    struct Signal {
        var path: String?
        var interface: String?
        var member: String?
        var signature: String?
        var body: [UInt8]

        /// The body's first value when the signature starts with a boolean (`b`: a u32 0 or 1).
        var firstBoolean: Bool? {
            guard signature?.first == "b", body.count >= 4 else { return nil }
            return body[0] != 0 || body[1] != 0 || body[2] != 0 || body[3] != 0
        }
    }

    struct ProtocolError: Error, CustomStringConvertible { var description: String }

    private let fd: Int32
    private let serial = Mutex<UInt32>(0)
    /// The longest message read: a signal of logind's is a few hundred bytes.
    static let largestMessage = 1 << 20

    init(path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ProtocolError(description: "socket: errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw ProtocolError(description: "the bus's path is too long")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw ProtocolError(description: "cannot connect to \(path): \(String(cString: strerror(code)))")
        }
        self.fd = fd
        // Bounded set-up: a bus that does not answer within 5 s is no bus.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        do {
            try authenticate()
            try call(member: "Hello", body: nil)
        } catch {
            close(fd)
            throw error
        }
        // Signals come when they come: no timeout from now on.
        timeout = timeval(tv_sec: 0, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// `AddMatch(rule)` on the bus, waiting for its reply.
    func addMatch(_ rule: String) throws {
        try call(member: "AddMatch", body: rule)
    }

    /// The next signal the bus delivers (method returns and errors in between are skipped).
    func nextSignal() throws -> Signal {
        while true {
            let (type, fields, body) = try readMessage()
            if type == 4 {
                return Signal(path: fields[1], interface: fields[2], member: fields[3], signature: fields[8], body: body)
            }
        }
    }

    // MARK: The wire

    private func authenticate() throws {
        let uid = String(getuid())
        let digits = Array("0123456789abcdef".utf8)
        let hex = String(decoding: uid.utf8.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] }, as: UTF8.self)
        try send(Array("\0AUTH EXTERNAL \(hex)\r\n".utf8))
        let line = try readLine()
        guard line.hasPrefix("OK ") else { throw ProtocolError(description: "the bus refused EXTERNAL authentication (\(line.prefix(40)))") }
        try send(Array("BEGIN\r\n".utf8))
    }

    private func readLine() throws -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < 512 {
            let count = read(fd, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count == 1 else { throw ProtocolError(description: "the bus closed the connection during authentication") }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self).trimmingSuffix("\r") }
            line.append(byte)
        }
        throw ProtocolError(description: "the bus's authentication line is too long")
    }

    /// A method call to the bus itself (`org.freedesktop.DBus`), with an optional string argument; waits for its
    /// return (an error reply is thrown).
    private func call(member: String, body argument: String?) throws {
        let sent = serial.withLock { serial in
            serial += 1
            return serial
        }
        var body = Marshal()
        if let argument { body.string(argument) }
        var fields = Marshal()
        fields.field(1, type: "o", "/org/freedesktop/DBus")
        fields.field(2, type: "s", "org.freedesktop.DBus")
        fields.field(3, type: "s", member)
        fields.field(6, type: "s", "org.freedesktop.DBus")
        if argument != nil { fields.field(8, type: "g", "s") }
        var message = Marshal()
        message.bytes += [UInt8(ascii: "l"), 1, 0, 1]
        message.u32(UInt32(body.bytes.count))
        message.u32(sent)
        message.u32(UInt32(fields.bytes.count))
        message.bytes += fields.bytes
        message.pad(8)
        message.bytes += body.bytes
        try send(message.bytes)
        while true {
            let (type, fields, _) = try readMessage()
            guard type == 2 || type == 3, fields.replySerial == sent else { continue }
            if type == 3 { throw ProtocolError(description: "the bus answered \(member) with \(fields[4] ?? "an error")") }
            return
        }
    }

    private func send(_ bytes: [UInt8]) throws {
        let failure = bytes.withUnsafeBytes { Posix.writeAll(fd, $0) }
        guard failure == 0 else { throw ProtocolError(description: "cannot write to the bus: errno \(failure)") }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + offset, count - offset) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw ProtocolError(description: "the bus closed the connection") }
            offset += got
        }
        return out
    }

    /// Header fields by code: strings (path, interface, member, error name, destination, sender, signature) and the
    /// reply serial.
    struct Fields {
        var strings: [UInt8: String] = [:]
        var replySerial: UInt32?
        subscript(code: UInt8) -> String? { strings[code] }
    }

    /// One message: its type, header fields and body. Only little-endian messages are read (what every bus sends
    /// a little-endian client in practice); anything else ends the connection.
    private func readMessage() throws -> (UInt8, Fields, [UInt8]) {
        let fixed = try readExactly(16)
        guard fixed[0] == UInt8(ascii: "l"), fixed[3] == 1 else { throw ProtocolError(description: "a message the watch does not read") }
        func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
            UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        }
        let bodyLength = Int(u32(fixed, 4)), fieldsLength = Int(u32(fixed, 12))
        let padded = (fieldsLength + 7) & ~7
        guard bodyLength <= Self.largestMessage, fieldsLength <= Self.largestMessage else {
            throw ProtocolError(description: "a message larger than the watch reads")
        }
        let header = try readExactly(padded)
        let body = try readExactly(bodyLength)
        var fields = Fields()
        var at = 0
        // Each field is a struct (code, variant), 8-aligned from the message's start (the array starts at 16). A field
        // that does not fit, or of a type the watch does not need, ends the reading of the fields.
        fields: while at + 4 <= fieldsLength {
            at = (at + 7) & ~7
            guard at + 4 <= fieldsLength else { break fields }
            let code = header[at]
            let signatureLength = Int(header[at + 1])
            guard signatureLength == 1, at + 4 <= fieldsLength else { break fields }
            let type = header[at + 2]
            at += 4
            switch type {
            case UInt8(ascii: "s"), UInt8(ascii: "o"):
                at = (at + 3) & ~3
                guard at + 4 <= fieldsLength else { break fields }
                let length = Int(u32(header, at))
                guard length <= fieldsLength, at + 4 + length < fieldsLength + 1 else { break fields }
                fields.strings[code] = String(decoding: header[(at + 4)..<(at + 4 + length)], as: UTF8.self)
                at += 4 + length + 1
            case UInt8(ascii: "g"):
                let length = Int(header[at])
                guard at + 1 + length < fieldsLength + 1 else { break fields }
                fields.strings[code] = String(decoding: header[(at + 1)..<(at + 1 + length)], as: UTF8.self)
                at += 1 + length + 1
            case UInt8(ascii: "u"):
                at = (at + 3) & ~3
                guard at + 4 <= fieldsLength else { break fields }
                if code == 5 { fields.replySerial = u32(header, at) }
                at += 4
            default:
                break fields
            }
        }
        return (fixed[1], fields, body)
    }

    /// D-Bus marshalling of the few types the calls need, little-endian, aligned from the message's start (every
    /// piece here starts at a multiple of 8 of it).
    struct Marshal {
        var bytes: [UInt8] = []

        mutating func pad(_ alignment: Int) {
            while bytes.count % alignment != 0 { bytes.append(0) }
        }

        mutating func u32(_ value: UInt32) {
            pad(4)
            bytes += [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
        }

        mutating func string(_ value: String) {
            u32(UInt32(value.utf8.count))
            bytes += Array(value.utf8) + [0]
        }

        mutating func signature(_ value: String) {
            bytes.append(UInt8(value.utf8.count))
            bytes += Array(value.utf8) + [0]
        }

        /// A header field: `(code, variant(type, value))`, a struct (8-aligned). The header's field array starts at
        /// offset 16 of the message, so offsets here and there agree modulo 8.
        mutating func field(_ code: UInt8, type: String, _ value: String) {
            pad(8)
            bytes.append(code)
            signature(type)
            if type == "g" { signature(value) } else { string(value) }
        }
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}

internal import CSecretService
import CVaultSystem
import Glibc
import VaultCore

/// sd-bus, the little of it the provider needs: a connection to the session bus, a name, one handler for every
/// object below a path (``DBusConnection/serve(below:_:)``), signals, and messages read and written by their
/// D-Bus types. Only plain (not variadic) sd-bus functions are called, so Swift calls them directly.
final class DBusConnection {
    let bus: OpaquePointer
    private var slots: [OpaquePointer?] = []

    /// Connects to the session bus (`$DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`).
    init() throws(SecretServiceError) {
        var bus: OpaquePointer?
        let result = sd_bus_open_user(&bus)
        guard result >= 0, let bus else {
            throw .cannotStart("cannot connect to the session bus: \(Posix.describe(errno: -result))")
        }
        self.bus = bus
    }

    deinit {
        for slot in slots { sd_bus_slot_unref(slot) }
        sd_bus_flush_close_unref(bus)
    }

    /// Whether the bus is a Unix socket whose other end (the bus daemon) runs as this user: a bus of this user's
    /// own, on which other users cannot be (dbus-daemon's session configuration lets only its user in).
    var isThisUsersOwnBus: Bool {
        let fd = sd_bus_get_fd(bus)
        guard fd >= 0 else { return false }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0, address.ss_family == sa_family_t(AF_UNIX) else { return false }
        var pid: Int32 = 0, uid: UInt32 = 0
        return vault_peer_credentials(fd, &pid, &uid) == 0 && uid == geteuid()
    }

    /// Takes `name`, letting a later `--replace` take it over; with `replace`, takes it from its owner when that
    /// one allows it (gnome-keyring, gopass and this provider do).
    func requestName(_ name: String, replace: Bool) throws(SecretServiceError) {
        let allowReplacement: UInt64 = 1 << 1, replaceExisting: UInt64 = 1 << 0
        let result = sd_bus_request_name(bus, name, allowReplacement | (replace ? replaceExisting : 0))
        if result == -EEXIST {
            throw .cannotStart("\(name) is owned by another program on this bus (--replace takes it over when that program allows it)")
        }
        guard result >= 0 else { throw .cannotStart("cannot own \(name): \(Posix.describe(errno: -result))") }
    }

    typealias Handler = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<sd_bus_error>?) -> Int32

    /// Routes every method call on `prefix` and below to `handler` with `context`.
    func serve(below prefix: String, context: UnsafeMutableRawPointer, _ handler: Handler) throws(SecretServiceError) {
        var slot: OpaquePointer?
        let result = sd_bus_add_fallback(bus, &slot, prefix, handler, context)
        guard result >= 0 else { throw .cannotStart("cannot serve \(prefix): \(Posix.describe(errno: -result))") }
        slots.append(slot)
    }

    /// Calls `handler` with `context` for the bus daemon's signal `member` (`NameLost`: another provider took the
    /// name; `NameOwnerChanged`: a client left).
    func watchBus(_ member: String, context: UnsafeMutableRawPointer, _ handler: Handler) throws(SecretServiceError) {
        var slot: OpaquePointer?
        let result = sd_bus_match_signal(
            bus, &slot, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", member, handler, context)
        guard result >= 0 else { throw .cannotStart("cannot watch the bus: \(Posix.describe(errno: -result))") }
        slots.append(slot)
    }

    /// Processes what arrived, then waits up to `microseconds` for more.
    func step(waitingAtMost microseconds: UInt64) throws(SecretServiceError) {
        while true {
            let processed = sd_bus_process(bus, nil)
            guard processed >= 0 else { throw .connectionLost(Posix.describe(errno: -processed)) }
            if processed == 0 { break }
        }
        let waited = sd_bus_wait(bus, microseconds)
        guard waited >= 0 || waited == -EINTR else { throw .connectionLost(Posix.describe(errno: -waited)) }
    }

    /// Emits signal `member` of `interface` on `path`, its arguments written by `body`.
    func emit(path: String, interface: String, member: String, _ body: (DBusWriter) throws -> Void) throws(SecretServiceError) {
        var message: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &message, path, interface, member) >= 0, let message else {
            throw .failed("cannot make the signal \(member)")
        }
        defer { sd_bus_message_unref(message) }
        try writing { try body(DBusWriter(message)) }
        guard sd_bus_send(bus, message, nil) >= 0 else { throw .failed("cannot send the signal \(member)") }
    }

    /// Answers `call` with the arguments `body` writes; a `sensitive` reply (a secret) is zeroed when sd-bus frees it.
    static func reply(to call: OpaquePointer, sensitive: Bool = false, _ body: (DBusWriter) throws -> Void) throws(SecretServiceError) {
        var reply: OpaquePointer?
        guard sd_bus_message_new_method_return(call, &reply) >= 0, let reply else { throw .failed("cannot make a reply") }
        defer { sd_bus_message_unref(reply) }
        if sensitive { _ = sd_bus_message_sensitive(reply) }
        try writing { try body(DBusWriter(reply)) }
        guard sd_bus_send(nil, reply, nil) >= 0 else { throw .failed("cannot send a reply") }
    }

    /// Answers `call` with the D-Bus error `error` is.
    static func reply(to call: OpaquePointer, error: SecretServiceError) {
        var busError = sd_bus_error()
        _ = sd_bus_error_set(&busError, error.dbusName, error.description)
        _ = sd_bus_reply_method_error(call, &busError)
        sd_bus_error_free(&busError)
    }

    /// `prefix/ID`, ID escaped for an object path element: ASCII letters and digits as they are, every other byte
    /// `_` and two lowercase hex digits (systemd's escaping, except that a leading digit stays: gnome-keyring's item
    /// paths end in digits too); the empty ID is `_`.
    static func path(_ prefix: String, _ id: String) -> String {
        guard !id.isEmpty else { return prefix + "/_" }
        var element = ""
        for byte in id.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                element.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                element += "_" + String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
            }
        }
        return prefix + "/" + element
    }

    /// The ID of `path`, one element below `prefix` (``path(_:_:)``'s inverse), or `nil`.
    static func id(of path: String, below prefix: String) -> String? {
        guard path.hasPrefix(prefix + "/") else { return nil }
        let element = Array(path.utf8.dropFirst(prefix.utf8.count + 1))
        guard !element.isEmpty else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < element.count {
            let byte = element[index]
            if byte == UInt8(ascii: "_") {
                guard index + 2 < element.count, let high = hexValue(element[index + 1]), let low = hexValue(element[index + 2]) else { return nil }
                bytes.append(high << 4 | low)
                index += 3
            } else {
                guard (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                bytes.append(byte)
                index += 1
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

/// `body`'s failure as the provider's own.
func writing(_ body: () throws -> Void) throws(SecretServiceError) {
    do {
        try body()
    } catch let error as SecretServiceError {
        throw error
    } catch {
        throw .failed("\(error)")
    }
}

/// The type codes as sd-bus takes them.
private func code(_ character: Unicode.Scalar) -> CChar { CChar(UInt8(ascii: character)) }

/// A method call being read, argument by argument, by its D-Bus types.
struct DBusReader {
    let message: OpaquePointer

    init(_ message: OpaquePointer) { self.message = message }

    var member: String { sd_bus_message_get_member(message).map { String(cString: $0) } ?? "" }
    /// Marks the call as holding a secret: sd-bus zeroes its buffers when it frees it.
    func markSensitive() { _ = sd_bus_message_sensitive(message) }
    var interface: String { sd_bus_message_get_interface(message).map { String(cString: $0) } ?? "" }
    var path: String { sd_bus_message_get_path(message).map { String(cString: $0) } ?? "" }
    var sender: String { sd_bus_message_get_sender(message).map { String(cString: $0) } ?? "" }
    func hasSignature(_ signature: String) -> Bool { sd_bus_message_has_signature(message, signature) > 0 }

    private func check(_ result: Int32, _ what: String) throws(SecretServiceError) {
        guard result > 0 else { throw .invalidArguments("expected \(what)") }
    }

    /// A string (`s`) or, with `type` `o`, an object path.
    func string(_ type: Unicode.Scalar = "s") throws(SecretServiceError) -> String {
        var value: UnsafePointer<CChar>?
        try check(sd_bus_message_read_basic(message, code(type), &value), type == "o" ? "an object path" : "a string")
        guard let value else { throw .invalidArguments("expected a string") }
        return String(cString: value)
    }

    func bool() throws(SecretServiceError) -> Bool {
        var value: Int32 = 0
        try check(sd_bus_message_read_basic(message, code("b"), &value), "a boolean")
        return value != 0
    }

    /// An array of bytes (`ay`), handed to `body` where sd-bus keeps it (nothing copied here).
    func bytes<R>(_ body: (UnsafeRawBufferPointer) throws(SecretServiceError) -> R) throws(SecretServiceError) -> R {
        var pointer: UnsafeRawPointer?
        var size = 0
        guard sd_bus_message_read_array(message, code("y"), &pointer, &size) >= 0 else { throw .invalidArguments("expected bytes") }
        return try body(UnsafeRawBufferPointer(start: size == 0 ? nil : pointer, count: size))
    }

    func enter(_ type: Unicode.Scalar, _ contents: String) throws(SecretServiceError) {
        try check(sd_bus_message_enter_container(message, code(type), contents), "\(type)(\(contents))")
    }

    func exit() throws(SecretServiceError) {
        guard sd_bus_message_exit_container(message) >= 0 else { throw .invalidArguments("a malformed container") }
    }

    /// Whether the current container has no more elements.
    var atEnd: Bool { sd_bus_message_at_end(message, 0) > 0 }

    /// An array of object paths (`ao`).
    func objectPaths() throws(SecretServiceError) -> [String] {
        try enter("a", "o")
        var paths: [String] = []
        while !atEnd { paths.append(try string("o")) }
        try exit()
        return paths
    }

    /// A dictionary of strings (`a{ss}`), in the order sent; a key given twice is refused.
    func stringDictionary(limit: Int) throws(SecretServiceError) -> [(String, String)] {
        try enter("a", "{ss}")
        var pairs: [(String, String)] = []
        while !atEnd {
            guard pairs.count < limit else { throw .invalidArguments("more than \(limit) attributes") }
            try enter("e", "ss")
            let key = try string(), value = try string()
            try exit()
            guard !pairs.contains(where: { $0.0 == key }) else { throw .invalidArguments("the attribute '\(key)' is given twice") }
            pairs.append((key, value))
        }
        try exit()
        return pairs
    }

    /// The signature of the variant that comes next.
    func variantContents() throws(SecretServiceError) -> String {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard sd_bus_message_peek_type(message, &type, &contents) > 0, type == code("v"), let contents else {
            throw .invalidArguments("expected a variant")
        }
        return String(cString: contents)
    }

    func skip(_ types: String) throws(SecretServiceError) {
        guard sd_bus_message_skip(message, types) >= 0 else { throw .invalidArguments("a malformed argument") }
    }
}

/// A reply or signal being written, argument by argument.
struct DBusWriter {
    let message: OpaquePointer

    init(_ message: OpaquePointer) { self.message = message }

    private func check(_ result: Int32) throws(SecretServiceError) {
        guard result >= 0 else { throw .failed("cannot write a reply: \(Posix.describe(errno: -result))") }
    }

    func string(_ value: String, _ type: Unicode.Scalar = "s") throws(SecretServiceError) {
        try check(value.withCString { sd_bus_message_append_basic(message, code(type), $0) })
    }

    func bool(_ value: Bool) throws(SecretServiceError) {
        var number: Int32 = value ? 1 : 0
        try check(sd_bus_message_append_basic(message, code("b"), &number))
    }

    func uint64(_ value: UInt64) throws(SecretServiceError) {
        var number = value
        try check(sd_bus_message_append_basic(message, code("t"), &number))
    }

    func bytes(_ value: UnsafeRawBufferPointer) throws(SecretServiceError) {
        try check(sd_bus_message_append_array(message, code("y"), value.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, value.count))
    }

    func bytes(_ value: [UInt8]) throws(SecretServiceError) {
        try check(value.withUnsafeBytes {
            sd_bus_message_append_array(message, code("y"), $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, $0.count)
        })
    }

    func open(_ type: Unicode.Scalar, _ contents: String) throws(SecretServiceError) {
        try check(sd_bus_message_open_container(message, code(type), contents))
    }

    func close() throws(SecretServiceError) { try check(sd_bus_message_close_container(message)) }

    func objectPaths(_ paths: [String]) throws(SecretServiceError) {
        try open("a", "o")
        for path in paths { try string(path, "o") }
        try close()
    }

    func stringDictionary(_ pairs: [(String, String)]) throws(SecretServiceError) {
        try open("a", "{ss}")
        for (key, value) in pairs {
            try open("e", "ss")
            try string(key)
            try string(value)
            try close()
        }
        try close()
    }

    /// A variant of signature `contents` whose value `body` writes.
    func variant(_ contents: String, _ body: () throws -> Void) throws(SecretServiceError) {
        try open("v", contents)
        try writing(body)
        try close()
    }
}

import Synchronization
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// The agent's wire format (docs/AGENT.md): frames on a Unix stream socket, each a 4-byte big-endian length
/// and a payload. A payload is the protocol version (1 byte), an operation or a status (1 byte), then fields,
/// each a tag (1 byte), a 4-byte big-endian length and the bytes. Payloads are read into and built in guarded
/// memory, so the secrets they carry (passphrases, values) never sit in ordinary memory.
package enum AgentWire {
    /// The protocol version this build speaks; a peer of another version is refused with a clear error.
    static let version: UInt8 = 6
    /// The largest payload accepted (a value is at most 64 MiB; a batch or a list may be larger).
    static let maximumPayloadByteCount = 256 << 20
    /// The most fields one payload may carry (a list of 100,000 entries has 400,000): the field table of a
    /// 64 MiB frame of empty fields would otherwise cost 24 bytes for each of its 13 million fields.
    static let maximumFieldCount = 1 << 20
    /// How much a frame's buffer grows by at most per read: a header announcing 256 MiB commits nothing until
    /// the bytes arrive.
    static let readChunkByteCount = 1 << 20

    enum Tag: UInt8 {
        case path = 1, name, value, passphrase, idleSeconds, maxSeconds, flags, lockTimeoutMilliseconds
        case code, exitCode, message, hint, count, created, modified, size, change, pid, idleLeft, maxLeft, bool
        case socket, kdfParameters, source
        /// Document operations (protocol version 3): an entry's id, a version number, a replica id, a conflict
        /// flag, a field's name and its secret flag.
        case entryID, version, replica, conflict, field, secret
        /// An error answer's ``VaultError`` case and its arguments, in order (``AgentErrorWire``).
        case errorCase, argument
        /// A vault's data key, unwrapped by the client with an age identity (`vault unlock --identity`).
        case dataKey
        /// The age stanza types of the identities an agent can keep (`X25519`, `mlkem768x25519`), in its status.
        case identityType
        /// The name of the replica that made an entry's version (``EntryRecord/modifiedBy``), or of the one whose
        /// change won in a merge report's lost edit.
        case replicaName
    }

    /// A payload being built, in guarded memory.
    struct Writer {
        let buffer = SecretBuffer()

        init(version: UInt8 = AgentWire.version, kind: UInt8) {
            append([version, kind])
        }

        /// Makes room for `byteCount` more bytes (``SecretBuffer/reserve(_:)``).
        func reserve(_ byteCount: Int) {
            buffer.reserve(byteCount)
        }

        /// The bytes of a field carrying `count` bytes: its tag, length and value.
        static func fieldSize(_ count: Int) -> Int { 5 + count }

        func append(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { append($0) }
        }

        func append(_ bytes: UnsafeRawBufferPointer) {
            buffer.append(bytes)
        }

        func field(_ tag: Tag, _ bytes: UnsafeRawBufferPointer) {
            // The tag and length from the stack: a list writes one field per name, and an array each is
            // what that cost.
            let n = UInt32(bytes.count)
            let header = (tag.rawValue, UInt8(n >> 24), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF))
            withUnsafeBytes(of: header) { append(UnsafeRawBufferPointer(rebasing: $0[0..<5])) }
            append(bytes)
        }

        func field(_ tag: Tag, _ text: String) {
            var text = text
            text.withUTF8 { field(tag, UnsafeRawBufferPointer($0)) }
        }

        func field(_ tag: Tag, _ secret: SecureBytes) {
            secret.withUnsafeBytes { field(tag, $0) }
        }

        func field(_ tag: Tag, _ number: UInt64) {
            // Big-endian, from the stack (a list writes three numbers per entry).
            withUnsafeBytes(of: number.bigEndian) { field(tag, $0) }
        }

        func field(_ tag: Tag, _ number: Int64) { field(tag, UInt64(bitPattern: number)) }
        func field(_ tag: Tag, byte: UInt8) { [byte].withUnsafeBytes { field(tag, $0) } }
        func field(_ tag: Tag, _ flag: Bool) { [UInt8(flag ? 1 : 0)].withUnsafeBytes { field(tag, $0) } }
    }

    /// A payload read: its version, kind and fields, in guarded memory.
    struct Message {
        let payload: SecureBytes
        let version: UInt8
        let kind: UInt8
        /// Where one field's bytes are in `payload`. A plain struct: an array of `(UInt8, Range<Int>)` tuples
        /// made the runtime look `Int: Comparable` up by name, scanning every conformance of the static binary,
        /// and that lookup was a tenth of a `vault list` through the agent.
        struct Field {
            let tag: UInt8
            let start: Int
            let count: Int
            var range: Range<Int> { start..<start + count }
        }

        /// The fields in order.
        let fields: [Field]

        /// - Parameter fieldLimit: the most fields it may have (``AgentWire/maximumFieldCount``; tests give less).
        init(payload: SecureBytes, fieldLimit: Int = AgentWire.maximumFieldCount) throws(AgentError) {
            self.payload = payload
            guard payload.count >= 2 else { throw .protocolError("a message shorter than its header") }
            (version, kind) = payload.withUnsafeBytes { ($0[0], $0[1]) }
            var fields = [Field]()
            if version == AgentWire.version {
                try payload.withUnsafeBytes { (bytes) throws(AgentError) in
                    // Two passes, the first only counting: a list carries thousands of fields, and growing the
                    // array as it goes copied it a dozen times.
                    for pass in 0..<2 {
                        var offset = 2, count = 0
                        while offset < bytes.count {
                            guard bytes.count - offset >= 5 else { throw .protocolError("a truncated field") }
                            let tag = bytes[offset]
                            let length = (Int(bytes[offset + 1]) << 24) | (Int(bytes[offset + 2]) << 16)
                                | (Int(bytes[offset + 3]) << 8) | Int(bytes[offset + 4])
                            offset += 5
                            guard bytes.count - offset >= length else { throw .protocolError("a truncated field") }
                            if pass == 1 { fields.append(Field(tag: tag, start: offset, count: length)) }
                            count += 1
                            guard count <= fieldLimit else { throw .protocolError("a message of more than \(fieldLimit) fields") }
                            offset += length
                        }
                        if pass == 0 { fields.reserveCapacity(count) }
                    }
                }
            }
            self.fields = fields
        }

        /// Where the first field of `tag` is.
        func first(_ tag: Tag) -> Range<Int>? {
            for field in fields where field.tag == tag.rawValue { return field.range }
            return nil
        }

        /// Every field of `tag` as a big-endian number, in order (fields of another size are left out).
        func numbers(_ tag: Tag) -> [UInt64] {
            fields.compactMap { $0.tag == tag.rawValue ? number($0.range) : nil }
        }

        /// The field's bytes as UTF-8; `nil` when they are not valid UTF-8 (never replaced by U+FFFD: two names
        /// that differ in invalid bytes must not become one).
        func string(_ range: Range<Int>) -> String? {
            payload.withUnsafeBytes { String(validating: UnsafeRawBufferPointer(rebasing: $0[range]), as: UTF8.self) }
        }

        func string(_ tag: Tag) -> String? { first(tag).flatMap(string) }

        /// Every field of `tag` as a string, in order (one pass: a list holds thousands).
        func strings(_ tag: Tag) -> [String] {
            payload.withUnsafeBytes { bytes in
                var strings = [String]()
                strings.reserveCapacity(fields.reduce(0) { $1.tag == tag.rawValue ? $0 + 1 : $0 })
                for field in fields where field.tag == tag.rawValue {
                    // Invalid UTF-8 is kept visible (U+FFFD) here: these are names the agent sent, already checked.
                    strings.append(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[field.range]), as: UTF8.self))
                }
                return strings
            }
        }

        func secret(_ range: Range<Int>) -> SecureBytes {
            payload.withUnsafeBytes { bytes in
                SecureBytes(count: range.count) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[range])) }
            }
        }

        func secret(_ tag: Tag) -> SecureBytes? { first(tag).map(secret) }

        func number(_ range: Range<Int>) -> UInt64? {
            guard range.count == 8 else { return nil }
            return payload.withUnsafeBytes { bytes in bytes[range].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        }

        func number(_ tag: Tag) -> UInt64? { first(tag).flatMap(number) }

        func bool(_ range: Range<Int>) -> Bool { payload.withUnsafeBytes { $0[range].first == 1 } }

        func bool(_ tag: Tag) -> Bool { first(tag).map(bool) ?? false }

        /// Calls `body` with each field's tag and bytes, in order.
        func forEachField(_ body: (UInt8, UnsafeRawBufferPointer) throws -> Void) rethrows {
            try payload.withUnsafeBytes { bytes in
                for field in fields { try body(field.tag, UnsafeRawBufferPointer(rebasing: bytes[field.range])) }
            }
        }
    }

    /// Sends `writer`'s payload as one frame: header and payload in one `writev` (one wake-up of the reader, one
    /// system call: most frames are a `get` and its answer), the rest, if the socket took less, as it drains.
    static func send(_ writer: Writer, on fd: Int32) throws {
        let count = writer.buffer.count
        var header: [UInt8] = [UInt8(count >> 24 & 0xFF), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
        let code = header.withUnsafeMutableBytes { head in
            writer.buffer.withUnsafeBytes { payload -> Int32 in
                var parts = [iovec(iov_base: head.baseAddress, iov_len: 4),
                             iovec(iov_base: UnsafeMutableRawPointer(mutating: payload.baseAddress), iov_len: payload.count)]
                let sent: Int
                switch Posix.valueOrErrno({ writev(fd, &parts, 2) }) {
                case .success(let written): sent = written
                case .failure(let error): return error.code
                }
                if sent < 4 {
                    let code = Posix.writeAll(fd, UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(head)[sent...]))
                    return code == 0 ? Posix.writeAll(fd, payload) : code
                }
                return Posix.writeAll(fd, UnsafeRawBufferPointer(rebasing: payload[(sent - 4)...]))
            }
        }
        guard code == 0 else { throw AgentError.connection(errno: code) }
    }

    /// Reads one frame; `nil` at end of stream before its first byte.
    ///
    /// The payload's guarded buffer grows as bytes arrive (at most ``readChunkByteCount`` ahead of them), never
    /// to what the header announces before the bytes are there. With a `budget`, every byte held for a frame
    /// not yet complete is counted against it (the agent's total over all connections). The payload is read into
    /// `buffer`, which must be empty: a client passes its request's, wiped, so that one guarded region serves the
    /// request and its answer (``AgentClient``).
    static func receive(on fd: Int32, budget: FrameBudget? = nil, into buffer: SecretBuffer = SecretBuffer()) throws -> Message? {
        precondition(buffer.count == 0, "an answer read into a buffer that holds bytes")
        var header = [UInt8](repeating: 0, count: 4)
        let got = try header.withUnsafeMutableBytes { try readFully(fd, $0) }
        if got == 0 { return nil }
        guard got == 4 else { throw AgentError.protocolError("the connection closed inside a frame") }
        let count = header.reduce(0) { $0 << 8 | Int($1) }
        guard count <= maximumPayloadByteCount else { throw AgentError.protocolError("a frame of \(count) bytes") }
        var held = 0
        defer { budget?.release(held) }
        while buffer.count < count {
            let chunk = min(readChunkByteCount, count - buffer.count)
            if let budget {
                guard budget.take(chunk) else { throw AgentError.protocolError("the agent holds too many unread bytes") }
                held += chunk
            }
            let result: Result<Int, Posix.Errno> = buffer.append(upTo: chunk) { region in
                Posix.valueOrErrno { read(fd, region.baseAddress, region.count) }
            }
            switch result {
            case .success(0): throw AgentError.protocolError("the connection closed inside a frame")
            case .success: continue
            case .failure(let error):
                if error.code == EAGAIN || error.code == EWOULDBLOCK { throw AgentError.timedOut }
                throw AgentError.connection(errno: error.code)
            }
        }
        return try Message(payload: buffer.takeSecureBytes())
    }

    /// The bytes an agent may hold for frames still arriving, over all its connections.
    package final class FrameBudget: Sendable {
        private let left: Mutex<Int>

        package init(byteCount: Int) { left = Mutex(byteCount) }

        /// Takes `byteCount` from the budget; false (and nothing taken) when not that much is left.
        package func take(_ byteCount: Int) -> Bool {
            left.withLock { left in
                guard left >= byteCount else { return false }
                left -= byteCount
                return true
            }
        }

        package func release(_ byteCount: Int) { left.withLock { $0 += byteCount } }
    }

    /// Reads until `buffer` is full or the stream ends; returns the number of bytes read.
    private static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(AgentError) -> Int {
        var offset = 0
        while offset < buffer.count {
            switch Posix.valueOrErrno({ read(fd, buffer.baseAddress! + offset, buffer.count - offset) }) {
            case .success(0): return offset
            case .success(let n): offset += n
            case .failure(let error):
                if error.code == EAGAIN || error.code == EWOULDBLOCK { throw .timedOut }
                throw .connection(errno: error.code)
            }
        }
        return offset
    }
}

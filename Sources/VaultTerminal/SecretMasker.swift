#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import VaultCore

/// Copies a stream from one descriptor to another with every occurrence of the given secrets replaced by
/// `******`, also when a secret arrives split across reads (`vault run --mask`).
///
/// Bytes that could still be the start of a secret are held back for as long as they could be, whatever the pause
/// (a secret written one byte at a time, or its first bytes, a pause, then the rest, never shows); bytes that can
/// no longer begin a secret are written at once. When the stream ends, a held start of at least
/// ``strongPrefixByteCount`` bytes is masked and a shorter one let out. (A program that prints a prompt ending in
/// the first bytes of a secret and then waits shows that prompt's end only once it prints more or ends.) What is
/// read, held and written passes through guarded memory only, and is zeroed as soon as it is written.
///
/// Where several secrets match at one place, the longest wins. A value that ends in a newline is also masked
/// without it (`echo $TOKEN` prints it with one newline of its own).
package final class SecretMasker {
    package static let replacement = Array("******".utf8)
    /// A held start of a secret at least this long is masked when the stream ends with it (see above).
    package static let strongPrefixByteCount = 4

    /// What a drain does with bytes at the end that could begin a secret.
    package enum Held {
        /// Keeps them for the next read, however long it takes.
        case more
        /// The stream ended: masks the strong ones, lets out the short ones.
        case end
    }

    private let secrets: [SecureBytes]
    private let pending = SecretBuffer()
    private let output = SecretBuffer()

    /// A masker of `values` (empty ones are ignored).
    package init(values: [SecureBytes]) {
        var secrets: [SecureBytes] = []
        for value in values where value.count > 0 {
            secrets.append(value)
            let trimmed = value.withUnsafeBytes { bytes -> Int in
                var end = bytes.count
                if end > 0, bytes[end - 1] == UInt8(ascii: "\n") { end -= 1 }
                if end > 0, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                return end
            }
            if trimmed > 0, trimmed < value.count {
                secrets.append(value.withUnsafeBytes { bytes in
                    SecureBytes(count: trimmed) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<trimmed])) }
                })
            }
        }
        self.secrets = secrets.sorted { $0.count > $1.count }
    }

    /// Adds `bytes` to what is pending and returns (through `emit`) what can no longer be part of a secret,
    /// masked; `held` says what happens to a possible start of a secret at the end.
    package func process(_ bytes: UnsafeRawBufferPointer, held: Held, emit: (UnsafeRawBufferPointer) -> Void) {
        pending.append(bytes)
        drain(held, emit: emit)
    }

    /// Copies `input` to `output` until `input` ends, masked; returns 0, or the errno of a failed read.
    /// A failed write (the reader went away) stops the writing but not the reading, so the program is never
    /// blocked on a full pipe.
    package func pump(from input: Int32, to outputFD: Int32) -> Int32 {
        var writable = true
        func emit(_ bytes: UnsafeRawBufferPointer) {
            guard writable, bytes.count > 0 else { return }
            writable = Posix.writeAll(outputFD, bytes) == 0
        }
        while true {
            let result: Result<Int, Posix.Errno> = pending.append(upTo: 65_536) { buffer in
                Posix.valueOrErrno { read(input, buffer.baseAddress, buffer.count) }
            }
            switch result {
            case .success(0):
                drain(.end, emit: emit)
                return 0
            case .success:
                drain(.more, emit: emit)
            case let .failure(error):
                drain(.end, emit: emit)
                return error.code
            }
        }
    }

    private func drain(_ held: Held, emit: (UnsafeRawBufferPointer) -> Void) {
        let consumed = pending.withUnsafeBytes { bytes -> Int in
            var index = 0
            var plainStart = 0
            func flushPlain(upTo end: Int) {
                if end > plainStart { output.append(UnsafeRawBufferPointer(rebasing: bytes[plainStart..<end])) }
            }
            // Longest first: a longer secret that may still match is waited for before a shorter one is taken.
            scan: while index < bytes.count {
                for secret in secrets {
                    let match = secret.withUnsafeBytes { secretBytes -> Int in
                        // 1: whole match; 0: a prefix of the secret runs to the end of the bytes; -1: no match.
                        let available = min(secretBytes.count, bytes.count - index)
                        guard memcmp(bytes.baseAddress! + index, secretBytes.baseAddress!, available) == 0 else { return -1 }
                        return available == secretBytes.count ? 1 : 0
                    }
                    if match == 1 {
                        flushPlain(upTo: index)
                        Self.replacement.withUnsafeBytes { output.append($0) }
                        index += secret.count
                        plainStart = index
                        continue scan
                    }
                    if match == 0 {
                        let strong = bytes.count - index >= Self.strongPrefixByteCount
                        switch held {
                        case .more: break scan
                        case .end where strong:
                            flushPlain(upTo: index)
                            Self.replacement.withUnsafeBytes { output.append($0) }
                            index = bytes.count
                            plainStart = index
                            break scan
                        default: break
                        }
                    }
                }
                index += 1
            }
            flushPlain(upTo: index)
            return index
        }
        pending.removeFirst(consumed)
        output.withUnsafeBytes { emit($0) }
        output.wipe()
    }
}

import Foundation
import ZIPFoundation

/// KeePass's attachments in an XML export: `<Meta><Binaries><Binary ID="0" Compressed="True">` (base64, gzip when
/// `Compressed`) referred to by an entry's `<Binary><Key>NAME</Key><Value Ref="0"/></Binary>`, or given inline in
/// the entry's `<Value>`. Each is imported as a binary field of its name (secret), up to ``maximumByteCount``.
enum KeePassBinaries {
    /// The largest attachment imported: 1 MiB. A vault holds every value in memory while open and copies a version
    /// into its history on each change; a larger file belongs beside the vault, not in it.
    static let maximumByteCount = 1 << 20

    /// What an attachment's content turned out to be.
    enum Content: Equatable {
        case bytes([UInt8])
        /// Larger than ``maximumByteCount`` once decoded (`size`: its size, or `nil` when it was not inflated whole).
        case tooLarge(size: Int?)
        /// Not base64, or not gzip when it says it is.
        case malformed(String)
    }

    /// The content of a `<Binary>` element's text.
    static func decode(_ text: String, compressed: Bool) -> Content {
        guard let data = Data(base64Encoded: text.filter { !$0.isWhitespace }) else { return .malformed("not base64") }
        guard compressed else {
            return data.count > maximumByteCount ? .tooLarge(size: data.count) : .bytes([UInt8](data))
        }
        return gunzip(data)
    }

    /// The bytes of a gzip member (RFC 1952: the header, then raw deflate, whose end is found by inflating; the
    /// trailer is not checked), inflated to at most ``maximumByteCount`` bytes.
    static func gunzip(_ data: Data) -> Content {
        let bytes = [UInt8](data)
        guard bytes.count >= 18, bytes[0] == 0x1F, bytes[1] == 0x8B, bytes[2] == 8 else { return .malformed("not gzip") }
        let flags = bytes[3]
        var offset = 10
        if flags & 0x04 != 0 {  // FEXTRA
            guard offset + 2 <= bytes.count else { return .malformed("a truncated gzip header") }
            offset += 2 + Int(bytes[offset]) + Int(bytes[offset + 1]) << 8
        }
        for flag in [UInt8(0x08), 0x10] where flags & flag != 0 {  // FNAME, FCOMMENT: zero-terminated
            while offset < bytes.count, bytes[offset] != 0 { offset += 1 }
            offset += 1
        }
        if flags & 0x02 != 0 { offset += 2 }  // FHCRC
        guard offset < bytes.count else { return .malformed("a truncated gzip header") }
        let deflate = Data(bytes[offset...])
        struct TooLarge: Error {}
        var output = Data()
        do {
            _ = try Data.decompress(size: Int64(deflate.count), bufferSize: 64 << 10, skipCRC32: true, provider: { position, count in
                deflate.subdata(in: Int(position)..<min(deflate.count, Int(position) + count))
            }, consumer: { chunk in
                guard output.count + chunk.count <= maximumByteCount else { throw TooLarge() }
                output.append(chunk)
            })
        } catch is TooLarge {
            return .tooLarge(size: nil)
        } catch {
            return .malformed("does not inflate")
        }
        return .bytes([UInt8](output))
    }
}

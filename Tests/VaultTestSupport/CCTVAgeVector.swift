import Foundation

/// One C2SP CCTV age vector file (`Tests/Vectors/age`, see the README there): its preamble and the age file after
/// it. Shared by the X25519 (VaultAgeTests) and hybrid (VaultAgePQTests) runners.
public struct CCTVAgeVector: Sendable {
    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    /// The directory of the vectors.
    public static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors/age").path

    public let name: String
    public private(set) var expect = ""
    /// SHA-256 of the plaintext.
    public private(set) var payloadHash: [UInt8]?
    public private(set) var fileKey: [UInt8]?
    /// The `identity:` lines, in order.
    public private(set) var identities: [String] = []
    /// Whether the file was stored zlib-compressed (`compressed: zlib`); ``file`` is decompressed.
    public private(set) var compressed = false
    /// The age file.
    public private(set) var file: [UInt8] = []

    /// Reads `name` from ``directory``.
    ///
    /// - Throws: ``Malformed`` for a missing file, a preamble without its empty line, or an unknown key.
    public init(name: String) throws {
        self.name = name
        guard let contents = FileManager.default.contents(atPath: Self.directory + "/" + name) else {
            throw Malformed(description: "\(name): cannot be read")
        }
        var rest = [UInt8](contents)[...]
        while true {
            guard let newline = rest.firstIndex(of: UInt8(ascii: "\n")) else {
                throw Malformed(description: "\(name): no empty line after the preamble")
            }
            let line = String(decoding: rest[rest.startIndex..<newline], as: UTF8.self)
            rest = rest[(newline + 1)...]
            if line.isEmpty { break }
            guard let separator = line.firstRange(of: ": ") else { throw Malformed(description: "\(name): '\(line)'") }
            let (key, value) = (String(line[..<separator.lowerBound]), String(line[separator.upperBound...]))
            switch key {
            case "expect": expect = value
            case "payload": payloadHash = Self.bytes(hex: value)
            case "file key": fileKey = Self.bytes(hex: value)
            case "identity": identities.append(value)
            case "compressed": compressed = true
            case "comment", "passphrase", "armored": break
            default: throw Malformed(description: "\(name): unknown preamble key '\(key)'")
            }
        }
        file = compressed ? try Self.zlibDecompress(Array(rest), name: name) : Array(rest)
    }

    /// zlib's inflate, through Python's `zlib` (Foundation on Linux has none).
    static func zlibDecompress(_ bytes: [UInt8], name: String) throws -> [UInt8] {
        guard let python = findTool("python3") else { throw Malformed(description: "\(name): python3 is needed to inflate it") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read()))"]
        let output = Pipe(), input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        try process.run()
        input.fileHandleForWriting.write(Data(bytes))
        try input.fileHandleForWriting.close()
        let inflated = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Malformed(description: "\(name): does not inflate") }
        return Array(inflated)
    }

    /// The names of the vectors that start with one of `prefixes`, sorted.
    public static func names(_ prefixes: [String]) -> [String] {
        let all = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return all.filter { name in prefixes.contains { name.hasPrefix($0) } }.sorted()
    }

    /// The bytes of a hex string (the vectors' and the tests' own fixtures).
    public static func bytes(hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}

import Testing

@testable import VaultCore
@testable import VaultSodium

@Suite("SecureBytes")
struct SecureBytesTests {
    /// The agent's spare regions (``SecureBytes/keepSpareRegions(_:)``): a freed region comes back, zeroed, only
    /// for its own size, and at most as many are kept as asked.
    @Test("kept spare regions come back zeroed, for their own size only")
    func spareRegions() {
        func address(_ bytes: SecureBytes) -> UInt { bytes.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) } }
        SecureBytes.keepSpareRegions(2)
        defer { SecureBytes.keepSpareRegions(0) }
        // Sizes no other test allocates, so that a test running beside this one takes none of them.
        var first: SecureBytes? = SecureBytes(count: 9_973) { $0.initializeMemory(as: UInt8.self, repeating: 0xA5) }
        let firstAddress = address(first!)
        first = nil
        var seen: [UInt8] = []
        let again = SecureBytes(count: 9_973) { seen = Array($0); $0.initializeMemory(as: UInt8.self, repeating: 1) }
        #expect(address(again) == firstAddress)
        #expect(seen == [UInt8](repeating: 0, count: 9_973))
        #expect(again == SecureBytes([UInt8](repeating: 1, count: 9_973)))
        // Another size never gets it (its bytes must end at the region's guard page).
        var other: SecureBytes? = SecureBytes(count: 9_967) { $0.initializeMemory(as: UInt8.self, repeating: 2) }
        let otherAddress = address(other!)
        other = nil
        #expect(address(SecureBytes(count: 9_971) { _ in }) != otherAddress)
    }

    @Test("the spare regions kept: at most the limit, none larger than a frame, the limit lowered frees the rest")
    func spareRegionLimits() {
        var spares = Sodium.SpareRegions()
        let regions = (1...3).map { UnsafeMutableRawPointer(bitPattern: UInt($0) << 12)! }
        var kept = spares.keep(regions[0], byteCount: 64)
        #expect(!kept, "none kept before a limit is set")
        var evicted = spares.resize(to: 2)
        #expect(evicted == [])
        kept = spares.keep(regions[0], byteCount: 64) && spares.keep(regions[1], byteCount: 128)
        #expect(kept)
        kept = spares.keep(regions[2], byteCount: 64)
        #expect(!kept, "a third past a limit of two")
        #expect(!spares.keeps(byteCount: Sodium.SpareRegions.largestByteCount + 1))
        var taken = spares.take(byteCount: 96)
        #expect(taken == nil)
        taken = spares.take(byteCount: 128)
        #expect(taken == regions[1])
        taken = spares.take(byteCount: 128)
        #expect(taken == nil)
        kept = spares.keep(regions[2], byteCount: 64)
        #expect(kept)
        evicted = spares.resize(to: 1)
        #expect(evicted == [UInt(bitPattern: regions[2])])
        taken = spares.take(byteCount: 64)
        #expect(taken == regions[0])
    }

    @Test("description and debugDescription are redacted")
    func redacted() {
        let secret = SecureBytes(string: "hunter2-secret")
        #expect(secret.description == "SecureBytes(14 bytes, redacted)")
        #expect(secret.debugDescription == secret.description)
        #expect(!"\(secret)".contains("hunter2"))
        #expect(!String(reflecting: secret).contains("hunter2"))
        #expect(!String(describing: [secret]).contains("hunter2"))
    }

    @Test("equality compares contents and length")
    func equality() {
        #expect(SecureBytes([1, 2, 3]) == SecureBytes([1, 2, 3]))
        #expect(SecureBytes([1, 2, 3]) != SecureBytes([1, 2, 4]))
        #expect(SecureBytes([1, 2, 3]) != SecureBytes([1, 2]))
        #expect(SecureBytes([1, 2]) != SecureBytes([1, 2, 0]))
        #expect(SecureBytes([]) == SecureBytes(string: ""))
        #expect(SecureBytes([]) != SecureBytes([0]))
        #expect(SecureBytes(string: "é") == SecureBytes([0xC3, 0xA9]))
    }

    @Test("initialisers copy the bytes; stringValue decodes UTF-8 only")
    func contents() {
        let bytes = SecureBytes(Array(0...255).map { UInt8($0) })
        #expect(bytes.count == 256)
        #expect(bytes.unprotectedBytes == Array(0...255).map { UInt8($0) })
        #expect(bytes.stringValue == nil)
        #expect(SecureBytes(string: "pässwörd").stringValue == "pässwörd")
        #expect(SecureBytes(string: "").count == 0)
        #expect(SecureBytes(string: "").stringValue == "")
        let filled = SecureBytes(count: 4) { buffer in
            for index in 0..<4 { buffer[index] = UInt8(index * 3) }
        }
        #expect(filled.unprotectedBytes == [0, 3, 6, 9])
        #expect(filled.withUnsafeBytes { $0.count } == 4)
    }

    @Test("appending builds the bytes front to back: raw bytes, a byte, a secret, text, little-endian integers")
    func appending() {
        let secret = SecureBytes(string: "s3cret")
        let built = SecureBytes(capacity: 64) { out in
            #expect(out.count == 0)
            ([0xFF, 0x00] as [UInt8]).withUnsafeBytes { out.append($0) }
            out.append(UInt8(ascii: "="))
            out.append(secret)
            out.append("é\n")
            out.append(littleEndian: UInt16(0x0102))
            out.append(littleEndian: UInt32(7))
            #expect(out.count == 2 + 1 + 6 + 3 + 2 + 4)
        }
        #expect(built.unprotectedBytes == [0xFF, 0x00, 0x3D] + Array("s3cret".utf8) + [0xC3, 0xA9, 0x0A, 0x02, 0x01, 7, 0, 0, 0])
        #expect(built.count == 18)
        #expect(built == SecureBytes(built.unprotectedBytes))
    }

    @Test("the result holds what was appended: less than the capacity, exactly the capacity, or nothing")
    func appendingToCapacity() {
        #expect(SecureBytes(capacity: 10) { $0.append("abc") }.unprotectedBytes == Array("abc".utf8))
        #expect(SecureBytes(capacity: 3) { $0.append("abc") }.unprotectedBytes == Array("abc".utf8))
        #expect(SecureBytes(capacity: 3) { _ in }.count == 0)
        #expect(SecureBytes(capacity: 0) { out in [UInt8]().withUnsafeBytes { out.append($0) } }.count == 0)
    }

    @Test("a throwing build propagates its error")
    func appendingThrows() {
        #expect(throws: Refused.self) {
            _ = try SecureBytes(capacity: 8) { (out) throws(Refused) in
                out.append("abc")
                throw Refused()
            }
        }
    }

    @Test("appending past the capacity traps")
    func appendingPastCapacity() async {
        await #expect(processExitsWith: .failure) {
            _ = SecureBytes(capacity: 2) { $0.append("abc") }
        }
        await #expect(processExitsWith: .failure) {
            _ = SecureBytes(capacity: 0) { $0.append(UInt8(1)) }
        }
    }

    struct Refused: Error {}

    @Test("a throwing initializer propagates its error")
    func throwingInitializer() {
        #expect(throws: Refused.self) {
            _ = try SecureBytes(count: 8) { (_) throws(Refused) in throw Refused() }
        }
    }

    @Test("random bytes are random")
    func random() {
        let a = SecureBytes.random(count: 32)
        let b = SecureBytes.random(count: 32)
        #expect(a.count == 32)
        #expect(a != b)
        #expect(a.unprotectedBytes.contains { $0 != 0 })
        #expect(SecureBytes.random(count: 0).count == 0)
    }
}

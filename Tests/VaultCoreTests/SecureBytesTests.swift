import Testing

@testable import VaultCore

@Suite("SecureBytes")
struct SecureBytesTests {
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

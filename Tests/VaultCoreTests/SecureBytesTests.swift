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

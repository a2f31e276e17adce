// libFuzzer target: format version 2 (VaultDocument) with a fixed data key (no KDF in the loop).
//
// The input is first opened as a whole file (header, stanzas, MAC: mutated seeds mostly stop at the MAC). Then, so
// that the fuzzer reaches the body parser, the input is read as a body plaintext behind a fixed header, sealed
// under the fixed key (bound to the header unless the last input byte is odd, which keeps the unbound path
// covered) and opened again. Every document that opens must survive a seal/open round trip unchanged (checked
// by the entry point). A thrown VaultError is a normal outcome.
@_spi(Fuzzing) import VaultCore

let fixedKey = [UInt8](repeating: 0x42, count: 32)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDocument(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? FuzzEntryPoints.openDocument(bytes, dataKey: fixedKey)
    let bind = (bytes.last ?? 0) & 1 == 0
    if let sealed = FuzzEntryPoints.sealedDocument(fromPlaintext: bytes, dataKey: fixedKey, bindHeader: bind) {
        _ = try? FuzzEntryPoints.openDocument(sealed, dataKey: fixedKey)
    }
    return 0
}

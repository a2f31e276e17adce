// libFuzzer target: a full open with a fixed data key (no KDF in the loop).
//
// The input is first opened as it is (header parse, body MAC, binding, entries: mutated seeds mostly stop at
// the MAC). Then, so that the fuzzer reaches the entry parser, the input is read as header ‖ body nonce ‖
// plaintext, sealed under the fixed key (with the plaintext bound to the header unless the last input byte is
// odd, which keeps the unbound path covered) and opened again. A thrown VaultError is a normal outcome.
@_spi(Fuzzing) import VaultCore

let fixedKey = [UInt8](repeating: 0x42, count: 32)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOpen(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? FuzzEntryPoints.openBody(bytes, dataKey: fixedKey)
    let bind = (bytes.last ?? 0) & 1 == 0
    if let sealed = FuzzEntryPoints.sealedFile(fromInput: bytes, dataKey: fixedKey, bindHeader: bind) {
        _ = try? FuzzEntryPoints.openBody(sealed, dataKey: fixedKey)
    }
    return 0
}

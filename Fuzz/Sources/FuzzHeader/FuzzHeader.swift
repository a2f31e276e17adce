// libFuzzer target: the vault header parser (VaultFormat.Header.parse) under both KDF policies.
// A thrown VaultError is a normal outcome; a crash, a sanitizer report or a leak is a bug.
@_spi(Fuzzing) import VaultCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHeader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? FuzzEntryPoints.parseHeader(bytes)
    return 0
}

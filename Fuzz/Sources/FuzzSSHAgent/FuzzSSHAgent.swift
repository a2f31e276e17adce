// libFuzzer target: the ssh-agent socket's framing and requests (SSHAgentWire, SSHAgentService over a key ring
// holding an Ed25519 key): any bytes a process of the user can send on one connection.
// A refused frame or a failure answer is a normal outcome; a crash, a sanitizer report or a leak is a bug.
@_spi(Fuzzing) import VaultSSHAgent

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSSHAgent(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    SSHAgentFuzzEntryPoints.serve(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

// libFuzzer target: the agent's wire format, as the agent reads a request (AgentWire.Message, every field
// accessor, the batch of changes of a write) and the round trip of a batch that decodes.
// A thrown AgentError or VaultError is a normal outcome; a crash, a sanitizer report or a leak is a bug.
@_spi(Fuzzing) import VaultAgent

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAgentWire(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    AgentFuzzEntryPoints.decodeRequest(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

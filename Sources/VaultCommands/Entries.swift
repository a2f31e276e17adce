import ArgumentParser
import FoundationEssentials
import Glibc
import OTPAuth
import VaultAgent
import VaultCore
import VaultTerminal

/// Refuses a NAME argument that is not valid UTF-8: ArgumentParser hands over Strings, in which invalid bytes
/// became U+FFFD, so two different names (`k\xff`, `k\xfe`) would be the same entry. The raw argv bytes tell.
package func checkNameArgumentIsUTF8(_ name: String) throws {
    for index in 1..<Int(CommandLine.argc) {
        guard let argument = CommandLine.unsafeArgv[index] else { continue }
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(argument).assumingMemoryBound(to: UInt8.self),
            count: strlen(argument))
        // Decoding repairs (U+FFFD) exactly the bytes that are not valid UTF-8, so the argument is valid when
        // its decoding has the same bytes. (`String(validating:as:)` is generic: its unspecialised code was 1.4 %
        // of a `vault get` through the agent.)
        let decoded = String(decoding: bytes, as: UTF8.self)
        guard !decoded.utf8.elementsEqual(bytes) else { continue }
        if decoded == name {
            throw VaultError.invalidEntryName(reason: "the name is not valid UTF-8")
        }
    }
}

/// The entry's name: the NAME argument, or with `--name-fd N` the first line of descriptor N, so that the name is
/// not on the command line (where `ps` shows it to every local user; SECURITY.md).
package struct EntryNameOptions: ParsableArguments {
    package init() {}

    @Argument(
        help: "The entry's name (or give it with --name-fd, off the command line).",
        completion: NameCompletion.existingEntry)
    package var name: String?

    @Option(
        name: .customLong("name-fd"),
        help: ArgumentHelp("Read the entry's name from this file descriptor (first line), not from the command line.", valueName: "n"))
    package var nameFD: Int32?

    package func validate() throws {
        switch (name, nameFD) {
        case (nil, nil): throw ValidationError("Missing expected argument '<name>'")  // as ArgumentParser words it
        case (.some, .some): throw ValidationError("give the entry's name once: NAME or --name-fd N, not both")
        default: break
        }
        if let nameFD, nameFD < 0 { throw ValidationError("--name-fd must be a file descriptor (0 or more)") }
    }

    /// The name, checked to be valid UTF-8 (``checkNameArgumentIsUTF8(_:)`` for the argument; the descriptor's
    /// bytes are refused as a whole when they are not).
    package func resolve() throws -> String {
        if let name {
            try checkNameArgumentIsUTF8(name)
            return name
        }
        return try Self.names(fromFD: nameFD!, firstLineOnly: true).first ?? ""
    }

    /// The names in descriptor `fd`, one a line (empty lines skipped), or its first line only; each must be
    /// valid UTF-8.
    package static func names(fromFD fd: Int32, firstLineOnly: Bool = false) throws -> [String] {
        try SecretInput.checkPassed(fd: fd)
        let bytes = try SecretInput.read(
            fd: fd, limit: firstLineOnly ? 64 << 10 : 16 << 20, untilNewline: firstLineOnly,
            name: "file descriptor \(fd)")
        return try bytes.unprotectedBytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: !firstLineOnly)
            .map { line in
                guard let text = String(validating: line, as: UTF8.self) else {
                    throw VaultError.invalidEntryName(reason: "the name is not valid UTF-8")
                }
                return text
            }
    }
}

/// Writes `secret` to stdout from guarded memory: exact to a pipe; on a terminal with a newline after it, in the
/// same write (the shell's prompt would otherwise follow the secret on its line, and two `vault get`s on one
/// terminal would print value, value, newline, newline). `get` and `generate --print` print through it.
package func writeSecret(_ secret: SecureBytes) throws {
    guard isatty(1) == 1 else { return try secret.withUnsafeBytes { try writeToStdout($0) } }
    let line = SecureBytes(capacity: secret.count + 1) { line in
        line.append(secret)
        line.append(UInt8(ascii: "\n"))
    }
    try line.withUnsafeBytes { try writeToStdout($0) }
}

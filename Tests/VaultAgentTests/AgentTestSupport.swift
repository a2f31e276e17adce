import Foundation
import VaultTestSupport
import Synchronization
import Testing
@testable import VaultAgent
import VaultCore

// The agent's unit layer: a key ring on a clock moved by hand and the service called with requests built as a
// client builds them. Vaults are real files in a fresh private directory, with the cheap test KDF.

/// A clock that stands still until a test moves it.
final class TestClock: AgentClock {
    private let seconds = Mutex<Double>(1_000)

    var now: Double { seconds.withLock { $0 } }

    func advance(by interval: Double) {
        seconds.withLock { $0 += interval }
    }
}

/// A fresh private directory (0700), removed with everything in it when the value goes away; its path canonical
/// (no `//`, no link), as a client names a vault to the agent.
final class AgentTestDirectory: Sendable {
    private let directory = TemporaryDirectory(prefix: "vault-agent-tests")
    let path: String

    init() { path = RollbackGuard.canonicalPath(directory.path) }

    func file(_ name: String) -> String { path + "/" + name }
}

/// An error answer's fields.
struct ErrorAnswer: Equatable, CustomStringConvertible {
    var code: String?
    var exitCode: UInt64?
    var message: String?
    var hint: String?
    var errorCase: String?
    var arguments: [String]

    init(_ answer: AgentWire.Message) {
        code = answer.string(.code)
        exitCode = answer.number(.exitCode)
        message = answer.string(.message)
        hint = answer.string(.hint)
        errorCase = answer.string(.errorCase)
        arguments = answer.strings(.argument)
    }

    init(code: String = "error", exitCode: UInt64 = 1, message: String, errorCase: String? = nil, arguments: [String] = []) {
        (self.code, self.exitCode, self.message, self.hint, self.errorCase, self.arguments) = (code, exitCode, message, nil, errorCase, arguments)
    }

    /// A bad request as the library presents it (code `error`, exit code 1) with no ``VaultError`` case.
    static func badRequest(_ what: String) -> ErrorAnswer {
        ErrorAnswer(message: "the agent refused the request: \(what)")
    }

    /// A ``VaultError`` as the library presents it, with its case and arguments.
    static func vault(_ error: VaultError) -> ErrorAnswer {
        let (name, arguments) = AgentErrorWire.encode(error)
        return ErrorAnswer(message: String(describing: error), errorCase: name, arguments: arguments)
    }

    var description: String { "\(code ?? "-") \(exitCode.map(String.init) ?? "-") \(message ?? "-") \(errorCase ?? "-") \(arguments)" }
}

/// A key ring on a ``TestClock``, the service over it, and vaults to unlock in a private directory.
final class AgentFixture {
    static let passphrase = "correct horse battery staple"
    let directory: AgentTestDirectory
    let clock: TestClock
    let ring: KeyRing
    let service: AgentService
    private let logged: LogLines

    /// Lines logged, in order.
    final class LogLines: Sendable {
        let lines = Mutex<[String]>([])
    }

    init(allowsInsecureKDFForTesting: Bool = true) {
        let directory = AgentTestDirectory(), clock = TestClock(), logged = LogLines()
        (self.directory, self.clock, self.logged) = (directory, clock, logged)
        let log: @Sendable (String) -> Void = { line in logged.lines.withLock { $0.append(line) } }
        let ring = KeyRing(clock: clock, log: log)
        self.ring = ring
        var configuration = AgentService.Configuration(socketPath: directory.file("agent.sock"))
        configuration.allowsInsecureKDFForTesting = allowsInsecureKDFForTesting
        configuration.rollbackProtection = RollbackProtection(stateDirectory: directory.file("state"))
        service = AgentService(ring: ring, configuration: configuration, log: log)
    }

    /// Every line logged so far.
    var log: [String] { logged.lines.withLock { $0 } }

    var storeOptions: SecureKeyValueStore.Options {
        var options = SecureKeyValueStore.Options.insecureForTesting
        options.rollbackProtection = RollbackProtection(stateDirectory: directory.file("state"))
        return options
    }

    /// A new vault `name` of format `version` holding `entries`, closed again; its path.
    @discardableResult
    func makeVault(_ name: String = "test.vault", version: Int = 1, entries: [(String, String)] = []) throws -> String {
        let path = directory.file(name)
        let passphrase = SecureBytes(string: Self.passphrase)
        if version == 2 {
            _ = try VaultOpener.create(path: path, passphrase: passphrase, options: storeOptions)
        } else {
            let store = FormatOneStore(path: path, options: storeOptions)
            try store.open(with: passphrase, createIfMissing: true)
            store.close()
        }
        if !entries.isEmpty {
            let vault = try VaultOpener.open(path: path, passphrase: passphrase, options: storeOptions)
            defer { vault.close() }
            try vault.update { changes in for (name, value) in entries { try changes.put(SecureBytes(string: value), forKey: name) } }
        }
        return path
    }

    /// The answer to a request of `operation` with the fields `fill` writes (as ``AgentClient`` sends them).
    func ask(_ operation: AgentOperation, version: UInt8 = AgentWire.version, _ fill: (AgentWire.Writer) -> Void = { _ in }) throws -> AgentWire.Message {
        let request = AgentWire.Writer(version: version, kind: operation.rawValue)
        fill(request)
        return try answer(request)
    }

    /// The answer to the request `writer` holds, as a client reads it.
    func answer(_ request: AgentWire.Writer) throws -> AgentWire.Message {
        let (reply, ends) = service.answer(try AgentWire.Message(payload: request.buffer.secureBytes()))
        #expect(!ends)
        return try AgentWire.Message(payload: reply.buffer.secureBytes())
    }

    /// The answer to `operation` on the vault at `path`, with more fields from `fill`.
    func ask(_ operation: AgentOperation, path: String, _ fill: (AgentWire.Writer) -> Void = { _ in }) throws -> AgentWire.Message {
        try ask(operation) { writer in
            writer.field(.path, path)
            fill(writer)
        }
    }

    /// Unlocks `path` with the test passphrase (or `passphrase`), `idle` and `max` seconds; the answer.
    @discardableResult
    func unlock(_ path: String, passphrase: String = AgentFixture.passphrase, idle: UInt64 = 60, max: UInt64 = 3600,
                testKDF: Bool = true) throws -> AgentWire.Message {
        try ask(.unlock, path: path) { writer in
            writer.field(.passphrase, passphrase)
            writer.field(.idleSeconds, idle)
            writer.field(.maxSeconds, max)
            writer.field(.flags, testKDF)
        }
    }

    /// The value of `name` through the service; `nil` when the answer has none. Fails the test unless the answer
    /// is ok.
    func get(_ path: String, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String? {
        let answer = try ask(.get, path: path) { $0.field(.name, name) }
        try #require(status(answer) == .ok, "get \(name): \(ErrorAnswer(answer))", sourceLocation: sourceLocation)
        return answer.secret(.value).map { String(decoding: $0.unprotectedBytes, as: UTF8.self) }
    }
}

func status(_ answer: AgentWire.Message) -> AgentStatus? { AgentStatus(rawValue: answer.kind) }

import Foundation
import Testing
@testable import VaultAgent
import VaultCore

/// An agent in this process: the fixture's service behind a real listener on a socket in the fixture's
/// directory, served on a thread of its own until ``stop()``.
final class InProcessAgent {
    let socketPath: String
    let listener: AgentListener<AgentService>
    private let done = DispatchSemaphore(value: 0)
    private var stopped = false

    init(_ fixture: AgentFixture, exitWhenEmptyAfter: Double? = nil) throws {
        socketPath = fixture.directory.file("run/agent.sock")
        listener = try AgentListener(socketPath: socketPath, service: fixture.service, exitWhenEmptyAfter: exitWhenEmptyAfter, log: { _ in })
        let (listener, done) = (self.listener, self.done)
        startDetachedThread {
            try? listener.run()
            done.signal()
        }
    }

    /// A client connected to it, once it listens (polled, at most 5 s).
    func client() throws -> AgentClient {
        for _ in 0..<500 {
            if let client = try? AgentClient.connect(socketPath: socketPath, timeoutSeconds: 1) { return client }
            usleep(10_000)
        }
        throw AgentError.noAgent(socket: socketPath)
    }

    /// Whether every connection has been let go (polled, at most 5 s).
    func waitUntilNoConnection() -> Bool {
        for _ in 0..<500 {
            if listener.connectionCount == 0 { return true }
            usleep(10_000)
        }
        return false
    }

    /// Whether ``AgentListener/run()`` returned within `seconds`.
    func ended(within seconds: Double) -> Bool {
        guard !stopped else { return true }
        stopped = done.wait(timeout: .now() + seconds) == .success
        return stopped
    }

    /// Stops it and waits (at most 10 s) until it has.
    func stop() {
        listener.stop()
        _ = ended(within: 10)
    }

    deinit { stop() }
}

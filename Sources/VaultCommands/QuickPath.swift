import ArgumentParser
import VaultAgent
import VaultCore
#if canImport(Glibc)
import Glibc
#endif

/// `get`, `put` and `list` on a vault the agent holds, run without ArgumentParser's parse.
///
/// ArgumentParser builds a command's arguments by reflection (`Mirror` over the property wrappers, generic
/// metadata instantiated with conformance checks). In a static binary every first conformance lookup scans the
/// whole conformance table, so the parse was about 40 % of the CPU of a `vault get` through the agent
/// (Benchmarks/README.md). The daily verbs take this path instead when their command line is one of the plain
/// forms below; every other command line, and every case where the agent does not hold the vault, goes to
/// ArgumentParser unchanged, having read and written nothing.
///
/// The plain forms: the verb first, then in any order `--vault PATH` (or `--vault=PATH`, at most once), `--json`
/// (at most once), for `put` also `--no-clobber` and `--trim-newline` (each at most once), and for `get` and `put`
/// one NAME that is neither empty nor starts with `-`. Anything else (`--help`, `--`, `--name-fd`, a passphrase
/// option, `--accept-rollback`, a second NAME, …) is ArgumentParser's. The verbs' work is the same code either
/// way (``Get/printValue(of:in:json:)``, ``Put/store(_:_:json:in:)``,
/// ``List/printNames(of:json:)``), so output, errors and exit codes are the same bytes (`QuickPathTests`).
package enum QuickPath {
    /// A command line in one of the plain forms.
    package struct Invocation: Equatable, Sendable {
        package enum Verb: Equatable, Sendable {
            case get(name: String)
            case put(name: String, noClobber: Bool, trimNewline: Bool)
            case list
        }

        package var verb: Verb
        /// `--vault`, if given.
        package var vaultPath: String?
        package var json: Bool

        package init(verb: Verb, vaultPath: String?, json: Bool) {
            self.verb = verb
            self.vaultPath = vaultPath
            self.json = json
        }
    }

    /// The invocation `arguments` (without the program's name) spell, or `nil` when they are not one of the
    /// plain forms.
    package static func parse(_ arguments: [String]) -> Invocation? {
        guard let verb = arguments.first, ["get", "put", "list"].contains(verb) else { return nil }
        var vaultPath: String?
        var json = false, noClobber = false, trimNewline = false
        var names: [String] = []
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            switch argument {
            case "--vault":
                guard vaultPath == nil, index < arguments.count, !arguments[index].hasPrefix("-") else { return nil }
                vaultPath = arguments[index]
                index += 1
            case _ where argument.hasPrefix("--vault="):
                guard vaultPath == nil else { return nil }
                vaultPath = String(argument.dropFirst("--vault=".count))
            case "--json":
                guard !json else { return nil }
                json = true
            case "--no-clobber" where verb == "put":
                guard !noClobber else { return nil }
                noClobber = true
            case "--trim-newline" where verb == "put":
                guard !trimNewline else { return nil }
                trimNewline = true
            default:
                guard !argument.isEmpty, !argument.hasPrefix("-") else { return nil }
                names.append(argument)
            }
        }
        switch (verb, names.count) {
        case ("get", 1): return Invocation(verb: .get(name: names[0]), vaultPath: vaultPath, json: json)
        case ("put", 1):
            return Invocation(
                verb: .put(name: names[0], noClobber: noClobber, trimNewline: trimNewline), vaultPath: vaultPath,
                json: json)
        case ("list", 0): return Invocation(verb: .list, vaultPath: vaultPath, json: json)
        default: return nil
        }
    }

    /// The test hook `VAULT_TESTING_REQUIRE_QUICK_PATH=1`: a command the quick path leaves to ArgumentParser fails
    /// instead (exit 70, ``requiredButDeclinedExitCode``), so that a test can tell which path ran; the output of
    /// the two paths is otherwise the same by design.
    package static let requireVariable = "VAULT_TESTING_REQUIRE_QUICK_PATH"
    package static let requiredButDeclinedExitCode: Int32 = 70

    /// Runs `invocation` (a plain form: ``parse(_:)``) and exits when the agent holds the vault; otherwise returns,
    /// having read nothing from stdin and written nothing.
    package static func runIfAgentHoldsVault(_ invocation: Invocation) {
        switch invocation.verb {
        case .get(let name) where (try? checkNameArgumentIsUTF8(name)) != nil:
            runInOneRoundTrip(invocation) { vault in
                let value = try vault.getBytes(name)
                return { try Get.printValue(value, of: name, in: vault, json: invocation.json) }
            }
        case .list:
            runInOneRoundTrip(invocation) { vault in
                let names = try List.Names(of: vault, json: invocation.json)
                return { try names.print() }
            }
        default:
            guard let vault = heldVault(invocation) else { return declined() }
            run(vault.invocation, on: vault.vault)
        }
    }

    /// `get` and `list` in one round trip: their one request is sent with no probe before it, since the agent's
    /// answer says whether it holds the vault. `read` makes that request and returns what prints its answer.
    /// Locked, no agent, no answer within a probe's 2 s (an agent stopped), another protocol version or a broken
    /// answer: declined, as the probe's answers were; the agent's own failure (a corrupt file, say) is the verb's,
    /// reported as before. (A `get` of a name that is not valid UTF-8 takes the probe first, as before: it must be
    /// refused, not sent with U+FFFD in it.)
    private static func runInOneRoundTrip(_ invocation: Invocation, read: (AgentVault) throws -> () throws -> Void) {
        guard VaultOptions.problem(vaultPath: invocation.vaultPath) == nil, let client = try? AgentClient.connect() else {
            return declined()
        }
        let path = VaultOptions.resolvedPath(invocation.vaultPath)
        let vault = client.vaultWithoutProbe(at: path, firstAnswerTimeoutSeconds: 2)
        let output: () throws -> Void
        do {
            output = try read(vault)
        } catch let error as AgentError {
            guard case .remote = error else { return declined() }
            output = { throw error }
        } catch {
            output = { throw error }
        }
        exitReporting(json: invocation.json) {
            defer { vault.close() }
            try output()
        }
    }

    /// A command line the quick path does not take (not a plain form, or the agent does not hold the vault) goes
    /// to the parser; under the test hook (``requireVariable``) it fails instead.
    package static func declined() {
        guard Posix.environment(requireVariable) == "1" else { return }
        writeToStderr("vault: the quick path left this command to the parser (\(requireVariable) is set)\n")
        exit(requiredButDeclinedExitCode)
    }

    /// The invocation and the vault the agent holds for it, or `nil` when the quick path does not apply.
    private static func heldVault(_ invocation: Invocation) -> (invocation: Invocation, vault: any KeyValueVault)? {
        guard VaultOptions.problem(vaultPath: invocation.vaultPath) == nil else { return nil }
        let path = VaultOptions.resolvedPath(invocation.vaultPath)
        // As ``AgentAccess/vault(for:mayPrompt:)``: no agent, a locked vault, an unsafe socket directory or an
        // agent of another version all go to the ordinary path, which reports what needs reporting.
        guard let client = try? AgentClient.connect(), let held = try? client.vault(at: path) else { return nil }
        return (invocation, held)
    }

    /// Runs `invocation` on `vault` and exits.
    private static func run(_ invocation: Invocation, on vault: any KeyValueVault) -> Never {
        exitReporting(json: invocation.json) {
            switch invocation.verb {
            case .get(let name):
                try checkNameArgumentIsUTF8(name)
                defer { vault.close() }
                try Get.printValue(of: name, in: vault, json: invocation.json)
            case .put(let name, let noClobber, let trimNewline):
                try checkNameArgumentIsUTF8(name)
                var how = Put.Manner()
                how.noClobber = noClobber
                how.trimNewline = trimNewline
                try Put.store(name, how, json: invocation.json) { vault }
            case .list:
                defer { vault.close() }
                try List.printNames(of: vault, json: invocation.json)
            }
        }
    }

    /// Runs `body`, reports its error as every verb does, and exits.
    private static func exitReporting(json: Bool, _ body: () throws -> Void) -> Never {
        do {
            try reportingErrors(json: json, body)
        } catch let code as ExitCode {
            exit(code.rawValue)
        } catch {
            exit(Exit.failure)  // reportingErrors turns every other error into an ExitCode
        }
        exit(0)
    }
}

import ArgumentParser
import Dispatch
import FoundationEssentials
import VaultCore
import VaultTerminal
#if canImport(Glibc)
import Glibc
#endif

/// `vault run [--env NAME=ENTRY]… [--env-file FILE]… [--stdin ENTRY] [--file NAME=ENTRY]… -- CMD ARGS…`; ENTRY may be
/// `vault://ENTRY#FIELD`, one field of an entry (``SecretReference``).
package struct RunCommand: ParsableCommand {
    package init() {}

    package static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run CMD with secrets from the vault: in its environment, on its stdin, or in in-memory files.",
        discussion: """
            ENTRY is an entry's name (its value: the password field) or vault://ENTRY#FIELD for any field of it, e.g. --env DB_USER=vault://servers/db#username (the field after the one '#'; '#' and '%' inside a name are written %23 and %25), or vault-otp://ENTRY for its current one-time code (as 'vault otp ENTRY' prints it; vault://ENTRY#otp is the otpauth:// URI stored); the same in --env-file, --stdin, --file and --mount-template's {{ vault "ENTRY" "FIELD" }} and {{ otp "ENTRY" }}.

            --env NAME=ENTRY sets NAME to the entry's value; --env-file FILE reads NAME=ENTRY lines as dotenv files are written (LF or CRLF, blank lines and # comments skipped, export and quotes allowed; a bad line is named by its number only); --stdin ENTRY feeds the value on CMD's stdin; --file NAME=ENTRY sets NAME to /dev/fd/N, an in-memory file (memfd, never on disk, sealed) holding the value. No secret is ever on a command line. VAULT_PASSPHRASE is not passed on.

            vault exits with CMD's status (or dies of the signal that ended it); SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to vault are passed to CMD, and Ctrl-C on the terminal reaches CMD once (the terminal sends it to both; vault passes on only a SIGINT sent to it alone). A missing entry is an error naming it (exit 2) and CMD does not run.

            --mount PATH serves a .env of the variables (or --mount-template's template, filled) through a FIFO made at PATH (0600; an existing PATH is refused, exit 7, except a FIFO of yours that nothing serves, left by a run that was killed: it is replaced, with a note) to every reader while CMD runs, and removes it when CMD ends: a file for tools that read .env, never on disk. Values are single-quoted unless they hold ', \\ or a line break (then double-quoted with escapes); a loader that expands ${NAME} expands it in a value too.
            """)

    @Option(name: .customLong("env"), help: ArgumentHelp("Set NAME to ENTRY's value.", valueName: "NAME=ENTRY"))
    var environment: [String] = []

    @Option(name: .customLong("env-file"), help: ArgumentHelp("NAME=ENTRY lines.", valueName: "path"))
    var environmentFiles: [String] = []

    @Option(name: .customLong("stdin"), help: ArgumentHelp("Feed ENTRY's value on CMD's stdin.", valueName: "entry"))
    var stdinEntry: String?

    @Option(name: .customLong("file"), help: ArgumentHelp("Set NAME to /dev/fd/N holding ENTRY's value.", valueName: "NAME=ENTRY"))
    var files: [String] = []

    @Flag(name: .customLong("mask"), help: "Replace every injected value in CMD's stdout and stderr by ******.")
    var mask = false

    @Option(
        name: .customLong("mount"),
        help: ArgumentHelp(
            "Serve a .env of the --env and --env-file variables (NAME=\"value\" lines) through a FIFO at PATH while CMD runs; removed at exit.",
            valueName: "path"))
    var mount: String?

    @Option(
        name: .customLong("mount-template"),
        help: ArgumentHelp("With --mount: serve this template instead, filled as 'vault inject' fills it.", valueName: "path"))
    var mountTemplate: String?

    @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
    var command: [String] = []

    @OptionGroup var options: VaultOptions

    package func validate() throws {
        guard !command.isEmpty else { throw ValidationError("give the command after --") }
        for mapping in environment + files { _ = try SecretReference.parse(Self.mapping(mapping).entry) }
        if let stdinEntry { _ = try SecretReference.parse(stdinEntry) }
        if mountTemplate != nil, mount == nil { throw ValidationError("--mount-template needs --mount PATH") }
        if let mount, mount.isEmpty { throw ValidationError("--mount needs a path") }
        if stdinEntry != nil, options.passphraseFD == 0 {
            throw ValidationError("--stdin feeds the command's stdin: use another --passphrase-fd")
        }
    }

    /// `NAME=ENTRY`, NAME a portable variable name.
    static func mapping(_ text: String) throws -> (name: String, entry: String) {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
            throw ValidationError("expected NAME=ENTRY, got '\(text)'")
        }
        let name = String(text[..<equals])
        let entry = String(text[text.index(after: equals)...])
        guard name.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || ($0 < 0x80 && (isalnum(Int32($0)) != 0)) }),
              let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first), !entry.isEmpty
        else { throw ValidationError("'\(name)' is not a variable name (letters, digits, _), or the entry is empty") }
        return (name, entry)
    }

    /// The largest --env-file read (its lines name entries; no secret is in it).
    static let maximumEnvFileByteCount = 16 << 20

    package func run() throws {
        var status: Int32 = 0
        try reportingErrors(json: options.json) {
            var variables = try environment.map(Self.mapping).map { ($0.name, try SecretReference.parse($0.entry)) }
            let onCommandLine = Set(variables.map(\.1))
            // Where each --env-file mapping came from: a missing entry is named by its file and line, not shown.
            var fromFiles: [SecretReference: (file: String, line: Int)] = [:]
            for file in environmentFiles {
                let bytes = try Posix.readFile(file, limit: Self.maximumEnvFileByteCount)
                let parsed: EnvFile
                do { parsed = try EnvFile(bytes) } catch let error as EnvFile.Malformed {
                    throw CLIError.message(
                        "\(file): line \(error.line): \(error.reason) (the line is not shown: it may hold a secret)",
                        exitCode: Exit.usage)
                }
                for line in parsed.lines {
                    guard let reference = try? SecretReference.parse(line.entry) else {
                        throw CLIError.message(
                            "\(file): line \(line.number): expected ENTRY, vault://ENTRY#FIELD or vault-otp://ENTRY after '=' (the line is not shown: it may hold a secret)",
                            exitCode: Exit.usage)
                    }
                    variables.append((line.name, reference))
                    if fromFiles[reference] == nil { fromFiles[reference] = (file, line.number) }
                }
            }
            let fileMappings = try files.map(Self.mapping).map { ($0.name, try SecretReference.parse($0.entry)) }
            let stdinReference = try stdinEntry.map(SecretReference.parse)
            var template: (bytes: [UInt8], pieces: [Template.Piece])?
            if let mountTemplate {
                let bytes = try Posix.readFile(mountTemplate, limit: Inject.maximumTemplateByteCount)
                template = (bytes, try Template.parse(bytes))
            }
            // Every value first, then the vault is closed (its key zeroed) before the command starts.
            var values: [SecretReference: SecureBytes] = [:]
            let references = variables.map(\.1) + fileMappings.map(\.1) + (stdinReference.map { [$0] } ?? [])
                + Template.references(template?.pieces ?? [])
            try SecretReference.runningCodesInVaultNet(references)
            try withVault(options) { vault in
                values = try SecretReference.values(references, in: vault) { reference in
                    if let origin = fromFiles[reference], !onCommandLine.contains(reference) {
                        throw CLIError.message(
                            "\(origin.file): line \(origin.line): no such entry in vault '\(vault.path)' (the entry's name is not shown: a .env file of values would show a secret)",
                            exitCode: Exit.notFound)
                    }
                    throw CLIError.missingEntry(reference.entry, in: vault)
                }
            }
            var child = ChildCommand(arguments: command)
            for (name, reference) in variables {
                guard let value = values[reference], !value.withUnsafeBytes({ $0.contains(0) }) else {
                    throw CLIError.message(
                        "\(reference) contains a NUL byte and cannot be an environment variable (use --file or --stdin)",
                        exitCode: Exit.usage)
                }
                child.setSecret(name, value)
            }
            for (name, reference) in fileMappings {
                let fd = try InMemoryFile.make(name: "vault-" + reference.entry, contents: values[reference]!)
                child.inherit(fd)
                child.set(name, "/dev/fd/\(fd)")
            }
            child.stdinSecret = stdinReference.flatMap { values[$0] }
            if mask { child.maskedValues = Array(values.values) }
            var mounted: MountedFile?
            if let mount {
                let contents = template.map { Template.fill($0.pieces, of: $0.bytes, with: values) }
                    ?? MountedFile.dotenv(variables.map { ($0.0, values[$0.1]!) })
                mounted = try MountedFile(path: mount, contents: contents)
            }
            defer { mounted?.remove() }
            status = try child.run()
        }
        // Exit as the command did: its code, or the signal that ended it.
        if status >= 128 + 1, status < 128 + 65 {
            let signal = status - 128
            Glibc.signal(signal, SIG_DFL)
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, signal)
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            kill(getpid(), signal)
        }
        throw ExitCode(status)
    }
}

/// The command `vault run` starts: its environment (ours without `VAULT_PASSPHRASE`, plus the secrets, which are
/// kept in guarded memory here), descriptors to inherit, an optional secret on its stdin; signals passed on.
struct ChildCommand {
    let arguments: [String]
    private var plain: [String: String]
    private var secrets: [(name: String, value: SecureBytes)] = []
    private var inherited: [Int32] = []
    var stdinSecret: SecureBytes?
    /// With `--mask`: the values replaced by `******` in the command's stdout and stderr, which then reach ours
    /// through pipes (``SecretMasker``).
    var maskedValues: [SecureBytes]?

    init(arguments: [String]) {
        self.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["VAULT_PASSPHRASE"] = nil
        plain = environment
    }

    mutating func set(_ name: String, _ value: String) {
        secrets.removeAll { $0.name == name }
        plain[name] = value
    }

    mutating func setSecret(_ name: String, _ value: SecureBytes) {
        plain[name] = nil
        secrets.removeAll { $0.name == name }
        secrets.append((name, value))
    }

    mutating func inherit(_ fd: Int32) { inherited.append(fd) }

    /// The signals vault waits for while the command runs.
    static let forwarded: [Int32] = [SIGTERM, SIGHUP, SIGUSR1, SIGUSR2]

    /// Starts the command, passes signals on until it ends, and returns its status as a shell reports it.
    func run() throws -> Int32 {
        // "NAME=value\0" of every secret in one guarded region; the plain ones as C strings.
        let total = secrets.reduce(0) { $0 + $1.name.utf8.count + 2 + $1.value.count }
        var offsets: [Int] = []
        let block = SecureBytes(capacity: total) { out in
            for (name, value) in secrets {
                offsets.append(out.count)
                out.append(name + "=")
                out.append(value)
                out.append(UInt8(0))
            }
        }
        let plainStrings = plain.map { strdup($0.key + "=" + $0.value) }
        let argv = arguments.map { strdup($0) } + [nil]
        defer {
            plainStrings.forEach { free($0) }
            argv.forEach { free($0) }
        }

        var stdinPipe: [Int32] = [-1, -1]
        if stdinSecret != nil {
            guard pipe(&stdinPipe) == 0 else { throw VaultError.io(operation: "cannot create a pipe for", path: "stdin", errno: errno) }
            _ = fcntl(stdinPipe[1], F_SETFD, FD_CLOEXEC)
        }
        defer { for fd in stdinPipe where fd >= 0 { close(fd) } }
        // With --mask, the command's stdout and stderr are pipes that vault copies to its own, masked.
        var outputPipes: [[Int32]] = []
        if maskedValues != nil {
            for _ in 0..<2 {
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else {
                    throw VaultError.io(operation: "cannot create a pipe for", path: "the command's output", errno: errno)
                }
                for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
                outputPipes.append(ends)
            }
        }
        defer { for fd in outputPipes.joined() where fd >= 0 { close(fd) } }

        // Wait for these signals synchronously (blocked now, before the child exists).
        var waited = sigset_t()
        sigemptyset(&waited)
        for signal in Self.forwarded + [SIGCHLD, SIGINT, SIGQUIT] { sigaddset(&waited, signal) }
        pthread_sigmask(SIG_BLOCK, &waited, nil)
        // An ignored signal is discarded, never waited for: a parent that ignores SIGINT (nohup, a test runner)
        // must not stop vault from passing on one sent to it.
        for signal in Self.forwarded + [SIGCHLD, SIGINT, SIGQUIT] { Glibc.signal(signal, SIG_DFL) }
        signal(SIGPIPE, SIG_IGN)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in Self.forwarded + [SIGCHLD, SIGINT, SIGQUIT, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if stdinSecret != nil {
            posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
            posix_spawn_file_actions_addclose(&actions, stdinPipe[0])
        }
        for (index, ends) in outputPipes.enumerated() {
            posix_spawn_file_actions_adddup2(&actions, ends[1], Int32(index + 1))  // dup2 clears close-on-exec
        }

        var pid: pid_t = 0
        let result: Int32 = block.withUnsafeBytes { region in
            let base = UnsafeMutableRawPointer(mutating: region.baseAddress)
            let secretPointers = offsets.map { base!.advanced(by: $0).assumingMemoryBound(to: CChar.self) }
            let envp: [UnsafeMutablePointer<CChar>?] = plainStrings + secretPointers.map { Optional($0) } + [nil]
            return posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        }
        for fd in inherited { close(fd) }
        guard result == 0 else {
            pthread_sigmask(SIG_UNBLOCK, &waited, nil)
            throw CLIError.message("cannot run '\(arguments[0])': \(String(cString: strerror(result)))", exitCode: 127)
        }

        if let secret = stdinSecret {
            close(stdinPipe[0])
            let writeEnd = stdinPipe[1]
            // A thread, so a value larger than the pipe's buffer never blocks the signal loop.
            startDetachedThread {
                _ = secret.withUnsafeBytes { Posix.writeAll(writeEnd, $0) }
                close(writeEnd)
            }
            stdinPipe = [-1, -1]  // the read end is closed, the write end belongs to the writer
        }
        var pumps: [DispatchSemaphore] = []
        if let maskedValues {
            for (index, ends) in outputPipes.enumerated() {
                close(ends[1])
                let readEnd = ends[0], done = DispatchSemaphore(value: 0)
                outputPipes[index] = [-1, -1]  // the read end belongs to the pump
                startDetachedThread {
                    _ = SecretMasker(values: maskedValues).pump(from: readEnd, to: Int32(index + 1))
                    close(readEnd)
                    done.signal()
                }
                pumps.append(done)
            }
        }
        let status = Self.wait(for: pid, handling: waited)
        // All of the command's output is written before vault exits (like a pipe's reader: a process the command
        // left behind that holds the pipe keeps vault waiting).
        for pump in pumps { pump.wait() }
        return status
    }

    /// Passes signals on until `pid` ends; its status as a shell reports it (128 + signal).
    static func wait(for pid: pid_t, handling waited: sigset_t) -> Int32 {
        var set = waited
        while true {
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid {
                if status & 0x7F == 0 { return (status >> 8) & 0xFF }  // exited
                return 128 + (status & 0x7F)  // killed by a signal
            }
            var info = siginfo_t()
            var timeout = timespec(tv_sec: 0, tv_nsec: 200_000_000)
            let signal = sigtimedwait(&set, &info, &timeout)
            guard signal > 0 else { continue }
            switch signal {
            case SIGCHLD: continue
            case SIGINT, SIGQUIT:
                // From the terminal (the kernel) it reached the command too; pass on only one sent to vault alone.
                if info.si_code == SI_USER { kill(pid, signal) }
            default: kill(pid, signal)
            }
        }
    }
}

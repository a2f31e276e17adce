import Foundation
import Testing

/// Runs a program on a new pseudo-terminal (Python's `pty`) and plays the user: the script of steps goes to
/// Python as JSON on its stdin (never on a command line), one `[marker, keys]` pair per step: wait until
/// `marker` has appeared on the terminal, then type `keys` (`"\u{03}"` is Ctrl-C, which the terminal turns
/// into SIGINT for the program, as for a user). Each marker is lower-cased in the transcript once it has been
/// answered, so the next step waits for the next prompt. A step may also name a lock file: the keys are then
/// typed only once some process is blocked on an `flock` of it (a `->` line for its inode in /proc/locks), so
/// the step answers a prompt while another client is known to be waiting for its turn (`@tty` names the
/// pseudo-terminal itself). A step may also send a signal to the program after its keys (SIGSTOP: and wait until
/// it has stopped). The driver may hold an `flock` of a file (`holding`) from before the program starts until a step
/// with `releasing` (after its keys): the program, or a process it waits for, blocked on it until then.
///
/// The result's stdout is everything the terminal showed, then one line with the terminal's echo flag after
/// the program ended (`[echo on]` / `[echo off]`); its status is the program's exit code, or 128 + the signal
/// that ended it (as a shell reports it).
enum PseudoTerminal {
    static let driver = #"""
        import fcntl, json, os, pty, select, signal, sys, termios, time
        # The test runner's threads block signals and children inherit the mask: unblock them here.
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        spec = json.load(sys.stdin)
        steps = spec["steps"]
        held = None
        if spec.get("holding"):  # not inherited by the program (Python's descriptors are close-on-exec)
            held = os.open(spec["holding"], os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(held, fcntl.LOCK_EX)
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(sys.argv[1], sys.argv[1:])
        deadline = time.time() + spec["seconds"]
        out = b""
        def fail(why):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            sys.stderr.write("%s; the terminal showed %r\n" % (why, out))
            sys.exit(124)
        def read_some(timeout=None):
            global out
            ready, _, _ = select.select([fd], [], [], max(0, deadline - time.time()) if timeout is None else timeout)
            if not ready:
                if timeout is not None:
                    return None
                fail("timed out")
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                chunk = b""
            out += chunk
            return chunk
        def blocked_on(path):
            try:
                st = os.stat(path)
            except OSError:
                return False
            ident = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
            with open("/proc/locks") as locks:
                return any("->" in f and "FLOCK" in f and ident in f for f in (line.split() for line in locks))
        def stopped():
            with open("/proc/%d/stat" % pid) as stat:
                return stat.read().rsplit(")", 1)[1].split()[0] == "T"
        for step in steps:  # a fifth element (releasing) is optional
            marker, keys, lock, signal_number = step[:4]
            releasing = len(step) > 4 and step[4]
            marker = marker.encode()
            while marker not in out:
                if not read_some():
                    fail("end of output before %r" % marker)
            if lock == "@tty":  # the program's stderr, once it has shown something there
                lock = os.readlink("/proc/%d/fd/2" % pid)
            while lock and not blocked_on(lock):
                if time.time() > deadline:
                    fail("no process waited on %s" % lock)
                if read_some(0.02) == b"":
                    fail("end of output while waiting for a process to wait on %s" % lock)
            os.write(fd, keys.encode())
            out = out.replace(marker, marker.lower(), 1)
            if releasing and held is not None:
                os.close(held)
                held = None
            if signal_number:
                os.kill(pid, signal_number)
                while signal_number == signal.SIGSTOP and not stopped():
                    if time.time() > deadline:
                        fail("did not stop")
                    time.sleep(0.01)
        while read_some():
            pass
        _, status = os.waitpid(pid, 0)
        echo = termios.tcgetattr(fd)[3] & termios.ECHO
        code = os.waitstatus_to_exitcode(status)
        sys.stdout.write(out.decode("utf-8", "replace").replace("\r\n", "\n"))
        sys.stdout.write("[echo %s]\n" % ("on" if echo else "off"))
        sys.exit(128 - code if code < 0 else code)
        """#

    /// Runs `executable arguments` on a pseudo-terminal, playing `steps` (marker, keys).
    static func run(
        _ executable: String, _ arguments: [String], steps: [(marker: String, keys: String)],
        environment: [String: String]
    ) throws -> CLIResult {
        try run(executable, arguments, steps: steps.map { ($0.marker, $0.keys, nil) }, environment: environment)
    }

    /// One step of the user: wait for `marker` (and, with `waitingOn`, for a process blocked on an `flock` of
    /// that file, `@tty` for the terminal), type `keys`, then send `signal` to the program.
    struct Step {
        var marker: String
        var keys: String = ""
        var waitingOn: String? = nil
        var signal: Int32? = nil
        /// Releases the driver's `flock` (`holding`) once the keys are typed.
        var releasing = false
    }

    /// Runs `executable arguments` on a pseudo-terminal, playing `steps`; with `holding`, an `flock` of that file
    /// held until a step `releasing` it.
    static func run(
        _ executable: String, _ arguments: [String], playing steps: [Step], environment: [String: String],
        holding: String? = nil, seconds: Double = 90, timeout: TimeInterval = 120
    ) throws -> CLIResult {
        let script = try JSONSerialization.data(withJSONObject: [
            "seconds": seconds,
            "holding": holding ?? NSNull(),
            "steps": steps.map {
                [$0.marker, $0.keys, $0.waitingOn ?? NSNull(), $0.signal.map { Int($0) } ?? NSNull(), $0.releasing] as [Any]
            },
        ])
        return try CLI.exec(
            "/usr/bin/python3", ["-c", driver, executable] + arguments, stdin: script, environment: environment,
            timeout: timeout)
    }

    /// Runs `executable arguments` on a pseudo-terminal, playing `steps`; a step with `waitingOn` types its keys
    /// only once a process is blocked on an `flock` of that file. The driver gives up after `seconds` (exit 124,
    /// with what the terminal showed on stderr).
    static func run(
        _ executable: String, _ arguments: [String],
        steps: [(marker: String, keys: String, waitingOn: String?)], environment: [String: String],
        seconds: Double = 90, timeout: TimeInterval = 120
    ) throws -> CLIResult {
        try run(
            executable, arguments, playing: steps.map { Step(marker: $0.marker, keys: $0.keys, waitingOn: $0.waitingOn) },
            environment: environment, seconds: seconds, timeout: timeout)
    }
}

#!/usr/bin/env python3
"""Paired wall time of a floor and several commands, alternated run by run (Benchmarks/README.md, "The last figure").

    paired_wall.py RUNS NAME=COMMAND...      # the first is the floor; COMMAND: [VAR=value ...] argv, space-separated

Like paired_cpu.py, but also the wall time of each process (posix_spawn to wait4), and with an environment of its
own for each command (leading VAR=value words), so that two builds of `vault` can each talk to their own agent in
one run. Ten warm-up rounds, then RUNS rounds of every command once, stdout and stderr on /dev/null. Prints, for
each, the median and mean wall time, the median of the per-round wall ratios to the floor and the ratio of the
means, the median CPU time (user + system, wait4) and the median minor page faults.
"""
import os, statistics, sys, time

def run(command, devnull):
    environment, argv = dict(os.environ), list(command)
    while argv and "=" in argv[0] and not argv[0].startswith(("/", ".")):
        name, value = argv.pop(0).split("=", 1)
        environment[name] = value
    started = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, environment,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter() - started) * 1e3
    if status != 0:
        sys.exit(f"paired_wall.py: {' '.join(command)} failed ({status})")
    return wall, (usage.ru_utime + usage.ru_stime) * 1e3, usage.ru_minflt

def main():
    runs = int(sys.argv[1])
    commands = [(name, command.split()) for name, command in (argument.split("=", 1) for argument in sys.argv[2:])]
    devnull = os.open(os.devnull, os.O_WRONLY)
    for _ in range(10):
        for _, command in commands:
            run(command, devnull)
    load, started = open("/proc/loadavg").read().split()[:3], time.strftime("%H:%M:%S", time.gmtime())
    results = {name: [] for name, _ in commands}
    for _ in range(runs):
        for name, command in commands:
            results[name].append(run(command, devnull))
    print(f"# {runs} rounds, {started}–{time.strftime('%H:%M:%S', time.gmtime())} UTC, load average "
          f"{' '.join(load)} → {' '.join(open('/proc/loadavg').read().split()[:3])}")
    floor = results[commands[0][0]]
    floor_mean = statistics.mean(wall for wall, _, _ in floor)
    print(f"{'command':<12} {'wall median':>11} {'mean':>7} {'× floor (median of pairs)':>26} {'(of means)':>10} "
          f"{'CPU ms':>7} {'faults':>6}")
    for name, _ in commands:
        rows = results[name]
        walls = [wall for wall, _, _ in rows]
        ratio = statistics.median(wall / floor_wall for (wall, _, _), (floor_wall, _, _) in zip(rows, floor))
        print(f"{name:<12} {statistics.median(walls):11.3f} {statistics.mean(walls):7.3f} {ratio:26.3f} "
              f"{statistics.mean(walls) / floor_mean:10.3f} {statistics.median(cpu for _, cpu, _ in rows):7.2f} "
              f"{statistics.median(faults for _, _, faults in rows):6.0f}")

main()

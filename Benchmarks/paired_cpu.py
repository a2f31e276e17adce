#!/usr/bin/env python3
"""Paired start-up cost: CPU time and page faults of a floor and several commands, alternated run by run.

    paired_cpu.py RUNS FLOOR_COMMAND NAME=COMMAND...      # each command an argv, space-separated, no shell

Runs FLOOR_COMMAND and then every COMMAND once, RUNS times, after three warm-up rounds, with stdout and stderr on
/dev/null and this environment. For each process it takes the CPU time (user + system) and the minor page faults
from wait4's rusage, which count the process alone, so the load of a shared machine raises them less than wall
time and drift within the run hits all commands alike. Prints, for each, the median CPU time with its quartiles,
the median faults and the median of the per-round ratios to the floor (Benchmarks/README.md, "Size and
start-up").
"""
import os, statistics, sys, time

def run(argv, devnull):
    pid = os.posix_spawnp(argv[0], argv, dict(os.environ),
                          file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"paired_cpu.py: {' '.join(argv)} failed ({status})")
    return (usage.ru_utime + usage.ru_stime) * 1e3, usage.ru_minflt

def main():
    runs, floor = int(sys.argv[1]), sys.argv[2].split()
    commands = [("floor", floor)] + [(name, command.split()) for name, command in
                                     (argument.split("=", 1) for argument in sys.argv[3:])]
    devnull = os.open(os.devnull, os.O_WRONLY)
    for _ in range(3):
        for _, argv in commands:
            run(argv, devnull)
    load, started = open("/proc/loadavg").read().split()[:3], time.strftime("%H:%M:%S", time.gmtime())
    results = {name: [] for name, _ in commands}
    for _ in range(runs):
        for name, argv in commands:
            results[name].append(run(argv, devnull))
    print(f"# {runs} rounds, {started}–{time.strftime('%H:%M:%S', time.gmtime())} UTC, load average "
          f"{' '.join(load)} → {' '.join(open('/proc/loadavg').read().split()[:3])}")
    floor_cpu = [cpu for cpu, _ in results["floor"]]
    for name, _ in commands:
        cpu = [c for c, _ in results[name]]
        quartiles = statistics.quantiles(cpu, n=4)
        ratio = statistics.median(c / f for c, f in zip(cpu, floor_cpu))
        print(f"{name:20} CPU {statistics.median(cpu):5.2f} ms (quartiles {quartiles[0]:.2f}–{quartiles[2]:.2f}), "
              f"{statistics.median(f for _, f in results[name]):4.0f} faults, {ratio:.2f}× the floor")

main()

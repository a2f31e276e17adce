#!/usr/bin/env python3
"""Paired timing: the floor and a command, alternated, so drift of the machine hits both alike.

    paired.py RUNS FLOOR_COMMAND COMMAND [STDIN_FILE]

Runs FLOOR_COMMAND and COMMAND (each an argv, space-separated, no shell) one after the other RUNS times after
two warm-up pairs, and prints JSON: the median of each and the median of the per-pair ratios.
"""
import json, statistics, subprocess, sys, time

def timed(argv, stdin_path):
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    start = time.perf_counter()
    subprocess.run(argv, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start

runs, floor, command = int(sys.argv[1]), sys.argv[2].split(), sys.argv[3].split()
stdin_path = sys.argv[4] if len(sys.argv) > 4 else None
for _ in range(2):
    timed(floor, None), timed(command, stdin_path)
floors, commands = [], []
for _ in range(runs):
    floors.append(timed(floor, None))
    commands.append(timed(command, stdin_path))
print(json.dumps({
    "floor_median": statistics.median(floors),
    "median": statistics.median(commands),
    "ratio_median": statistics.median(c / f for c, f in zip(commands, floors)),
}))

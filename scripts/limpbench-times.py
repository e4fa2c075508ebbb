#!/usr/bin/env python3
"""limpbench-times.py DIR...: where the time of each experiment's runs went.

Each DIR is a gait bench experiment directory (runs/lib/NAME) or a suite
directory holding them. For each run with a wall.json (the whole run,
written by gait since 2026-11-28) it reads summary.json's ready_seconds
(the cluster's start) and duration (the workload, to the last request's
end); the rest of the run is the testbed's hosts, the preload, a warm-up
(workload.warmup_seconds in run.json) and the teardown. Prints a line per
run and, per experiment, the mean per step and a repetition's sum (each
step once: baseline plus every limping step), in seconds.
"""
import json
import os
import re
import sys
from collections import defaultdict


def runs(exp):
    for name in sorted(os.listdir(exp)):
        d = os.path.join(exp, name)
        m = re.fullmatch(r"(.+)-r(\d+)", name)
        if not m or not os.path.isfile(os.path.join(d, "wall.json")):
            continue
        wall = json.load(open(os.path.join(d, "wall.json")))["wall_seconds"]
        s = json.load(open(os.path.join(d, "summary.json")))
        run = json.load(open(os.path.join(d, "run.json")))
        ready = (s.get("extra") or {}).get("ready_seconds", 0.0)
        warm = (run.get("workload") or {}).get("warmup_seconds", 0.0)
        yield m.group(1), int(m.group(2)), wall, ready, warm, s["duration"]


def experiments(args):
    for a in args:
        if os.path.isfile(os.path.join(a, "scenario.yaml")):
            yield a
            continue
        for n in sorted(os.listdir(a)):
            if os.path.isfile(os.path.join(a, n, "scenario.yaml")):
                yield os.path.join(a, n)


def main(args):
    total = 0.0
    print("%-44s %-9s %4s %7s %7s %7s %7s %7s" % ("experiment", "step", "rep", "wall", "start", "warmup", "work", "rest"))
    for exp in experiments(args):
        name = os.path.basename(exp.rstrip("/"))
        steps = defaultdict(list)
        for step, rep, wall, ready, warm, dur in runs(exp):
            rest = wall - ready - warm - dur
            steps[step].append((wall, ready, warm, dur, rest))
            print("%-44s %-9s %4d %7.1f %7.1f %7.1f %7.1f %7.1f" % (name, step, rep, wall, ready, warm, dur, rest))
        if not steps:
            continue
        rep_sum = 0.0
        for step, xs in sorted(steps.items()):
            mean = [sum(c) / len(xs) for c in zip(*xs)]
            rep_sum += mean[0]
            print("%-44s %-9s mean %7.1f %7.1f %7.1f %7.1f %7.1f  (%d runs)" % (name, step, *mean, len(xs)))
        total += rep_sum
        print("%-44s a repetition: %.0f s" % (name, rep_sum))
    print("all: a repetition of these experiments %.0f s (%.1f min)" % (total, total / 60))


if __name__ == "__main__":
    main(sys.argv[1:] or ["runs/lib"])

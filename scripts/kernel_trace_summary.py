#!/usr/bin/env python3
"""Summarises a kernel timeline (tools/kernel_trace, scripts/gpu_trace.sh): for each recorded
forward graph, in the order the sweep recorded them, its last replay's span and its kernels by
(name, grid): launches, time per launch and in total, and the idle gap before them. With --eager,
the kernels launched outside graphs instead (prefill forwards run eagerly): by kernel name, the
total over the trace divided by --forwards N (the forwards the sweep timed).

usage: kernel_trace_summary.py TRACE.csv[.xz]
       kernel_trace_summary.py --eager [--forwards N] TRACE.csv[.xz]
"""
import collections
import csv
import lzma
import re
import sys


def read(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["start"], r["end"] = int(r["start_ns"]), int(r["end_ns"])
        m = re.search(r"\d+([a-z_]+kernel)", r["name"])  # the mangled name's kernel identifier
        r["kernel"] = m.group(1) if m else r["name"][:40]
    return sorted(rows, key=lambda r: r["start"])


def replays(rows, graph):
    """The graph's replays: runs of its kernels with no gap over 30 us."""
    mine = [r for r in rows if r["graph_id"] == graph]
    runs, run = [], [mine[0]]
    for a, b in zip(mine, mine[1:]):
        if b["start"] - a["end"] > 30_000:
            runs.append(run)
            run = []
        run.append(b)
    runs.append(run)
    return runs


def eager(rows, forwards):
    mine = [r for r in rows if r["graph_id"] == "0"]
    span = (mine[-1]["end"] - mine[0]["start"]) / 1e3 if mine else 0.0
    busy = sum(r["end"] - r["start"] for r in mine) / 1e3
    print(f"\n### eager kernels: {len(mine)} launches, {busy / forwards:.1f} us busy a forward "
          f"(span {span / forwards:.1f} us a forward over {forwards})\n")
    print("| kernel | launches a forward | us a forward | share |")
    print("|---|---|---|---|")
    agg = collections.defaultdict(lambda: [0, 0.0])
    for r in mine:
        a = agg[r["kernel"] if r["kernel"] != r["name"][:40] else r["name"][:60]]
        a[0] += 1
        a[1] += (r["end"] - r["start"]) / 1e3
    for kernel, (n, total) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        print(f"| {kernel} | {n / forwards:.1f} | {total / forwards:.1f} | {100 * total / busy:.1f}% |")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--eager":
        forwards = 1
        if len(args) > 2 and args[1] == "--forwards":
            forwards = int(args[2])
            args = args[2:]
        eager(read(args[1]), forwards)
        return
    rows = read(sys.argv[1])
    graphs = list(dict.fromkeys(r["graph_id"] for r in rows if r["graph_id"] != "0"))
    for graph in graphs:
        runs = replays(rows, graph)
        last = runs[-1]
        span = (last[-1]["end"] - last[0]["start"]) / 1e3
        print(f"\n### graph {graph}: {len(runs)} replays, {len(last)} kernels, last replay {span:.1f} us\n")
        print("| kernel | grid | launches | us per launch | us in total | gap before (us) |")
        print("|---|---|---|---|---|---|")
        agg = collections.defaultdict(lambda: [0, 0.0, 0.0])
        for i, r in enumerate(last):
            a = agg[(r["kernel"], r["grid"])]
            a[0] += 1
            a[1] += (r["end"] - r["start"]) / 1e3
            a[2] += (r["start"] - last[i - 1]["end"]) / 1e3 if i else 0.0
        for (kernel, grid), (n, total, gap) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
            print(f"| {kernel} | {grid} | {n} | {total / n:.2f} | {total:.1f} | {gap / n:.2f} |")


if __name__ == "__main__":
    main()

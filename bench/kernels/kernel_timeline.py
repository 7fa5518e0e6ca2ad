#!/usr/bin/env python3
"""Where a CUDA-graph step's time goes, from a gossamer_kernel_trace file (bench/kernels/kernel_trace.cpp).

  python3 bench/kernels/kernel_timeline.py trace.tsv [--sequence N]
  python3 bench/kernels/kernel_timeline.py trace.tsv --eager    (one prefill step, per kernel name)

Each graph (one per decode batch size) is replayed many times; the replays are cut where the graph's first
kernel comes round again, and the replay of median span is shown. In a chain of dependent kernels each one
ends after the one before it, so the step's span is the sum over kernels of their *exposed* time, end_i −
end_(i−1): what each kernel adds to the step. Beside it, its own duration (end − start, from when its CTAs
started, which with PDL is before the previous kernel ended) and its head start (end_(i−1) − start_i > 0: it
began that long before the previous kernel finished). Per kernel name, summed over the step's layers.
"""
import argparse
import collections
import re
import statistics
import sys


def short(name):
    """The kernel's name without its namespaces and parameter list; template arguments kept, 70 characters."""
    name = re.sub(r"gossamer::kernels::|\(anonymous namespace\)::|gossamer::", "", name)
    name = re.sub(r"^void ", "", name)
    if name.endswith(")"):  # drop the parameter list: from the '(' that balances the last ')'
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    return name if len(name) <= 70 else name[:67] + "..."


def read(path):
    rows = []
    with open(path) as f:
        for line in f:
            start, end, graph, ctas, name = line.rstrip("\n").split("\t", 4)
            rows.append((int(start), int(end), int(graph), int(ctas), name))
    return rows


def replays(rows):
    """The graph's records cut into replays: a replay starts where the first kernel's name and the next one's
    come round again."""
    if len(rows) < 2:
        return [rows]
    first, second = rows[0][4], rows[1][4]
    cuts = [i for i in range(len(rows) - 1) if rows[i][4] == first and rows[i + 1][4] == second]
    cuts.append(len(rows))
    return [rows[a:b] for a, b in zip(cuts, cuts[1:])]


def show(graph, step, sequence):
    t0 = step[0][0]
    span = max(r[1] for r in step) - t0
    busy = sum(r[1] - r[0] for r in step)
    print(f"graph {graph}: {len(step)} kernels, span {span / 1e3:.1f} us, kernel time {busy / 1e3:.1f} us")
    per = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    prev_end = t0
    lines = []
    for start, end, _, ctas, name in step:
        exposed = end - prev_end if end > prev_end else 0
        head = prev_end - start
        p = per[short(name)]
        p[0] += 1
        p[1] += end - start
        p[2] += exposed
        p[3] += head
        lines.append((start - t0, end - t0, end - start, exposed, head, ctas, short(name)))
        prev_end = max(prev_end, end)
    print(f"{'exposed us':>11} {'share':>6} {'count':>5} {'mean dur':>9} {'mean head':>9}  kernel")
    for name, (n, dur, exposed, head) in sorted(per.items(), key=lambda kv: -kv[1][2]):
        print(f"{exposed / 1e3:11.1f} {100 * exposed / span:5.1f}% {n:5d} {dur / n / 1e3:9.2f} {head / n / 1e3:9.2f}  {name}")
    if sequence:
        print(f"the first {sequence} kernels (us from the step's start):")
        print(f"{'start':>8} {'end':>8} {'dur':>7} {'exposed':>7} {'head':>6} {'ctas':>6}  kernel")
        for start, end, dur, exposed, head, ctas, name in lines[:sequence]:
            print(f"{start / 1e3:8.2f} {end / 1e3:8.2f} {dur / 1e3:7.2f} {exposed / 1e3:7.2f} {head / 1e3:6.2f} {ctas:6d}  {name}")


def eager_step(rows):
    """The last complete eager step (a prefill): the launches outside graphs from the second-to-last embedding
    kernel up to the last one, summed per kernel name (duration: its launches' end − start)."""
    eager = [r for r in rows if r[2] == 0]
    starts = [i for i, r in enumerate(eager) if "embedding_kernel" in r[4]]
    if len(starts) < 2:
        sys.exit("fewer than two eager steps in the trace (no second embedding launch)")
    step = eager[starts[-2]:starts[-1]]
    span = max(r[1] for r in step) - step[0][0]
    per = collections.defaultdict(lambda: [0, 0])
    for start, end, _, _, name in step:
        p = per[short(name)]
        p[0] += 1
        p[1] += end - start
    busy = sum(d for _, d in per.values())
    print(f"eager step: {len(step)} kernels, span {span / 1e3:.1f} us, kernel time {busy / 1e3:.1f} us")
    print(f"{'kernel ms':>10} {'share':>6} {'count':>5}  kernel")
    for name, (n, dur) in sorted(per.items(), key=lambda kv: -kv[1][1]):
        print(f"{dur / 1e6:10.3f} {100 * dur / busy:5.1f}% {n:5d}  {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--sequence", type=int, default=0, help="also list the first N kernels of the step")
    parser.add_argument("--eager", action="store_true",
                        help="an eager step instead (a prefill): the launches outside graphs between the last two "
                        "embedding kernels, per kernel name")
    args = parser.parse_args()
    rows = read(args.trace)
    if args.eager:
        eager_step(rows)
        return
    graphs = collections.defaultdict(list)
    for r in rows:
        if r[2] != 0:
            graphs[r[2]].append(r)
    print(f"{len(rows)} kernels traced, {sum(len(g) for g in graphs.values())} of them in {len(graphs)} CUDA graphs")
    if not graphs:
        sys.exit("no graph replays in the trace (eager steps only?)")
    for graph, graph_rows in sorted(graphs.items()):
        steps = [s for s in replays(graph_rows) if s]
        spans = [max(r[1] for r in s) - s[0][0] for s in steps]
        median = statistics.median_low(spans)
        print(f"\n== graph {graph}: {len(steps)} replays, span min / median / max "
              f"{min(spans) / 1e3:.1f} / {median / 1e3:.1f} / {max(spans) / 1e3:.1f} us")
        show(graph, steps[spans.index(median)], args.sequence)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The A/B table of a `run_validation_h200.sh candidates-e2e` log: per run (binary and flags, from the `== …`
section titles; 120b runs named apart) the best `bench prefill` latency per input length and the best `bench decode`
step per (context, batch) over the rounds, each beside the defaults' (the run without flags of build/gossamer) as a
ratio.

    python3 bench/summarize_ab.py candidates_e2e_summary.txt
"""
import re
import sys
from collections import defaultdict

SECTION = re.compile(r"^== (\S+) bench (prefill|decode) (\S+) .*?(?:\d[\d,]* )?(--.*)?\(\d\d:\d\d:\d\d\)$")
PREFILL = re.compile(r"^\| [^|]+ \| (\d+) \| ([\d.]+) \|")        # | model | input tokens | latency (s) | ...
DECODE = re.compile(r"^\| [^|]+ \| (\d+) \| (\d+) \| ([\d.]+) \|")  # | model | context | batch | step (ms) | ...


def parse(lines):
    best = {"prefill": defaultdict(dict), "decode": defaultdict(dict)}
    kind = run = None
    for line in lines:
        line = line.rstrip("\n")
        m = SECTION.match(line)
        if m:
            binary, kind, model, flags = m.group(1), m.group(2), m.group(3), (m.group(4) or "").strip()
            base = "base " if binary.endswith("_base") else ""
            run = base + ("120b " if model == "120b" else "") + (flags or "defaults")
            continue
        if run is None:
            continue
        d = DECODE.match(line) if kind == "decode" else None
        p = PREFILL.match(line) if kind == "prefill" else None
        if d:
            key, value = (int(d.group(1)), int(d.group(2))), float(d.group(3))
        elif p:
            key, value = int(p.group(1)), float(p.group(2))
        else:
            continue
        old = best[kind][run].get(key)
        best[kind][run][key] = value if old is None else min(old, value)
    return best


def table(title, rows, unit):
    if not rows:
        return
    keys = sorted({k for r in rows.values() for k in r})
    base = rows.get("defaults", {})
    print(f"\n{title} (best of the rounds, {unit}; ratio to the defaults)\n")
    print("| run | " + " | ".join(str(k) for k in keys) + " |")
    print("|---|" + "---|" * len(keys))
    for run, r in rows.items():
        cells = []
        for k in keys:
            if k not in r:
                cells.append("-")
            elif k in base and run != "defaults":
                cells.append(f"{r[k]:g} ({r[k] / base[k]:.3f})")
            else:
                cells.append(f"{r[k]:g}")
        print(f"| {run} | " + " | ".join(cells) + " |")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        best = parse(f)
    table("bench prefill, input tokens", best["prefill"], "s")
    table("bench decode, (context, batch)", best["decode"], "ms per step")


if __name__ == "__main__":
    main()

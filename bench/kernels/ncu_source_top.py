#!/usr/bin/env python3
"""The instructions of one kernel with the most warp-stall samples, from Nsight Compute's source page.

  ncu --import report.ncu-rep --page source --csv --print-source sass > source.csv
  python3 bench/kernels/ncu_source_top.py source.csv [N]

Prints the sample total, the samples per stall reason where the page breaks them down, and the N instructions
with the most samples (address, share, SASS, their two largest reasons), in address order so that a hot loop
reads as one block (bench/run_validation_h200.sh source).
"""
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40
    rows = list(csv.reader(open(path, errors="replace")))
    head_at = next((i for i, r in enumerate(rows) if "Source" in r and any("Sampling" in c for c in r)), None)
    if head_at is None:
        sys.exit("no source table with stall sampling columns in " + path + ": " + " | ".join(rows[0][:12] if rows else []))
    head, body = rows[head_at], [r for r in rows[head_at + 1:] if len(r) == len(rows[head_at])]
    col = {name: i for i, name in enumerate(head)}
    all_col = next(i for i, name in enumerate(head) if "Sampling" in name and "All" in name)
    source, address = col["Source"], col.get("Address", col.get("# Address"))
    # Per-reason columns: the other sampling columns that are not the all / not-issued totals.
    reasons = [i for i, name in enumerate(head)
               if ("stall" in name.lower() or "Sampling" in name) and i != all_col and "Not-issued" not in name
               and "All" not in name]
    total = sum(number(r[all_col]) for r in body)
    print(f"{len(body)} instructions, {total:.0f} warp-stall samples ({head[all_col]})")
    if total == 0:
        return
    if reasons:
        sums = sorted(((sum(number(r[i]) for r in body), head[i]) for i in reasons), reverse=True)
        print("by reason: " + ", ".join(f"{name} {100 * v / total:.1f}%" for v, name in sums[:10] if v > 0))
    hot = sorted(range(len(body)), key=lambda i: -number(body[i][all_col]))[:top]
    for i in sorted(hot):
        r = body[i]
        v = number(r[all_col])
        why = sorted(((number(r[j]), head[j]) for j in reasons), reverse=True)[:2]
        why_text = ", ".join(f"{name} {n:.0f}" for n, name in why if n > 0)
        where = r[address] if address is not None else str(i)
        print(f"{where:>8} {100 * v / total:5.1f}%  {r[source].strip()[:70]:70s}  {why_text}")


if __name__ == "__main__":
    main()

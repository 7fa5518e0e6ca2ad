#!/usr/bin/env python3
"""Prints the held-out generations a tools/tiny_train.py run kept in its metrics.json ("samples": token
ids), decoded by gossamer's own detokenizer, next to the references (docs/tiny-model.md).
Usage: python3 tools/tiny_samples.py OUT/metrics.json [DOMAIN ...] [--gossamer build/gossamer] [--all]
By default only the wrong ones; --all prints every sample.
"""
import argparse
import json
import subprocess


def text(gossamer, ids):
    run = subprocess.run([gossamer, "detokenize", "--lossy"], input=json.dumps(ids), capture_output=True, text=True,
                         check=True)
    return run.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("metrics")
    ap.add_argument("domains", nargs="*")
    ap.add_argument("--gossamer", default="build/gossamer")
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args()
    samples = json.load(open(args.metrics)).get("samples", [])
    shown = 0
    for i, s in enumerate(samples):
        if args.domains and s["domain"] not in args.domains:
            continue
        same = s["generated"] == s["expected"]
        if same and not args.all:
            continue
        shown += 1
        print(f"--- {i}: {s['domain']} ({'exact' if same else 'differs'})")
        print("expected: ", text(args.gossamer, s["expected"]))
        if not same:
            print("generated:", text(args.gossamer, s["generated"]))
    print(f"{shown} of {len(samples)} samples shown")


if __name__ == "__main__":
    main()

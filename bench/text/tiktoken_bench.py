#!/usr/bin/env python3
"""tiktoken's Rust core (the Python package's CoreBPE, `encode_ordinary`) on corpus files, one thread, for
run_tokenizer_vs_tiktoken.sh. Needs no network: the o200k_base encoding is built from the same ranks file
gossamer loads (node_modules/tiktoken/encoders/o200k_base.json, checked against the pinned SHA-256).

  python3 bench/text/tiktoken_bench.py RANKS_JSON SECONDS FILE...
prints one JSON line per file: {file, bytes, tokens, ids_fnv1a, mb_per_s, cpu_mb_per_s} (best of the runs).
"""
import base64
import hashlib
import json
import sys
import time

import tiktoken

O200K_SHA256 = '446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d'


def load_encoding(path):
    with open(path, encoding='utf-8') as f:
        data = json.load(f)
    ranks, lines = {}, []
    for line in data['bpe_ranks'].split('\n'):
        fields = line.split(' ')
        if len(fields) < 3:
            continue
        rank = int(fields[1])
        for token in fields[2:]:
            ranks[base64.b64decode(token)] = rank
            lines.append(f'{token} {rank}\n')
            rank += 1
    digest = hashlib.sha256(''.join(lines).encode()).hexdigest()
    if digest != O200K_SHA256:
        sys.exit(f'{path}: not o200k_base (SHA-256 {digest})')
    return tiktoken.Encoding(name='o200k_base', pat_str=data['pat_str'], mergeable_ranks=ranks, special_tokens={})


def fnv1a(ids):
    h = 1469598103934665603
    for i in ids:
        h = ((h ^ i) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f'{h:016x}'


def main():
    enc = load_encoding(sys.argv[1])
    seconds = float(sys.argv[2])
    for path in sys.argv[3:]:
        with open(path, 'rb') as f:
            text = f.read().decode('utf-8')  # bytes as they are: text mode would turn CRLF into LF
        size = len(text.encode('utf-8'))
        ids = enc.encode_ordinary(text)  # warm-up
        best_wall = best_cpu = float('inf')
        start, runs = time.perf_counter(), 0
        while runs < 3 or time.perf_counter() - start < seconds:
            w0, c0 = time.perf_counter(), time.process_time()
            ids = enc.encode_ordinary(text)
            best_wall = min(best_wall, time.perf_counter() - w0)
            best_cpu = min(best_cpu, time.process_time() - c0)
            runs += 1
        print(json.dumps({'file': path, 'bytes': size, 'tokens': len(ids), 'ids_fnv1a': fnv1a(ids),
                          'mb_per_s': size / best_wall / 1e6, 'cpu_mb_per_s': size / max(best_cpu, 1e-9) / 1e6}),
              flush=True)


if __name__ == '__main__':
    main()

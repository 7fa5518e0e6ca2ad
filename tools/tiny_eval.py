"""Greedy generation and held-out accuracy for tools/tiny_train.py (no KV cache: every step recomputes
the batch; right padding is harmless under the causal mask)."""
import time

import torch

RETURN, CALL, MESSAGE = 200002, 200012, 200008


@torch.no_grad()
def greedy(model, prompts, max_new, head, device, pad):
    seqs = [list(p) for p in prompts]
    done = [False] * len(seqs)
    out = [[] for _ in seqs]
    for _ in range(max_new):
        active = [i for i, d in enumerate(done) if not d]
        if not active:
            break
        L = max(len(seqs[i]) for i in active)
        ids = torch.full((len(active), L), pad, dtype=torch.long)
        for j, i in enumerate(active):
            ids[j, :len(seqs[i])] = torch.tensor(seqs[i])
        hidden = model.model(input_ids=ids.to(device), use_cache=False).last_hidden_state
        last = hidden[torch.arange(len(active), device=device), torch.tensor([len(seqs[i]) - 1 for i in active], device=device)]
        nxt = head(last).argmax(-1).tolist()
        for j, i in enumerate(active):
            seqs[i].append(nxt[j])
            out[i].append(nxt[j])
            if nxt[j] in (RETURN, CALL):
                done[i] = True
    return out


def answer_part(tokens):
    """The ids after the last <|message|>: the final answer or the tool call's arguments (with the stop)."""
    last = max((i for i, t in enumerate(tokens) if t == MESSAGE), default=-1)
    return tuple(tokens[last + 1:])


def evaluate(model, rows, head, device, pad, max_new=None, batch=256, deadline=None):
    """Accuracy by domain. max_new: generated ids per row (default: the longest reference + 8); deadline (a
    time.time() value): no batch starts after it, and "skipped" counts the rows left out."""
    results, skipped = {}, 0
    for start in range(0, len(rows), batch):
        part = rows[start:start + batch]
        if deadline is not None and time.time() > deadline:
            skipped += len(part)
            continue
        limit = max_new or max(len(r["completion_ids"]) for r in part) + 8
        outs = greedy(model, [r["prompt"] for r in part], limit, head, device, pad)
        for r, o in zip(part, outs):
            expected = r["completion_ids"]
            d = results.setdefault(r["domain"], [0, 0, 0])
            d[0] += 1
            d[1] += int(list(o) == list(expected))
            d[2] += int(answer_part(list(o)) == answer_part(list(expected)))
            r["generated"] = list(o)
    total = [sum(v[i] for v in results.values()) for i in range(3)]
    return {"overall": {"n": total[0], "exact": total[1] / max(1, total[0]), "answer": total[2] / max(1, total[0]),
                        "skipped": skipped},
            "by_domain": {k: {"n": v[0], "exact": v[1] / v[0], "answer": v[2] / v[0]} for k, v in sorted(results.items())}}

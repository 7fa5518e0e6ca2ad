#!/usr/bin/env python3
"""Trains the embedded tiny gpt-oss model on the GPU machine (docs/tiny-model.md).

Input: the token ids of tools/tiny_render (gzip'd), made from tools/tiny_corpus.py. The model is
transformers' GptOssForCausalLM with a small config of the gpt-oss family. Vocabulary: the full
o200k_harmony 201,088 rows, but every row the training split never uses is one shared embedding row and
one shared unembedding row. Training runs on the compact vocabulary (the used rows + the shared row);
the shared row's logit gets + log(#unused rows), which is exactly the full-vocabulary softmax with the
tied rows. Experts are trained quantization-aware in the last part (MXFP4 fake-quant, straight-through)
and exported as MXFP4 blocks + e8m0 scales exactly as trained.

Outputs in --out: model.safetensors.gz + config.json (the Hugging Face layout gossamer loads),
metrics.json (loss curve, held-out accuracy), loss.png, golden.json + golden_logits.npy (transformers
float32 logits and greedy generations of the exported checkpoint), train.log via the caller.

Usage: python3 tools/tiny_train.py --corpus corpus.bin.gz --out OUT --train-seconds 200
"""
import argparse
import contextlib
import gzip
import json
import math
import os
import sys
import tempfile
import time
import traceback

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_eval import evaluate, greedy  # noqa: E402
from tiny_mxfp4 import FakeQuant, pack_mxfp4  # noqa: E402

VOCAB = 201088
FIRST_SPECIAL = 199998
RETURN, CALL, MESSAGE, PAD = 200002, 200012, 200008, 199999
# The goldens' description (tests/data/golden/tiny_trained.json).
NOTE = ("transformers GptOssForCausalLM, float32, eager attention, on the GPU machine (TF32 off), of models/tiny "
        "as exported by tools/tiny_train.py: 'sequences' are 4 held-out conversations (prompt + reference "
        "completion); tiny_trained_logits.npy holds their logits at every position (rows: the sequences' positions "
        "concatenated) for the vocabulary ids in 'columns' (each position's top 16, 64 other used rows, and 2 "
        "unused rows, which share one unembedding row); 'greedy' holds transformers' greedy completions of "
        "held-out prompts (up to <|return|> or <|call|>)")


def log(*args):
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


def read_corpus(path):
    raw = gzip.open(path, "rb").read()
    data = np.frombuffer(raw, dtype="<u4")
    domains = [line.split() for line in gzip.open(path.replace(".bin.gz", ".domains.gz"), "rt").read().splitlines()]
    rows, i = [], 0
    while i < len(data):
        split, pl, cl = (int(x) for x in data[i:i + 3])
        i += 3
        rows.append({"split": split, "prompt": data[i:i + pl].astype(np.int64),
                     "completion": data[i + pl:i + pl + cl].astype(np.int64), "domain": domains[len(rows)][1]})
        i += pl + cl
    return rows


def hf_config(vocab, args):
    layer_types = ["sliding_attention" if l % 2 == 0 else "full_attention" for l in range(args.layers)]
    return {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": True,
        "attention_dropout": 0.0, "experts_per_token": 4, "num_experts_per_tok": 4, "head_dim": 64,
        "hidden_act": "silu", "hidden_size": args.hidden, "intermediate_size": args.intermediate,
        "initial_context_length": 4096, "initializer_range": 0.02, "max_position_embeddings": 131072,
        "layer_types": layer_types, "num_attention_heads": 8, "num_hidden_layers": args.layers,
        "num_key_value_heads": 1, "num_local_experts": args.experts, "output_router_logits": False,
        "router_aux_loss_coef": 0.9, "rms_norm_eps": 1e-05,
        "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                         "original_max_position_embeddings": 4096, "truncate": False},
        "rope_theta": 150000.0, "sliding_window": args.window, "swiglu_limit": 7.0, "tie_word_embeddings": False,
        "use_cache": True, "vocab_size": vocab,
        **({"eos_token_id": RETURN, "pad_token_id": PAD} if vocab == VOCAB else {}),
    }


def make_model(cfg_dict, tmp_dir):
    from transformers import AutoConfig, GptOssForCausalLM
    os.makedirs(tmp_dir, exist_ok=True)
    json.dump(cfg_dict, open(os.path.join(tmp_dir, "config.json"), "w"), indent=2)
    config = AutoConfig.from_pretrained(tmp_dir)
    config._attn_implementation = "eager"
    return GptOssForCausalLM(config)


# ---- batching ----

def batches(rows, token_budget, rng):
    order = rng.permutation(len(rows))
    chunk = 4096
    for start in range(0, len(order), chunk):
        part = sorted(order[start:start + chunk], key=lambda r: len(rows[r]["prompt"]) + len(rows[r]["completion"]))
        group = []
        for r in part:
            length = len(rows[r]["prompt"]) + len(rows[r]["completion"])
            if group and (len(group) + 1) * length > token_budget:
                yield group
                group = []
            group.append(r)
        if group:
            yield group


def make_batch(rows, group, remap, unk, device, rng, unk_rate):
    seqs = [np.concatenate([rows[r]["prompt"], rows[r]["completion"]]) for r in group]
    L = max(len(s) for s in seqs) - 1
    ids = np.full((len(seqs), L), unk, dtype=np.int64)
    tgt = np.full((len(seqs), L), -100, dtype=np.int64)
    for b, (r, s) in enumerate(zip(group, seqs)):
        c = remap[s]
        inp = c[:-1].copy()
        pl = len(rows[r]["prompt"])
        noise = (rng.random(len(inp)) < unk_rate) & (s[:-1] < FIRST_SPECIAL)
        noise[pl - 1:] = False  # only prompt tokens become the shared row
        inp[noise] = unk
        ids[b, :len(inp)] = inp
        tgt[b, pl - 1:len(s) - 1] = c[pl:]
    return torch.from_numpy(ids).to(device), torch.from_numpy(tgt).to(device)


def compact_loss(model, ids, tgt, log_unused):
    hidden = model.model(input_ids=ids, use_cache=False).last_hidden_state
    mask = tgt >= 0
    logits = model.lm_head(hidden[mask]).float()
    logits = torch.cat([logits[:, :-1], logits[:, -1:] + log_unused], dim=1)  # the shared row stands for them all
    return F.cross_entropy(logits, tgt[mask])


def load_exported(model, path, used, unk, layers):
    """Fills the compact model from an exported full-vocabulary checkpoint (experts: the MXFP4 values)."""
    import golden_logits as gl
    from safetensors.torch import load as load_bytes
    tensors = load_bytes(gzip.open(path, "rb").read())
    idx = torch.from_numpy(used)
    # The exported shared row: the row most of the ids this corpus does not use hold (an id unused here may
    # have had its own row in the corpus the checkpoint was trained on).
    unused = np.setdiff1d(np.arange(VOCAB), used)
    sample = unused[np.linspace(0, len(unused) - 1, 65).astype(np.int64)]
    head = tensors["lm_head.weight"]
    votes = [(int((head[sample] == head[int(i)]).all(-1).sum()), int(i)) for i in sample]
    shared = max(votes)[1]
    new_rows = None
    for name in ("model.embed_tokens.weight", "lm_head.weight"):
        full = tensors[name]
        is_new = (full[idx] == full[shared]).all(-1)
        new_rows = is_new if new_rows is None else new_rows & is_new
    count = int(new_rows.sum())
    gen = torch.Generator().manual_seed(1)
    for name in ("model.embed_tokens.weight", "lm_head.weight"):
        full = tensors[name]
        rows = full[idx].float()
        # Rows this corpus uses that the checkpoint shared: the shared row plus a little noise, so they can part.
        rows[new_rows] += 0.02 * torch.randn(count, rows.shape[1], generator=gen)
        tensors[name] = torch.cat([rows, full[shared:shared + 1].float()])
    state = gl.hf_state_dict(model, tensors, False, layers, 512, 64)
    model.load_state_dict({k: v.to(next(model.parameters()).device) for k, v in state.items()}, strict=True)
    return count


def set_qat(model, on):
    import torch.nn.utils.parametrize as P
    for layer in model.model.layers:
        for name in ("gate_up_proj", "down_proj"):
            if on:
                P.register_parametrization(layer.mlp.experts, name, FakeQuant())
            elif P.is_parametrized(layer.mlp.experts, name):
                P.remove_parametrizations(layer.mlp.experts, name, leave_parametrized=False)
    return on


def train_step(model, opt, ids, tgt, log_unused, use_autocast):
    autocast = torch.autocast(device_type="cuda", dtype=torch.bfloat16) if use_autocast else contextlib.nullcontext()
    with autocast:
        loss = compact_loss(model, ids, tgt, log_unused)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--train-seconds", type=float, default=200)
    ap.add_argument("--qat-from", type=float, default=0.6, help="share of the time after which experts train as MXFP4")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--intermediate", type=int, default=256)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--tokens-per-batch", type=int, default=65536)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-limit", type=int, default=400)
    ap.add_argument("--train-eval", type=int, default=200, help="train-split conversations to evaluate")
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--init", help="continue from an exported model.safetensors.gz (any corpus vocabulary)")
    ap.add_argument("--prev-metrics", help="metrics.json of the run --init came from (its curve comes first)")
    ap.add_argument("--deadline", type=float, default=0,
                    help="seconds from the start by which everything must be written (0: none): training stops early "
                         "enough for the export, and evaluation stops starting new batches when it is near")
    ap.add_argument("--reserve", type=float, default=120, help="seconds kept for export and evaluation under --deadline")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: by time only; dry runs)")
    ap.add_argument("--samples", type=int, default=80, help="held-out generations kept in metrics.json (token ids)")
    ap.add_argument("--golden-greedy", type=int, default=12, help="held-out prompts whose greedy generations go into golden.json")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t_start = time.time()
    work = tempfile.mkdtemp(prefix="tiny_train.")  # not in --out: the device returns at most 8 files from there
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    import transformers
    log("torch", torch.__version__, "transformers", transformers.__version__, "device", device)

    rows = read_corpus(args.corpus)
    train = [r for r in rows if r["split"] == 0]
    held = [r for r in rows if r["split"] == 1][:args.eval_limit]
    used = np.unique(np.concatenate([np.concatenate([r["prompt"], r["completion"]]) for r in train]))
    unk = len(used)
    remap = np.full(VOCAB, unk, dtype=np.int64)
    remap[used] = np.arange(len(used))
    log_unused = math.log(VOCAB - len(used))
    log(f"{len(train)} train / {len(held)} eval conversations, {sum(len(r['prompt']) + len(r['completion']) for r in train)} "
        f"train tokens, {len(used)} used vocabulary rows")

    model = make_model(hf_config(len(used) + 1, args), os.path.join(work, "compact")).to(device)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.fill_(1.0)
            elif name.endswith("bias") or name.endswith("sinks"):
                p.zero_()
            else:
                p.normal_(0.0, 0.02)
    if args.init:
        fresh = load_exported(model, args.init, used, unk, args.layers)
        log(f"continuing from {args.init} ({fresh} used rows are new to it)")
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params / 1e6:.2f} M parameters (compact vocabulary)")
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    model.train()
    curve, step, epoch, qat, qat_failed = [], 0, 0, False, False
    prev_curve = json.load(open(args.prev_metrics))["curve"] if args.prev_metrics else []
    step_offset = prev_curve[-1]["step"] + 20 if prev_curve else 0
    use_autocast = device == "cuda"
    t0 = time.time()
    if args.deadline:  # the cosine schedule must end where the deadline stops the training
        budget = args.deadline - args.reserve - (t0 - t_start)
        if budget < args.train_seconds:
            log(f"--train-seconds {args.train_seconds:g} cut to {budget:.0f} by --deadline {args.deadline:g}")
            args.train_seconds = max(budget, 1.0)
    seen_tokens = 0
    while True:
        epoch += 1
        stop = False
        for group in batches(train, args.tokens_per_batch, rng):
            frac = (time.time() - t0) / args.train_seconds
            if frac >= 1.0 or (args.max_steps and step >= args.max_steps):
                stop = True
                break
            if not qat and not qat_failed and frac >= args.qat_from:
                qat = set_qat(model, True)
                log(f"step {step}: experts now train through MXFP4")
            lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0))))
            for g in opt.param_groups:
                g["lr"] = lr
            ids, tgt = make_batch(train, group, remap, unk, device, rng, 0.02)
            try:
                loss = train_step(model, opt, ids, tgt, log_unused, use_autocast)
            except Exception:
                # One fallback each, so that a transformers version difference cannot lose the run.
                traceback.print_exc()
                if use_autocast and step == 0:
                    use_autocast = False
                    log("retrying in float32 without autocast")
                elif qat:
                    qat, qat_failed = set_qat(model, False), True
                    log("MXFP4 fake-quant failed: experts are quantized after training instead")
                else:
                    raise
                opt.zero_grad(set_to_none=True)
                loss = train_step(model, opt, ids, tgt, log_unused, use_autocast)
            seen_tokens += int(ids.numel())
            if step % 20 == 0:
                value = float(loss)
                curve.append({"step": step + step_offset, "seconds": round(time.time() - t0, 1), "loss": value, "lr": lr,
                              "tokens": seen_tokens, "qat": qat})
                if step % 100 == 0:
                    log(f"step {step} epoch {epoch} loss {value:.4f} lr {lr:.2e} tokens {seen_tokens}")
            step += 1
        if stop:
            break
    log(f"trained {step} steps, {epoch} epochs, {seen_tokens} tokens in {time.time() - t0:.0f} s")
    curve = [dict(c, run=1) for c in prev_curve] + curve
    metrics = {"args": vars(args), "qat": qat, "autocast_bf16": use_autocast, "steps": step, "epochs": epoch, "tokens": seen_tokens, "used_rows": len(used),
               "curve": curve, "compact_parameters": n_params}

    # ---- export: full vocabulary, shared rows, MXFP4 experts ----
    model.eval()
    state = {}
    with torch.no_grad():
        emb = model.model.embed_tokens.weight.detach().float().cpu()
        head = model.lm_head.weight.detach().float().cpu()
        full_emb = emb[unk].repeat(VOCAB, 1)
        full_emb[torch.from_numpy(used)] = emb[:unk]
        full_head = head[unk].repeat(VOCAB, 1)
        full_head[torch.from_numpy(used)] = head[:unk]
        state["model.embed_tokens.weight"] = full_emb.to(torch.bfloat16)
        state["lm_head.weight"] = full_head.to(torch.bfloat16)
        state["model.norm.weight"] = model.model.norm.weight.detach().cpu().to(torch.bfloat16)
        for l, layer in enumerate(model.model.layers):
            p = f"model.layers.{l}."
            a, m = layer.self_attn, layer.mlp
            for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
                state[p + f"self_attn.{n}.weight"] = getattr(a, n).weight.detach().cpu().to(torch.bfloat16)
                state[p + f"self_attn.{n}.bias"] = getattr(a, n).bias.detach().cpu().to(torch.bfloat16)
            state[p + "self_attn.sinks"] = a.sinks.detach().cpu().to(torch.bfloat16)
            state[p + "input_layernorm.weight"] = layer.input_layernorm.weight.detach().cpu().to(torch.bfloat16)
            state[p + "post_attention_layernorm.weight"] = layer.post_attention_layernorm.weight.detach().cpu().to(torch.bfloat16)
            state[p + "mlp.router.weight"] = m.router.weight.detach().cpu().to(torch.bfloat16)
            state[p + "mlp.router.bias"] = m.router.bias.detach().cpu().to(torch.bfloat16)
            ex = m.experts
            for n in ("gate_up_proj", "down_proj"):
                raw = ex.parametrizations[n].original if qat else getattr(ex, n)
                blocks, scales = pack_mxfp4(raw)
                state[p + f"mlp.experts.{n}_blocks"] = blocks
                state[p + f"mlp.experts.{n}_scales"] = scales
                state[p + f"mlp.experts.{n}_bias"] = getattr(ex, n + "_bias").detach().cpu().to(torch.bfloat16)
    from safetensors.torch import save_file
    local = os.path.join(work, "full")
    os.makedirs(local, exist_ok=True)
    cfg_full = hf_config(VOCAB, args)
    cfg_full["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    json.dump(cfg_full, open(os.path.join(args.out, "config.json"), "w"), indent=2)
    json.dump(cfg_full, open(os.path.join(local, "config.json"), "w"), indent=2)
    st_path = os.path.join(local, "model.safetensors")
    save_file({k: v.contiguous() for k, v in state.items()}, st_path, metadata={"format": "pt"})
    with open(st_path, "rb") as src, gzip.open(os.path.join(args.out, "model.safetensors.gz"), "wb", compresslevel=6) as dst:
        dst.write(src.read())
    log(f"exported: {os.path.getsize(st_path) / 1e6:.1f} MB safetensors, "
        f"{os.path.getsize(os.path.join(args.out, 'model.safetensors.gz')) / 1e6:.1f} MB gzip'd")
    json.dump(metrics, open(os.path.join(args.out, "metrics.json"), "w"), indent=1)

    try:
        from tiny_plot import plot
        drawer = plot(curve, os.path.join(args.out, "loss.png"),
                      f"tiny gpt-oss: {n_params / 1e6:.1f} M params, {seen_tokens / 1e6:.0f} M tokens")
        log(f"loss curve: loss.png ({drawer})")
    except Exception:
        traceback.print_exc()

    # ---- the exported checkpoint in transformers, float32 (goldens, greedy, held-out accuracy) ----
    try:
        import golden_logits as gl
        from transformers import AutoConfig, GptOssForCausalLM
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        config = AutoConfig.from_pretrained(local)
        config._attn_implementation = "eager"
        if hasattr(config, "quantization_config"):
            try:
                delattr(config, "quantization_config")
            except AttributeError:
                config.quantization_config = None
        full = GptOssForCausalLM(config).float().eval()
        tensors = gl.load_tensors(st_path)
        hf_state = gl.hf_state_dict(full, tensors, False, config.num_hidden_layers, 512, 64)
        full.load_state_dict(hf_state, strict=True)
        full = full.to(device)
        # Same expert values as trained?
        if qat:
            e0 = model.model.layers[0].mlp.experts.gate_up_proj.detach().float()
            diff = (full.model.layers[0].mlp.experts.gate_up_proj.detach() - e0).abs().max().item()
            log(f"exported layer-0 gate_up vs trained fake-quant: max |diff| {diff:.3g}")
        for r in held + train[:args.train_eval]:
            r["completion_ids"] = list(r["completion"])
        head = lambda h: full.lm_head(h)  # noqa: E731
        # Goldens first (the tests of the new checkpoint need them, whatever the deadline leaves of the
        # evaluation): 4 held-out conversations of different domains, prompt + expected completion, the
        # columns each position's top 16, 64 other used rows and 2 unused (shared) rows; and greedy
        # generations of the first 12 held-out prompts.
        picked, seen = [], set()
        for r in held:
            if r["domain"] not in seen and len(picked) < 4:
                seen.add(r["domain"])
                picked.append(r)
        seqs = [list(map(int, np.concatenate([r["prompt"], r["completion"]]))) for r in picked]
        all_logits = []
        with torch.no_grad():
            for s in seqs:
                lg = full(input_ids=torch.tensor([s], device=device), use_cache=False).logits[0].float().cpu()
                all_logits.append(lg)
        unused = [i for i in (0, 5000, 150000, 200500, 201000) if remap[i] == unk][:2]
        columns = set(torch.cat(all_logits).topk(16, dim=-1).indices.flatten().tolist())
        columns |= set(int(x) for x in rng.choice(used, size=min(64, len(used)), replace=False))
        cols = sorted(columns | set(unused))
        stacked = torch.cat(all_logits)[:, cols].numpy().astype(np.float32)
        np.save(os.path.join(args.out, "golden_logits.npy"), stacked)
        first = held[:args.golden_greedy]
        outs = greedy(full, [r["prompt"] for r in first], max(len(r["completion_ids"]) for r in first) + 8, head,
                      device, PAD)
        greedy_cases = [{"domain": r["domain"], "prompt": list(map(int, r["prompt"])), "completion": list(map(int, o))}
                        for r, o in zip(first, outs)]
        json.dump({"sequences": seqs, "columns": cols, "unused_columns": unused, "greedy": greedy_cases,
                   "note": NOTE},
                  open(os.path.join(args.out, "golden.json"), "w"))
        log(f"goldens: {stacked.shape} logits, {len(greedy_cases)} greedy cases")
        stop_at = t_start + args.deadline - 15 if args.deadline else None
        acc = evaluate(full, held, head, device, PAD, deadline=stop_at)
        log("held-out accuracy (transformers float32, greedy):", json.dumps(acc["overall"]))
        for d, v in acc["by_domain"].items():
            log(f"  {d:16s} n {v['n']:4d}  answer {v['answer']:.3f}  exact {v['exact']:.3f}")
        metrics["heldout"] = acc
        metrics["samples"] = [{"domain": r["domain"], "expected": list(map(int, r["completion_ids"])),
                               "generated": list(map(int, r["generated"]))}
                              for r in held[:args.samples] if "generated" in r]
        json.dump(metrics, open(os.path.join(args.out, "metrics.json"), "w"), indent=1)
        acc_train = evaluate(full, train[:args.train_eval], head, device, PAD, deadline=stop_at)
        log("train-split accuracy:", json.dumps(acc_train["overall"]))
        metrics["train_accuracy"] = acc_train
    except Exception:
        traceback.print_exc()
    json.dump(metrics, open(os.path.join(args.out, "metrics.json"), "w"), indent=1)
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    log(f"done in {time.time() - t_start:.0f} s")


if __name__ == "__main__":
    main()

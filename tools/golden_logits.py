#!/usr/bin/env python3
"""Golden logits for gossamer's CPU backend from Hugging Face transformers' GptOssForCausalLM (float32).

Runs on the GPU machine (torch, transformers, safetensors there; nothing here is written by gossamer
except the `tiny` checkpoint it reads). For every case it writes tokens (JSON) and float32 logits
[batch, seq, vocab] (.npy):

  tiny  - a checkpoint written by `gossamer make-dummy --preset tiny --seed 0` (passed with --tiny)
  hf_sharded - a checkpoint written here with torch + safetensors in the Hugging Face layout, sharded
          with an index, config.json re-saved by transformers itself; other layer/expert/head/window/vocab
          sizes, f32 norms, a different YaRN
  original - a checkpoint written here in the `original/` layout (fused qkv, oai names and config keys),
          top-2 routing, other sizes

Expert weights are dequantized from the same MXFP4 bytes with transformers' own
`convert_moe_packed_tensors` (checked against an independent numpy decode).

Usage: python3 tools/golden_logits.py --tiny DIR --out OUTDIR
       python3 tools/golden_logits.py --case NAME --checkpoint DIR --batch B --length L [--rows N]
               [--device cuda] --out OUTDIR
The second form runs one gossamer-written checkpoint (e.g. `make-dummy --init conditioned`) and, with
--rows N, keeps the logits of N positions per sequence spread over the sequence (plus the last), written
with NAME_positions.json, for vocabularies too large to store every row.
"""
import argparse
import json
import math
import os
import shutil

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoConfig, GptOssForCausalLM

FP4_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0],
                      dtype=np.float32)


def numpy_dequant(blocks, scales):
    """[E, rows, G, 16] u8 + [E, rows, G] u8 -> [E, rows, G*32] f32 (low nibble = even element)."""
    blocks = blocks.numpy()
    scales = scales.numpy().astype(np.int32) - 127
    lo = FP4_VALUES[blocks & 0xF]
    hi = FP4_VALUES[blocks >> 4]
    values = np.stack([lo, hi], axis=-1).reshape(*blocks.shape[:-1], 32)
    values = np.ldexp(values, scales[..., None])
    return torch.from_numpy(values.reshape(*blocks.shape[:-2], -1).astype(np.float32))


def reference_dequant(blocks, scales):
    try:
        from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    except ImportError:
        return None
    out = convert_moe_packed_tensors(blocks, scales, dtype=torch.float32)
    # transformers returns [E, cols, rows] (transposed for its [E, in, out] parameter); undo that.
    return out.transpose(1, 2).contiguous().float()


def dequant(blocks, scales):
    mine = numpy_dequant(blocks, scales)
    ref = reference_dequant(blocks, scales)
    if ref is not None:
        if ref.shape != mine.shape and ref.transpose(1, 2).shape == mine.shape:
            ref = ref.transpose(1, 2).contiguous()
        assert ref.shape == mine.shape, (ref.shape, mine.shape)
        assert torch.equal(ref, mine), "transformers' MXFP4 decode disagrees with the numpy decode"
        return ref
    return mine


def load_tensors(weights_path):
    if weights_path.endswith(".index.json"):
        index = json.load(open(weights_path))
        tensors = {}
        for shard in sorted(set(index["weight_map"].values())):
            tensors.update(load_file(os.path.join(os.path.dirname(weights_path), shard)))
        return tensors
    return load_file(weights_path)


def orient(param_shape, dq):
    """dq is [E, out, in] (the checkpoint's orientation); return it in the parameter's.

    transformers' GptOssExperts keeps [E, in, out] parameters (gate_up [E, hidden, 2*inter], down
    [E, inter, hidden]): transpose always. Shapes alone cannot tell when in == out (20b's down_proj is
    2880 x 2880), so the shape is only checked, never used to decide.
    """
    t = dq.transpose(1, 2).contiguous()
    assert tuple(t.shape) == tuple(param_shape), (param_shape, dq.shape)
    return t


def hf_state_dict(model, tensors, original, num_layers, q_width, kv_width):
    """Maps checkpoint tensors onto the transformers model's parameter names."""
    def original_name(name):
        if name == "model.embed_tokens.weight":
            return "embedding.weight", None
        if name == "model.norm.weight":
            return "norm.scale", None
        if name == "lm_head.weight":
            return "unembedding.weight", None
        parts = name.split(".")
        layer, rest = parts[2], ".".join(parts[3:])
        table = {
            "input_layernorm.weight": ("attn.norm.scale", None),
            "self_attn.q_proj.weight": ("attn.qkv.weight", (0, q_width)),
            "self_attn.k_proj.weight": ("attn.qkv.weight", (q_width, q_width + kv_width)),
            "self_attn.v_proj.weight": ("attn.qkv.weight", (q_width + kv_width, q_width + 2 * kv_width)),
            "self_attn.q_proj.bias": ("attn.qkv.bias", (0, q_width)),
            "self_attn.k_proj.bias": ("attn.qkv.bias", (q_width, q_width + kv_width)),
            "self_attn.v_proj.bias": ("attn.qkv.bias", (q_width + kv_width, q_width + 2 * kv_width)),
            "self_attn.o_proj.weight": ("attn.out.weight", None),
            "self_attn.o_proj.bias": ("attn.out.bias", None),
            "self_attn.sinks": ("attn.sinks", None),
            "post_attention_layernorm.weight": ("mlp.norm.scale", None),
            "mlp.router.weight": ("mlp.gate.weight", None),
            "mlp.router.bias": ("mlp.gate.bias", None),
            "mlp.experts.gate_up_proj_bias": ("mlp.mlp1_bias", None),
            "mlp.experts.down_proj_bias": ("mlp.mlp2_bias", None),
            "mlp.experts.gate_up_proj_blocks": ("mlp.mlp1_weight.blocks", None),
            "mlp.experts.gate_up_proj_scales": ("mlp.mlp1_weight.scales", None),
            "mlp.experts.down_proj_blocks": ("mlp.mlp2_weight.blocks", None),
            "mlp.experts.down_proj_scales": ("mlp.mlp2_weight.scales", None),
        }
        target, rows = table[rest]
        return f"block.{layer}.{target}", rows

    def get(name):
        if not original:
            return tensors[name]
        source, rows = original_name(name)
        t = tensors[source]
        return t[rows[0]:rows[1]] if rows else t

    out = {}
    for name, param in model.state_dict().items():
        if name.endswith("experts.gate_up_proj") or name.endswith("experts.down_proj"):
            dq = dequant(get(name + "_blocks"), get(name + "_scales"))
            out[name] = orient(param.shape, dq)
        else:
            t = get(name).float()
            assert tuple(t.shape) == tuple(param.shape), (name, t.shape, param.shape)
            out[name] = t
    return out


def run_hf(config, tensors, original, tokens, device="cpu", positions=None):
    config._attn_implementation = "eager"
    for key in ("pad_token_id", "eos_token_id", "bos_token_id"):  # small test vocabularies lack these ids
        if isinstance(getattr(config, key, None), int) and getattr(config, key) >= config.vocab_size:
            setattr(config, key, None)
    if hasattr(config, "quantization_config"):
        try:
            delattr(config, "quantization_config")
        except AttributeError:
            config.quantization_config = None
    torch.manual_seed(0)
    model = GptOssForCausalLM(config).float().eval()
    q_width = config.num_attention_heads * config.head_dim
    kv_width = config.num_key_value_heads * config.head_dim
    state = hf_state_dict(model, tensors, original, config.num_hidden_layers, q_width, kv_width)
    missing, unexpected = model.load_state_dict(state, strict=True), None
    del state
    model = model.to(device)
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 means float32
    torch.backends.cudnn.allow_tf32 = False
    with torch.no_grad():
        ids = torch.tensor(tokens, dtype=torch.long, device=device)
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits
        if positions is not None:
            logits = logits[:, positions, :]
    return logits.float().cpu().numpy()


def random_bf16(gen, shape, std, mean=0.0):
    return (torch.randn(*shape, generator=gen) * std + mean).to(torch.bfloat16)


def write_python_checkpoint(dir_path, cfg, original, seed, shards, norm_dtype):
    """A checkpoint written with torch + safetensors (not gossamer): HF names, or original names."""
    gen = torch.Generator().manual_seed(seed)
    H, I, E = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_local_experts"]
    qw, kvw = cfg["num_attention_heads"] * cfg["head_dim"], cfg["num_key_value_heads"] * cfg["head_dim"]
    V, L = cfg["vocab_size"], cfg["num_hidden_layers"]
    t = {}

    def blocks(rows, cols):
        return torch.randint(0, 256, (E, rows, cols // 32, 16), generator=gen, dtype=torch.int32).to(torch.uint8)

    def scales(rows, cols, std):
        e = math.log2(std / math.sqrt(68.5 / 8))
        lo = math.floor(e)
        return (127 + lo + torch.randint(0, 2, (E, rows, cols // 32), generator=gen)).to(torch.uint8)

    t["model.embed_tokens.weight"] = random_bf16(gen, (V, H), 1.0)
    t["model.norm.weight"] = random_bf16(gen, (H,), 0.1, 1.0).to(norm_dtype)
    t["lm_head.weight"] = random_bf16(gen, (V, H), 1 / math.sqrt(H))
    for l in range(L):
        p = f"model.layers.{l}."
        t[p + "input_layernorm.weight"] = random_bf16(gen, (H,), 0.1, 1.0).to(norm_dtype)
        t[p + "post_attention_layernorm.weight"] = random_bf16(gen, (H,), 0.1, 1.0).to(norm_dtype)
        for n, rows in (("q", qw), ("k", kvw), ("v", kvw)):
            t[p + f"self_attn.{n}_proj.weight"] = random_bf16(gen, (rows, H), 1 / math.sqrt(H))
            t[p + f"self_attn.{n}_proj.bias"] = random_bf16(gen, (rows,), 0.2)
        t[p + "self_attn.o_proj.weight"] = random_bf16(gen, (H, qw), 1 / math.sqrt(qw))
        t[p + "self_attn.o_proj.bias"] = random_bf16(gen, (H,), 0.2)
        t[p + "self_attn.sinks"] = random_bf16(gen, (cfg["num_attention_heads"],), 1.5, 1.0)
        t[p + "mlp.router.weight"] = random_bf16(gen, (E, H), 1 / math.sqrt(H))
        t[p + "mlp.router.bias"] = random_bf16(gen, (E,), 0.2)
        t[p + "mlp.experts.gate_up_proj_blocks"] = blocks(2 * I, H)
        t[p + "mlp.experts.gate_up_proj_scales"] = scales(2 * I, H, 2.5 / math.sqrt(H))
        t[p + "mlp.experts.gate_up_proj_bias"] = random_bf16(gen, (E, 2 * I), 0.2)
        t[p + "mlp.experts.down_proj_blocks"] = blocks(H, I)
        t[p + "mlp.experts.down_proj_scales"] = scales(H, I, 0.5 / math.sqrt(I))
        t[p + "mlp.experts.down_proj_bias"] = random_bf16(gen, (E, H), 0.2)
    os.makedirs(dir_path, exist_ok=True)
    if original:
        o = {"embedding.weight": t["model.embed_tokens.weight"], "norm.scale": t["model.norm.weight"],
             "unembedding.weight": t["lm_head.weight"]}
        for l in range(L):
            p, b = f"model.layers.{l}.", f"block.{l}."
            o[b + "attn.norm.scale"] = t[p + "input_layernorm.weight"]
            o[b + "attn.qkv.weight"] = torch.cat([t[p + f"self_attn.{n}_proj.weight"] for n in "qkv"]).contiguous()
            o[b + "attn.qkv.bias"] = torch.cat([t[p + f"self_attn.{n}_proj.bias"] for n in "qkv"]).contiguous()
            o[b + "attn.out.weight"] = t[p + "self_attn.o_proj.weight"]
            o[b + "attn.out.bias"] = t[p + "self_attn.o_proj.bias"]
            o[b + "attn.sinks"] = t[p + "self_attn.sinks"]
            o[b + "mlp.norm.scale"] = t[p + "post_attention_layernorm.weight"]
            o[b + "mlp.gate.weight"] = t[p + "mlp.router.weight"]
            o[b + "mlp.gate.bias"] = t[p + "mlp.router.bias"]
            o[b + "mlp.mlp1_weight.blocks"] = t[p + "mlp.experts.gate_up_proj_blocks"]
            o[b + "mlp.mlp1_weight.scales"] = t[p + "mlp.experts.gate_up_proj_scales"]
            o[b + "mlp.mlp1_bias"] = t[p + "mlp.experts.gate_up_proj_bias"]
            o[b + "mlp.mlp2_weight.blocks"] = t[p + "mlp.experts.down_proj_blocks"]
            o[b + "mlp.mlp2_weight.scales"] = t[p + "mlp.experts.down_proj_scales"]
            o[b + "mlp.mlp2_bias"] = t[p + "mlp.experts.down_proj_bias"]
        save_file(o, os.path.join(dir_path, "model.safetensors"))
        return o
    names = list(t.keys())
    per = (len(names) + shards - 1) // shards
    weight_map = {}
    for s in range(shards):
        part = {n: t[n].contiguous() for n in names[s * per:(s + 1) * per]}
        fname = f"model-{s:05d}-of-{shards - 1:05d}.safetensors"  # the converter's off-by-one naming
        save_file(part, os.path.join(dir_path, fname), metadata={"format": "pt"})
        weight_map.update({n: fname for n in part})
    total = sum(v.numel() * v.element_size() for v in t.values())
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map},
              open(os.path.join(dir_path, "model.safetensors.index.json"), "w"), indent=2)
    return t


def hf_config_dict(L, E, k, V, H, I, q, kv, window, layer_types, theta, factor, orig):
    return {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "attention_bias": True,
        "attention_dropout": 0.0, "eos_token_id": 200002, "pad_token_id": 199999, "experts_per_token": k,
        "num_experts_per_tok": k, "head_dim": 64, "hidden_act": "silu", "hidden_size": H, "intermediate_size": I,
        "initial_context_length": orig, "initializer_range": 0.02, "max_position_embeddings": int(orig * factor),
        "layer_types": layer_types, "num_attention_heads": q, "num_hidden_layers": L, "num_key_value_heads": kv,
        "num_local_experts": E, "output_router_logits": False, "router_aux_loss_coef": 0.9, "rms_norm_eps": 1e-05,
        "rope_scaling": {"rope_type": "yarn", "factor": factor, "beta_fast": 32.0, "beta_slow": 1.0,
                         "original_max_position_embeddings": orig, "truncate": False},
        "rope_theta": theta, "sliding_window": window, "swiglu_limit": 7.0, "tie_word_embeddings": False,
        "use_cache": True, "vocab_size": V,
    }


def random_tokens(seed, batch, length, vocab):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, length), generator=gen).tolist()


def save_case(out_dir, name, tokens, logits):
    json.dump(tokens, open(os.path.join(out_dir, f"{name}_tokens.json"), "w"))
    np.save(os.path.join(out_dir, f"{name}_logits.npy"), logits.astype(np.float32))
    print(f"{name}: logits {logits.shape}, |logits| mean {np.abs(logits).mean():.3f}, "
          f"argmax spread {len(np.unique(logits.argmax(-1)))}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", help="checkpoint dir written by gossamer make-dummy --preset tiny")
    ap.add_argument("--out", required=True)
    ap.add_argument("--case", help="one named case from --checkpoint instead of the three default cases")
    ap.add_argument("--checkpoint", help="gossamer-written checkpoint dir (with --case)")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--length", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1, help="token seed")
    ap.add_argument("--rows", type=int, default=0, help="positions kept per sequence (0 = all)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(min(16, os.cpu_count() or 1))
    import transformers
    print("transformers", transformers.__version__, "torch", torch.__version__, flush=True)

    if args.case:
        config = AutoConfig.from_pretrained(args.checkpoint)
        index = os.path.join(args.checkpoint, "model.safetensors.index.json")
        tensors = load_tensors(index if os.path.exists(index) else os.path.join(args.checkpoint, "model.safetensors"))
        tokens = random_tokens(args.seed, args.batch, args.length, config.vocab_size)
        positions = None
        if args.rows:
            # rows − 8 positions spread over the sequence, then its last 8 (decoded one token at a time).
            spread = max(1, args.rows - 8)
            step = max(1, (args.length - 8) // spread)
            positions = sorted(set(list(range(step - 1, args.length - 8, step))[:spread] +
                                   list(range(args.length - 8, args.length))))
            json.dump(positions, open(os.path.join(args.out, f"{args.case}_positions.json"), "w"))
        save_case(args.out, args.case, tokens, run_hf(config, tensors, False, tokens, args.device, positions))
        return
    assert args.tiny, "give --tiny DIR (or --case with --checkpoint)"

    # 1. gossamer's own tiny checkpoint.
    config = AutoConfig.from_pretrained(args.tiny)
    tensors = load_tensors(os.path.join(args.tiny, "model.safetensors"))
    tokens = random_tokens(1, 2, 200, config.vocab_size)
    save_case(args.out, "tiny", tokens, run_hf(config, tensors, False, tokens))

    # 2. A sharded Hugging Face checkpoint written here; config.json re-saved by transformers itself.
    hf_dir = os.path.join(args.out, "checkpoints", "hf_sharded")
    cfg = hf_config_dict(L=3, E=6, k=4, V=1500, H=192, I=160, q=16, kv=2, window=16,
                         layer_types=["full_attention", "sliding_attention", "sliding_attention"],
                         theta=50000.0, factor=8.0, orig=512)
    tensors = write_python_checkpoint(hf_dir, cfg, original=False, seed=2, shards=2, norm_dtype=torch.float32)
    json.dump(cfg, open(os.path.join(hf_dir, "config.json"), "w"), indent=2)
    AutoConfig.from_pretrained(hf_dir).save_pretrained(hf_dir)
    config = AutoConfig.from_pretrained(hf_dir)
    tokens = random_tokens(3, 2, 72, cfg["vocab_size"])
    save_case(args.out, "hf_sharded", tokens, run_hf(config, tensors, False, tokens))

    # 3. An original/-layout checkpoint written here (fused qkv, oai names and config keys), top-2.
    orig_dir = os.path.join(args.out, "checkpoints", "original_layout", "original")
    cfg = hf_config_dict(L=2, E=5, k=2, V=800, H=128, I=96, q=8, kv=1, window=32,
                         layer_types=["sliding_attention", "full_attention"], theta=150000.0, factor=32.0, orig=4096)
    tensors = write_python_checkpoint(orig_dir, cfg, original=True, seed=4, shards=1, norm_dtype=torch.bfloat16)
    json.dump({"num_hidden_layers": 2, "num_experts": 5, "experts_per_token": 2, "vocab_size": 800,
               "hidden_size": 128, "intermediate_size": 96, "swiglu_limit": 7.0, "head_dim": 64,
               "num_attention_heads": 8, "num_key_value_heads": 1, "sliding_window": 32,
               "initial_context_length": 4096, "rope_theta": 150000.0, "rope_scaling_factor": 32.0,
               "rope_ntk_alpha": 1.0, "rope_ntk_beta": 32.0},
              open(os.path.join(orig_dir, "config.json"), "w"), indent=2)
    hf_twin = os.path.join(args.out, "original_layout_hf_config")
    os.makedirs(hf_twin, exist_ok=True)
    json.dump(cfg, open(os.path.join(hf_twin, "config.json"), "w"), indent=2)
    config = AutoConfig.from_pretrained(hf_twin)
    shutil.rmtree(hf_twin)
    tokens = random_tokens(5, 2, 80, cfg["vocab_size"])
    save_case(args.out, "original_layout", tokens, run_hf(config, tensors, True, tokens))


if __name__ == "__main__":
    main()

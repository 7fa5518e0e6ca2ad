"""Dry-run stand-in for the two names of transformers that tools/tiny_train.py uses (AutoConfig,
GptOssForCausalLM), for machines without transformers (tools/tiny_dryrun/run.sh). Never on the GPU machine,
which has the real transformers 5.17: this is only so that the training script's own code (batching, loss,
MXFP4 fake quantization, export, evaluation, goldens, plot) runs end to end on a CPU before the one device
call. The forward mirrors transformers' modeling_gpt_oss (eager attention with sinks, sliding window, YaRN,
top-k router, clamped SwiGLU experts with [E, in, out] parameters); run.sh checks it against the
transformers float32 goldens of the shipped checkpoint (tests/data/golden/tiny_trained*) first.
"""
import json
import math
import os
import types

import torch
import torch.nn.functional as F
from torch import nn

__version__ = "dry-run stand-in (tools/tiny_dryrun)"


class AutoConfig:
    @staticmethod
    def from_pretrained(path):
        config = types.SimpleNamespace(**json.load(open(os.path.join(path, "config.json"))))
        config._attn_implementation = "eager"
        return config


def yarn_inv_freq(c):
    dim, base, r = c.head_dim, c.rope_theta, c.rope_scaling
    factor, orig = r["factor"], r["original_max_position_embeddings"]

    def correction_dim(rotations):
        return dim * math.log(orig / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(r.get("beta_fast", 32)), correction_dim(r.get("beta_slow", 1))
    if r.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    extrapolation_weight = 1 - ramp
    inv = (1.0 / (factor * pos_freqs)) * (1 - extrapolation_weight) + (1.0 / pos_freqs) * extrapolation_weight
    return inv, 0.1 * math.log(factor) + 1.0


def rotate(x, cos, sin):
    a, b = torch.chunk(x, 2, dim=-1)
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(n)), eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        return (self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))).to(dtype)


class Attention(nn.Module):
    def __init__(self, c, sliding):
        super().__init__()
        h, d = c.num_attention_heads, c.head_dim
        self.h, self.kv, self.d = h, c.num_key_value_heads, d
        self.window = c.sliding_window if sliding else None
        self.q_proj = nn.Linear(c.hidden_size, h * d, bias=True)
        self.k_proj = nn.Linear(c.hidden_size, self.kv * d, bias=True)
        self.v_proj = nn.Linear(c.hidden_size, self.kv * d, bias=True)
        self.o_proj = nn.Linear(h * d, c.hidden_size, bias=True)
        self.sinks = nn.Parameter(torch.empty(h))

    def forward(self, x, cos, sin):
        B, L, _ = x.shape
        q = self.q_proj(x).view(B, L, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, L, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, L, self.kv, self.d).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k = k.repeat_interleave(self.h // self.kv, dim=1)
        v = v.repeat_interleave(self.h // self.kv, dim=1)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.d)
        i = torch.arange(L, device=x.device)
        allowed = i[None, :] <= i[:, None]
        if self.window:
            allowed &= i[:, None] - i[None, :] < self.window
        w = w.masked_fill(~allowed, torch.finfo(w.dtype).min)
        logits = torch.cat([w, self.sinks.reshape(1, -1, 1, 1).expand(B, -1, L, 1).to(w.dtype)], dim=-1)
        logits = logits - logits.max(dim=-1, keepdim=True).values
        p = F.softmax(logits, dim=-1)[..., :-1]
        return self.o_proj(torch.matmul(p.to(v.dtype), v).transpose(1, 2).reshape(B, L, -1))


class Experts(nn.Module):
    def __init__(self, c):
        super().__init__()
        E, H, I = c.num_local_experts, c.hidden_size, c.intermediate_size
        self.gate_up_proj = nn.Parameter(torch.empty(E, H, 2 * I))
        self.gate_up_proj_bias = nn.Parameter(torch.empty(E, 2 * I))
        self.down_proj = nn.Parameter(torch.empty(E, I, H))
        self.down_proj_bias = nn.Parameter(torch.empty(E, H))
        self.limit, self.alpha = c.swiglu_limit, 1.702

    def forward(self, x, scores):  # x [T, H], scores [T, E]
        out = torch.zeros_like(x)
        for e in range(self.gate_up_proj.shape[0]):
            rows = torch.nonzero(scores[:, e] > 0).flatten()
            if rows.numel() == 0:
                continue
            gu = x[rows] @ self.gate_up_proj[e] + self.gate_up_proj_bias[e]
            gate, up = gu[..., ::2].clamp(max=self.limit), gu[..., 1::2].clamp(-self.limit, self.limit)
            y = ((up + 1) * (gate * torch.sigmoid(gate * self.alpha))) @ self.down_proj[e] + self.down_proj_bias[e]
            out = out.index_add(0, rows, y * scores[rows, e, None].to(y.dtype))
        return out


class Router(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.top_k = c.num_experts_per_tok
        self.weight = nn.Parameter(torch.empty(c.num_local_experts, c.hidden_size))
        self.bias = nn.Parameter(torch.empty(c.num_local_experts))

    def forward(self, x):
        logits = F.linear(x, self.weight, self.bias)
        top, idx = torch.topk(logits, self.top_k, dim=-1)
        return torch.zeros_like(logits).scatter_(1, idx, F.softmax(top, dim=1))


class MoE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.router, self.experts = Router(c), Experts(c)

    def forward(self, x):
        B, L, H = x.shape
        flat = x.reshape(-1, H)
        return self.experts(flat, self.router(flat)).reshape(B, L, H)


class Layer(nn.Module):
    def __init__(self, c, sliding):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c, sliding)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MoE(c)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Layer(c, t == "sliding_attention") for t in c.layer_types)
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        inv, self.attention_factor = yarn_inv_freq(c)
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, input_ids, use_cache=False):
        x = self.embed_tokens(input_ids)
        angles = torch.arange(input_ids.shape[1], device=x.device, dtype=torch.float)[:, None] * self.inv_freq[None]
        cos, sin = (f(angles) * self.attention_factor for f in (torch.cos, torch.sin))
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return types.SimpleNamespace(last_hidden_state=self.norm(x))


class GptOssForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids, use_cache=False):
        return types.SimpleNamespace(logits=self.lm_head(self.model(input_ids).last_hidden_state))

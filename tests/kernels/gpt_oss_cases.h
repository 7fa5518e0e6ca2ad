// The kernel cases at gpt-oss's own shapes, one table per op, shared by the kernel tests (tests/kernels)
// and the kernel benchmarks (bench/kernels/kernels_bench.cu): what is timed is what is checked. A test
// checks every case of its op's table whose CPU reference fits its time budget (the rest are too large
// for a reference on one core), besides its own edge cases.
//
// Linear layers: N output features, K input features (gpt-oss-20b and -120b share them; the routers
// differ in their expert count). MoE blocks: tokens × experts at hidden = inter = 2880. Attention: 64
// query and 8 KV heads of 64 (kernels/rope.h) in both models.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "kernels/gemm_fp8.h"  // GemmEpilogue
#include "kernels/rope.h"      // kNumQHeads, kNumKvHeads, kHeadDim

namespace gossamer::kernels::gpt_oss {

inline constexpr int kHidden = 2880;
inline constexpr int kVocab = 201088;

struct LinearCase {
  const char* name;
  int n, k;
  GemmEpilogue epilogue;
};

inline constexpr LinearCase kLinears[] = {
    {"qkv", 5120, 2880, GemmEpilogue::kBias},       {"o", 2880, 4096, GemmEpilogue::kBias},
    {"router-20b", 32, 2880, GemmEpilogue::kBias},  {"router-120b", 128, 2880, GemmEpilogue::kBias},
    {"gate_up", 5760, 2880, GemmEpilogue::kSwiGlu}, {"down", 2880, 2880, GemmEpilogue::kBias},
    {"unembed", 201088, 2880, GemmEpilogue::kBias},
};

// The linear named `name` (a kLinears entry; there is no other).
inline const LinearCase& linear(const char* name) {
  for (const LinearCase& l : kLinears) {
    if (std::strcmp(l.name, name) == 0) return l;
  }
  std::fprintf(stderr, "no linear case '%s'\n", name);
  std::abort();
}

// Decode batches (the GEMV's rows) and prefill token counts (the GEMM's rows).
inline constexpr int kDecodeRows[] = {1, 2, 4, 8};
inline constexpr int kPrefillRows[] = {1, 16, 128, 1024, 4096, 8192, 16384};

struct MoeCase {
  int tokens, experts;
};
// Decode (≤ 8 tokens: launch_moe_decode) and prefill (launch_moe) blocks of gpt-oss-20b (32 experts) and
// -120b (128).
inline constexpr MoeCase kMoeDecode[] = {{1, 32}, {1, 128}, {4, 32}};
inline constexpr MoeCase kMoePrefill[] = {{1, 32}, {16, 32}, {512, 32}, {8192, 32}, {1, 128}, {8192, 128}};

// The bf16 GEMM (--weights bf16): the dense linears of prefill steps, which have more rows than the bf16
// GEMV takes (kGemvBf16MaxRows); the unembedding only at a few rows (a prefill wants the last row's logits).
struct GemmBf16Case {
  const char* linear;  // a kLinears name
  int rows;
};
inline constexpr GemmBf16Case kGemmBf16[] = {
    {"qkv", 16},     {"o", 16},     {"router-20b", 16},   {"router-120b", 16},
    {"unembed", 16}, {"qkv", 1024}, {"o", 1024},          {"router-20b", 1024},
    {"qkv", 8192},   {"o", 8192},   {"router-20b", 8192}, {"router-120b", 8192},
};

// RMSNorm over hidden 2880 with the residual add fused (every norm but layer 0's), at token counts of a
// decode step, a decode batch and a prefill chunk.
inline constexpr int kRmsNormTokens[] = {1, 64, 16384};

// YaRN RoPE of q and k plus the paged K/V write, at token counts like RMSNorm's.
inline constexpr int kRopeTokens[] = {1, 64, 16384};

// Paged attention with sinks (pages of 64 tokens): prefill chunks and decode batches, full (causal) and
// sliding-window (128) layers. Every sequence of a case has the same shape, except in a varlen batch
// (`mix` non-empty), whose sequences are listed instead of num_seqs × (q_len, kv_len).
struct AttentionSeq {
  int q_len, kv_len;  // new tokens and cached + new positions
};
struct AttentionCase {
  const char* name;  // "1x8192": 1 sequence of 8,192 new tokens; "b64 ctx 4096": 64 decodes over 4,096
  int num_seqs;
  int q_len, kv_len;  // new tokens and cached + new positions per sequence
  int window;         // 0: full causal; > 0: sliding window
  bool decode;        // launch_attention_decode (else launch_attention_prefill)
  std::span<const AttentionSeq> mix = {};
};
inline constexpr int kAttentionPage = 64;
// A prefill step as the engine builds it: whole prompts of mixed lengths, two chunks attending to their
// cached prefixes, and a decode row riding along.
inline constexpr AttentionSeq kAttentionVarlen[] = {{4096, 4096}, {1000, 1000}, {300, 300},  {128, 128},
                                                    {17, 17},     {2048, 8192}, {512, 3000}, {1, 4000}};
inline constexpr AttentionCase kAttention[] = {
    {"1x512", 1, 512, 512, 0, false},
    {"1x1024", 1, 1024, 1024, 128, false},
    {"1x8192", 1, 8192, 8192, 0, false},
    {"1x32768", 1, 32768, 32768, 0, false},
    {"8x2048", 8, 2048, 2048, 0, false},
    {"1x32768", 1, 32768, 32768, 128, false},
    {"varlen 8 seqs", 0, 0, 0, 0, false, kAttentionVarlen},
    {"varlen 8 seqs", 0, 0, 0, 128, false, kAttentionVarlen},
    {"b1 ctx 8192", 1, 1, 8192, 0, true},
    {"b1 ctx 32768", 1, 1, 32768, 0, true},
    {"b1 ctx 131072", 1, 1, 131072, 0, true},
    {"b64 ctx 4096", 64, 1, 4096, 0, true},
    {"b64 ctx 4096", 64, 1, 4096, 128, true},
    {"b256 ctx 8192", 256, 1, 8192, 0, true},  // the FP8 KV cache's long-context decode point (#14 §7)
    {"b1024 ctx 1024", 1024, 1, 1024, 0, true},
};

// A case's sequences as (q_len, kv_len) pairs.
inline std::vector<std::pair<int, int>> attention_seqs(const AttentionCase& c) {
  std::vector<std::pair<int, int>> seqs;
  for (const AttentionSeq& s : c.mix) seqs.emplace_back(s.q_len, s.kv_len);
  if (c.mix.empty()) seqs.assign(static_cast<size_t>(c.num_seqs), {c.q_len, c.kv_len});
  return seqs;
}

// Positions a case's queries see (summed over its tokens): the work of the kernel and of its reference.
inline long long attention_visible(const AttentionCase& c) {
  long long visible = 0;
  for (auto [q_len, kv_len] : attention_seqs(c)) {
    for (int i = 0; i < q_len; ++i) {
      const long long position = kv_len - q_len + i;
      visible += c.window > 0 ? std::min<long long>(position + 1, c.window) : position + 1;
    }
  }
  return visible;
}

// Sampling over the whole vocabulary (fp32 and bf16 logits): a greedy or seeded decode step, a batch.
struct SamplingCase {
  const char* name;
  int rows;
  float temperature;
  int top_k;
  float top_p;
};
inline constexpr SamplingCase kSampling[] = {
    {"greedy", 1, 0.0f, 0, 1.0f},     {"top-k 50 top-p 0.95", 1, 0.8f, 50, 0.95f},
    {"top-p 0.9", 64, 0.8f, 0, 0.9f}, {"temperature 1", 64, 1.0f, 0, 1.0f},
    {"greedy", 64, 0.0f, 0, 1.0f},
};

}  // namespace gossamer::kernels::gpt_oss

// The kernel cases at gpt-oss's own shapes, one table per op, shared by the kernel tests (tests/kernels)
// and the kernel benchmarks (bench/kernels/kernels_bench.cu): what is timed is what is checked.
//
// Linear layers: N output features, K input features (gpt-oss-20b and -120b share them; the routers
// differ in their expert count). MoE blocks: tokens × experts at hidden = inter = 2880.
#pragma once

#include "kernels/gemm_fp8.h"  // GemmEpilogue

namespace gossamer::kernels::gpt_oss {

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

}  // namespace gossamer::kernels::gpt_oss

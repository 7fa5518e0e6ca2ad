#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/parallel.h"
#include "kernels/attention.h"
#include "kernels/kv_cache_fp8.h"

namespace gossamer::kernels {

void attention_cpu(const AttentionParams& p) {
  constexpr int kD = 64;
  const int group = p.num_q_heads / p.num_kv_heads;
  for (int b = 0; b < p.num_seqs; ++b) {
    const int q_begin = p.cu_seqlens_q[b];
    const int q_len = p.cu_seqlens_q[b + 1] - q_begin;
    const int kv_len = p.kv_lens[b];
    const int32_t* pages = p.page_indices + p.page_indptr[b];
    // The cached K or V row at `pos` of kv head `kv_head`, dequantized (kv_fp8) or widened from bf16 into `row`.
    auto load_row = [&](const void* cache, const float* scales, int pos, int kv_head, float* row) {
      const int64_t slot = static_cast<int64_t>(pages[pos / p.page_size]) * p.page_size + pos % p.page_size;
      const int64_t base = (slot * p.num_kv_heads + kv_head) * kD;
      if (!p.kv_fp8) {
        const uint16_t* src = static_cast<const uint16_t*>(cache) + base;
        for (int d = 0; d < kD; ++d) row[d] = bf16_to_float(src[d]);
        return;
      }
      const uint8_t* src = static_cast<const uint8_t*>(cache) + base;
      const float scale = scales ? scales[kv_head] : kKvFp8DefaultScale;
      for (int d = 0; d < kD; ++d) row[d] = kv_fp8_dequantize(src[d], scale);
    };
    // (query, head) rows are independent: chunks of them on worker threads give the same bits.
    parallel_for(int64_t(q_len) * p.num_q_heads, 16, [&](int64_t r0, int64_t r1) {
      std::vector<float> logits;
      for (int64_t r = r0; r < r1; ++r) {
        const int i = static_cast<int>(r / p.num_q_heads), h = static_cast<int>(r % p.num_q_heads);
        const int pos = kv_len - q_len + i;
        const int s0 = p.window > 0 ? std::max(0, pos - p.window + 1) : 0;
        const int kvh = h / group;
        const uint16_t* q = p.q + (static_cast<int64_t>(q_begin + i) * p.num_q_heads + h) * kD;
        logits.assign(pos - s0 + 1, 0.f);
        float qf[kD], row[kD];
        for (int d = 0; d < kD; ++d) qf[d] = bf16_to_float(q[d]);
        float m = p.sinks ? p.sinks[h] : -INFINITY;
        for (int s = s0; s <= pos; ++s) {
          load_row(p.k_cache, p.k_scale, s, kvh, row);
          float dot = 0.f;
          for (int d = 0; d < kD; ++d) dot += qf[d] * row[d];
          logits[s - s0] = dot * p.scale;
          m = std::max(m, logits[s - s0]);
        }
        double denom = p.sinks ? std::exp(static_cast<double>(p.sinks[h]) - m) : 0.0;
        double o[kD] = {};
        for (int s = s0; s <= pos; ++s) {
          const double w = std::exp(static_cast<double>(logits[s - s0]) - m);
          denom += w;
          load_row(p.v_cache, p.v_scale, s, kvh, row);
          for (int d = 0; d < kD; ++d) o[d] += w * row[d];
        }
        uint16_t* out = p.out + (static_cast<int64_t>(q_begin + i) * p.num_q_heads + h) * kD;
        for (int d = 0; d < kD; ++d) out[d] = float_to_bf16(static_cast<float>(o[d] / denom));
      }
    });
  }
}

int attention_prefill_tiles(const int32_t* cu_seqlens_q, int num_seqs, int tile_rows, bool decode_rows_apart,
                            int32_t* out) {
  GOSSAMER_CHECK(tile_rows == 64 || tile_rows == 128 || tile_rows == 192,
                 "attention_prefill_tiles: tile_rows is 64, 128 or 192");
  GOSSAMER_CHECK(num_seqs < (1 << 15), "attention: ", num_seqs, " sequences exceed the tile list's 32,767");
  int count = 0;
  for (int b = 0; b < num_seqs; ++b) {
    const int len = cu_seqlens_q[b + 1] - cu_seqlens_q[b];
    if (decode_rows_apart && len <= kDecodeMaxQ) continue;  // launch_attention_decode's
    const int tiles = (len + tile_rows - 1) / tile_rows;
    GOSSAMER_CHECK(tiles <= (1 << 16), "attention: ", len, " queries in one sequence exceed the tile list");
    for (int t = tiles - 1; t >= 0; --t) out[count++] = (b << 16) | t;
  }
  return count;
}

}  // namespace gossamer::kernels

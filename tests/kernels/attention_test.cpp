// Prefill (the wgmma kernel and the mma.sync kernels) and decode attention with sinks over a paged cache
// (shuffled pages; for prefill, the rows a kernel must never read are NaN), full and sliding window,
// against the fp32 CPU reference: edge shapes, and the bench's gpt-oss cases (gpt_oss_cases.h). The FP8 KV
// cache (kv_fp8) runs the same cases on e4m3 caches with per-KV-head scales, against the reference on the
// same dequantized K/V (the bound stays kTolBf16: both sides see identical K/V values; the kernels differ
// from the reference only by the scale folding's fp32 rounding and the bf16 P, as in the bf16 path).
#include "kernels/attention.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "gpt_oss_cases.h"
#include "kernel_test_utils.h"
#include "kernels/kv_cache_fp8.h"

namespace gossamer::kernels {
namespace {

using namespace test;

struct Batch {
  std::vector<int32_t> cu_q{0}, kv_lens, page_indptr{0}, page_indices;
  int num_pages = 0;
};

// Builds a paged layout for (q_len, kv_len) pairs with pages handed out in a shuffled order.
Batch make_batch(const std::vector<std::pair<int, int>>& seqs, int page_size, std::mt19937& rng) {
  Batch b;
  for (auto [q, kv] : seqs) {
    b.cu_q.push_back(b.cu_q.back() + q);
    b.kv_lens.push_back(kv);
    const int pages = (kv + page_size - 1) / page_size;
    b.page_indptr.push_back(b.page_indptr.back() + pages);
    b.num_pages += pages;
  }
  b.num_pages += 3;  // unused pages
  std::vector<int32_t> perm(b.num_pages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  b.page_indices.assign(perm.begin(), perm.begin() + b.page_indptr.back());
  return b;
}

// Sink logits per query head: N(0, 2) (the default), large (5…15: the sink takes most of the mass), very
// negative (−40…−20: no effect), or none (a null pointer).
enum class Sinks { kNormal, kLarge, kVeryNegative, kNone };

std::vector<float> make_sinks(int q_heads, Sinks mode, std::mt19937& rng) {
  std::vector<float> sinks(q_heads);
  std::normal_distribution<float> normal(0.f, 2.f);
  std::uniform_real_distribution<float> large(5.f, 15.f), negative(-40.f, -20.f);
  for (auto& s : sinks)
    s = mode == Sinks::kLarge ? large(rng) : mode == Sinks::kVeryNegative ? negative(rng) : normal(rng);
  return sinks;
}

// NaN into every cache row the contract says a prefill kernel never reads: rows past kv_len in a
// sequence's last page, the unused pages, and on sliding layers the positions below the first query's
// window start − kSlidingKeepMargin (128; model/model.h). A kernel that reads one of them (even to
// multiply it by a zero probability) turns its output NaN.
// (T = uint16_t: bf16 NaN 0x7FC0; uint8_t: the e4m3 NaN code 0x7F.)
template <typename T>
void poison_unread_rows(std::vector<T>& cache, const Batch& b, int window, int kv_heads, int page_size) {
  constexpr T kNan = sizeof(T) == 2 ? T(0x7FC0) : T(0x7F);
  const size_t row = size_t(kv_heads) * 64;
  auto poison_slot = [&](int64_t slot) { std::fill_n(cache.begin() + slot * row, row, kNan); };
  std::vector<bool> used(b.num_pages, false);
  for (size_t s = 0; s + 1 < b.cu_q.size(); ++s) {
    const int kv = b.kv_lens[s], q = b.cu_q[s + 1] - b.cu_q[s];
    const int pages = b.page_indptr[s + 1] - b.page_indptr[s];
    const int lowest_read = window > 0 ? kv - q - window + 1 - 128 : 0;
    for (int pos = 0; pos < pages * page_size; ++pos) {
      const int64_t slot = int64_t(b.page_indices[b.page_indptr[s] + pos / page_size]) * page_size + pos % page_size;
      if (pos >= kv || pos < lowest_read) poison_slot(slot);
    }
    for (int i = b.page_indptr[s]; i < b.page_indptr[s + 1]; ++i) used[b.page_indices[i]] = true;
  }
  for (int page = 0; page < b.num_pages; ++page) {
    if (used[page]) continue;
    for (int r = 0; r < page_size; ++r) poison_slot(int64_t(page) * page_size + r);
  }
}

const char* kernel_name(bool decode, PrefillKernel kernel) {
  if (decode) return "attention_decode";
  return kernel == PrefillKernel::kMmaSync ? "attention_prefill" : "attention_prefill_wgmma";
}

// The wgmma prefill kernel's variant (AttentionParams::prefill_consumer_warpgroups), and q's amplitude: 1
// (logits of a few units), or larger so that row maxima grow by more than the lazy softmax's 2^8 (three
// warpgroups) across key tiles (its rescale path). Decode: AttentionParams::decode_min_tiles_per_split, and
// max_kv_len raised to a graph's bound (0: the batch's longest).
struct WgmmaVariant {
  int consumer_warpgroups = 2;
  float q_amplitude = 1.0f;
  int decode_min_tiles_per_split = 4;  // the product's
  int max_kv_bound = 0;
  bool fixed_max = false;  // AttentionParams::prefill_fixed_max
};

void run_case(const std::vector<std::pair<int, int>>& seqs, int window, int q_heads, int kv_heads, int page_size,
              bool decode, std::mt19937& rng, PrefillKernel kernel = PrefillKernel::kMmaSync,
              Sinks sink_mode = Sinks::kNormal, bool kv_fp8 = false, bool mixed = false, WgmmaVariant wgmma = {}) {
  const Batch b = make_batch(seqs, page_size, rng);
  const int tokens = b.cu_q.back();
  int max_kv = 0;
  for (int kv : b.kv_lens) max_kv = std::max(max_kv, kv);
  auto q = random_bf16(size_t(tokens) * q_heads * 64, rng, wgmma.q_amplitude);
  const size_t cache_elems = size_t(b.num_pages) * page_size * kv_heads * 64;
  auto kc = random_bf16(cache_elems, rng, 1.0f);
  auto vc = random_bf16(cache_elems, rng, 1.0f);
  // kv_fp8: per-KV-head scales in [1/8, 2], values N(0, 8·scale) (codes N(0, 8): subnormals included)
  // and one V element in 512 at ±1000·scale (saturates to ±448); the cache holds their e4m3 codes.
  std::vector<float> k_scale(kv_heads, 1.f), v_scale(kv_heads, 1.f);
  std::vector<uint8_t> kc8, vc8;
  if (kv_fp8) {
    std::uniform_real_distribution<float> log_scale(-3.f, 1.f);
    for (auto* scales : {&k_scale, &v_scale})
      for (float& x : *scales) x = std::exp2(log_scale(rng));
    for (auto* cache : {&kc, &vc}) {
      const std::vector<float>& scales = cache == &kc ? k_scale : v_scale;
      for (size_t i = 0; i < cache->size(); ++i) {
        const float scale = scales[(i / 64) % kv_heads];
        const bool saturate = cache == &vc && i % 512 == 7;
        const float x = saturate ? std::copysign(1000.f, bf16_to_float((*cache)[i])) : 8.f * bf16_to_float((*cache)[i]);
        (*cache)[i] = float_to_bf16(x * scale);
      }
    }
    kc8.resize(cache_elems);
    vc8.resize(cache_elems);
    const int64_t rows = static_cast<int64_t>(cache_elems / (size_t(kv_heads) * 64));
    kv_fp8_quantize_rows_cpu(kc.data(), rows, kv_heads, 64, k_scale.data(), kc8.data());
    kv_fp8_quantize_rows_cpu(vc.data(), rows, kv_heads, 64, v_scale.data(), vc8.data());
    if (!decode) {
      poison_unread_rows(kc8, b, window, kv_heads, page_size);
      poison_unread_rows(vc8, b, window, kv_heads, page_size);
    }
  } else if (!decode) {
    poison_unread_rows(kc, b, window, kv_heads, page_size);
    poison_unread_rows(vc, b, window, kv_heads, page_size);
  }
  const std::vector<float> sinks = make_sinks(q_heads, sink_mode, rng);
  const bool has_sinks = sink_mode != Sinks::kNone;
  DeviceBuffer<uint16_t> dq(q), dkc(kc), dvc(vc), dout(q.size());
  DeviceBuffer<int32_t> dcu(b.cu_q), dkv(b.kv_lens), dpi(b.page_indptr), dpx(b.page_indices);
  DeviceBuffer<float> dsinks(sinks), dk_scale(k_scale), dv_scale(v_scale);
  DeviceBuffer<uint8_t> dkc8(kv_fp8 ? kc8 : std::vector<uint8_t>(1)), dvc8(kv_fp8 ? vc8 : std::vector<uint8_t>(1));
  dout.poison();
  AttentionParams p;
  p.q = dq.get();
  p.out = dout.get();
  p.k_cache = kv_fp8 ? static_cast<const void*>(dkc8.get()) : dkc.get();
  p.v_cache = kv_fp8 ? static_cast<const void*>(dvc8.get()) : dvc.get();
  p.kv_fp8 = kv_fp8;
  p.k_scale = kv_fp8 ? dk_scale.get() : nullptr;
  p.v_scale = kv_fp8 ? dv_scale.get() : nullptr;
  p.page_indptr = dpi.get();
  p.page_indices = dpx.get();
  p.cu_seqlens_q = dcu.get();
  p.kv_lens = dkv.get();
  p.sinks = has_sinks ? dsinks.get() : nullptr;
  p.num_seqs = static_cast<int>(seqs.size());
  p.num_tokens = tokens;
  p.num_q_heads = q_heads;
  p.num_kv_heads = kv_heads;
  p.page_size = page_size;
  p.window = window;
  p.max_kv_len = std::max(max_kv, wgmma.max_kv_bound);
  p.decode_min_tiles_per_split = wgmma.decode_min_tiles_per_split;
  p.prefill_kernel = kernel;
  p.prefill_consumer_warpgroups = wgmma.consumer_warpgroups;
  p.prefill_fixed_max = wgmma.fixed_max;
  // mixed: the model's split of a mixed step (decode_rows_apart): the decode launch for the ≤ kDecodeMaxQ
  // sequences, then the prefill launch for the rest, into the same poisoned output.
  p.decode_rows_apart = mixed;
  // The prefill launch's query tiles, as the model lists them (a poisoned spare entry past each list's end).
  std::vector<int32_t> tiles_64(tokens / 64 + seqs.size() + 1, -1), tiles_128(tokens / 128 + seqs.size() + 1, -1),
      tiles_192(tokens / 192 + seqs.size() + 1, -1);
  p.num_q_tiles_64 = attention_prefill_tiles(b.cu_q.data(), p.num_seqs, 64, mixed, tiles_64.data());
  p.num_q_tiles_128 = attention_prefill_tiles(b.cu_q.data(), p.num_seqs, 128, mixed, tiles_128.data());
  p.num_q_tiles_192 = attention_prefill_tiles(b.cu_q.data(), p.num_seqs, 192, mixed, tiles_192.data());
  DeviceBuffer<int32_t> dtiles_64(tiles_64), dtiles_128(tiles_128), dtiles_192(tiles_192);
  p.q_tiles_64 = dtiles_64.get();
  p.q_tiles_128 = dtiles_128.get();
  p.q_tiles_192 = dtiles_192.get();
  DeviceBuffer<uint8_t> ws(decode || mixed ? attention_decode_workspace_bytes(p) : 0);
  if (decode || mixed) {
    ws.poison();  // the partials; the arrival counters zeroed as the contract asks
    attention_decode_workspace_init(ws.get(), ws.size(), nullptr);
    p.workspace = ws.get();
    launch_attention_decode(p, nullptr);
  }
  if (!decode) launch_attention_prefill(p, nullptr);
  if (decode) {
    // A second launch on the same workspace, not re-zeroed: the last split of each (sequence, kv head) left
    // its counter zero, so the output is the same bit for bit.
    const std::vector<uint16_t> first = dout.download();
    dout.poison();
    launch_attention_decode(p, nullptr);
    EXPECT_EQ(dout.download(), first) << "decode relaunch on the same workspace";
    // The first key tile loaded before the PDL wait or after it (AttentionParams::decode_prefetch_kv): the
    // same bits.
    dout.poison();
    p.decode_prefetch_kv = !p.decode_prefetch_kv;
    launch_attention_decode(p, nullptr);
    p.decode_prefetch_kv = !p.decode_prefetch_kv;
    EXPECT_EQ(dout.download(), first) << "decode with the first key tile on the other side of the PDL wait";
  }
  std::vector<uint16_t> ref(q.size());
  AttentionParams r = p;
  r.q = q.data();
  r.out = ref.data();
  r.k_cache = kv_fp8 ? static_cast<const void*>(kc8.data()) : kc.data();
  r.v_cache = kv_fp8 ? static_cast<const void*>(vc8.data()) : vc.data();
  r.k_scale = kv_fp8 ? k_scale.data() : nullptr;
  r.v_scale = kv_fp8 ? v_scale.data() : nullptr;
  r.page_indptr = b.page_indptr.data();
  r.page_indices = b.page_indices.data();
  r.cu_seqlens_q = b.cu_q.data();
  r.kv_lens = b.kv_lens.data();
  r.sinks = has_sinks ? sinks.data() : nullptr;
  attention_cpu(r);
  const double err = rel_error_bf16(dout.download(), ref);
  static const char* kSinkNames[] = {"normal", "large", "very negative", "none"};
  std::ostringstream os;
  os << seqs.size() << " seqs (q,kv)=";
  for (auto [ql, kv] : seqs) os << "(" << ql << "," << kv << ")";
  os << " heads " << q_heads << "/" << kv_heads << " page " << page_size << " window " << window << " sinks "
     << kSinkNames[static_cast<int>(sink_mode)] << (kv_fp8 ? " kv fp8" : "") << (mixed ? " mixed split" : "")
     << (!decode && kernel == PrefillKernel::kWgmma && wgmma.consumer_warpgroups == 3 ? " 3 consumer warpgroups" : "")
     << (wgmma.q_amplitude != 1.0f ? " q amplitude " + std::to_string(wgmma.q_amplitude) : std::string())
     << (decode && wgmma.decode_min_tiles_per_split != 4
             ? " min tiles per split " + std::to_string(wgmma.decode_min_tiles_per_split)
             : std::string())
     << (wgmma.max_kv_bound > max_kv ? " max_kv_len bound " + std::to_string(wgmma.max_kv_bound) : std::string())
     << (!decode && wgmma.fixed_max ? " fixed max" : "");
  const std::string shape = os.str();
  report(kernel_name(decode, kernel), shape, err, kTolBf16);
  EXPECT_LT(err, kTolBf16) << shape;
}

TEST(AttentionPrefillKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(20);
  const PrefillKernel kernel = PrefillKernel::kMmaSync;
  for (const int window : {0, 128}) {
    run_case({{1, 1}}, window, 16, 2, 16, false, rng, kernel);
    run_case({{70, 70}, {129, 200}, {5, 300}}, window, 16, 2, 16, false, rng, kernel);
    run_case({{300, 300}, {64, 64}, {1, 77}}, window, 16, 2, 64, false, rng, kernel);
    run_case({{200, 456}}, window, 64, 8, 32, false, rng, kernel);
  }
}

// Sliding windows ≤ 128 on a bf16 cache take the K/V-ring kernel (attention_prefill_sliding_sm90.cu: 4 query tiles
// per CTA walking a sequence forward); window 129 stays on the one-tile kernel. Shapes: a long sequence (many CTAs of
// one sequence), chunked prefill whose first query is not tile-aligned (entries needing all 4 ring slots), short
// sequences sharing one CTA's entries (the ring dropped between sequences), a window of 1; sinks of every kind.
TEST(AttentionPrefillKernel, SlidingRingMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(21);
  const PrefillKernel kernel = PrefillKernel::kMmaSync;
  for (const int window : {1, 37, 64, 128, 129}) {
    run_case({{1000, 1000}}, window, 16, 2, 16, false, rng, kernel);
    run_case({{300, 1300}, {129, 129}, {190, 1001}}, window, 16, 2, 64, false, rng, kernel, Sinks::kLarge);
    run_case({{1, 1}, {70, 70}, {65, 200}, {5, 300}, {64, 64}, {128, 128}}, window, 64, 8, 16, false, rng, kernel,
             Sinks::kNone);
    run_case({{517, 517}, {2, 2}}, window, 8, 1, 32, false, rng, kernel, Sinks::kVeryNegative);
  }
}

// The wgmma kernel (kAuto's for full-causal layers): 64-row consumer warpgroups (two on 128-query tiles, or three on
// 192), 128-key tiles. The shapes cross every tile edge (q_len 1, 17, 64/65, 127–129, 191–193, 300, 1000+), chunked
// prefill (q_len < kv_len, the chunk attending to its cached prefix), full causal and window 128, GQA 8 (64/8 and
// 16/2) and 1, page sizes 8–64, sinks of every magnitude and none; bf16 or FP8 cache.
void wgmma_cases(std::mt19937& rng, WgmmaVariant w, bool kv_fp8) {
  const PrefillKernel k = PrefillKernel::kWgmma;
  for (const int window : {0, 128}) {
    run_case({{1, 1}}, window, 64, 8, 16, false, rng, k, Sinks::kNormal, kv_fp8, false, w);
    run_case({{1, 1}, {17, 17}, {128, 128}, {300, 300}, {1000, 1000}}, window, 16, 2, 16, false, rng, k, Sinks::kNormal,
             kv_fp8, false, w);
    run_case({{17, 300}, {128, 1000}, {1, 1000}, {300, 1300}, {129, 129}}, window, 16, 2, 16, false, rng, k,
             Sinks::kNormal, kv_fp8, false, w);
    run_case({{200, 456}, {65, 65}, {64, 64}, {127, 127}, {191, 191}, {192, 250}, {193, 193}}, window, 64, 8, 16, false,
             rng, k, Sinks::kNormal, kv_fp8, false, w);
    run_case({{1100, 1100}}, window, 16, 2, 64, false, rng, k, Sinks::kLarge, kv_fp8, false, w);
    run_case({{1030, 1200}, {40, 40}}, window, 16, 2, 8, false, rng, k, Sinks::kVeryNegative, kv_fp8, false, w);
    run_case({{300, 700}, {129, 129}}, window, 8, 8, 32, false, rng, k, Sinks::kNone, kv_fp8, false, w);
    run_case({{2000, 2000}}, window, 8, 1, 16, false, rng, k, Sinks::kNormal, kv_fp8, false, w);
  }
}

TEST(AttentionPrefillWgmmaKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(22);
  wgmma_cases(rng, {2}, false);
}

// Three consumer warpgroups on 192-query tiles (AttentionParams::prefill_consumer_warpgroups), both caches, and a
// mixed step split between the decode and prefill kernels.
TEST(AttentionPrefillWgmmaKernel, ThreeWarpgroupsMatchReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(26);
  wgmma_cases(rng, {3}, false);
  wgmma_cases(rng, {3}, true);
  const std::vector<std::pair<int, int>> seqs = {{1, 300}, {57, 400}, {2, 90}, {1, 1}, {130, 130}, {250, 2000}};
  run_case(seqs, 0, 64, 8, 16, false, rng, PrefillKernel::kWgmma, Sinks::kNormal, false, true, {3});
}

// The lazy online softmax of three consumer warpgroups with large logits, both caches: within the bf16 bound.
// With q of amplitude 1 (ThreeWarpgroupsMatchReference) the rows keep their first max (the rescale skipped);
// with amplitude 24 logits reach ~±30 in log2 units, so maxima pass the threshold on later key tiles and the
// rescale runs for some warps and not others.
TEST(AttentionPrefillWgmmaKernel, LazyRescaleMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(28);
  wgmma_cases(rng, {3, 24.0f}, false);
  wgmma_cases(rng, {3, 24.0f}, true);
}

// The fixed max on unmasked key tiles (AttentionParams::prefill_fixed_max, three warpgroups): both caches, logits of a
// few units and of ~±50 log2 units (q amplitude 24: maxima move on masked tiles, and later tiles pass the first one's
// max by up to ~2^5), and q amplitude 128 (logits of ~±250 log2 units: later maxima pass the first tile's by more than
// 2^7, so rows overflow and their CTA runs a second pass with the max everywhere), with sinks and without.
TEST(AttentionPrefillWgmmaKernel, FixedMaxMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(31);
  wgmma_cases(rng, {3, 1.0f, 4, 0, true}, false);
  wgmma_cases(rng, {3, 24.0f, 4, 0, true}, true);
  wgmma_cases(rng, {3, 24.0f, 4, 0, true}, false);
  for (const bool kv_fp8 : {false, true}) {
    run_case({{2000, 2000}, {300, 1300}}, 0, 16, 2, 16, false, rng, PrefillKernel::kWgmma, Sinks::kNormal, kv_fp8,
             false, {3, 128.0f, 4, 0, true});
    run_case({{1100, 1100}}, 0, 16, 2, 64, false, rng, PrefillKernel::kWgmma, Sinks::kNone, kv_fp8, false,
             {3, 128.0f, 4, 0, true});
  }
}

// Random varlen batches: 1–5 sequences, query lengths 1–1,200, cached prefixes 0–1,000, either window,
// random page size and sinks.
TEST(AttentionPrefillWgmmaKernel, RandomBatches) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> num_seqs(1, 5), q_len(1, 1200), prefix(0, 1000), coin(0, 1), sink(0, 3),
      page_log2(3, 6);
  for (int c = 0; c < 8; ++c) {
    std::vector<std::pair<int, int>> seqs;
    const int n = num_seqs(rng);
    for (int i = 0; i < n; ++i) {
      const int q = coin(rng) ? q_len(rng) : std::uniform_int_distribution<int>(1, 140)(rng);
      seqs.emplace_back(q, q + (coin(rng) ? prefix(rng) : 0));
    }
    const int window = coin(rng) ? 128 : 0;
    const int page_size = 1 << page_log2(rng);
    const Sinks sinks = static_cast<Sinks>(sink(rng));
    run_case(seqs, window, 16, 2, page_size, false, rng, PrefillKernel::kWgmma, sinks);
  }
}

TEST(AttentionDecodeKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(21);
  for (const int window : {0, 128}) {
    run_case({{1, 1}}, window, 64, 8, 16, true, rng);
    run_case({{1, 5000}}, window, 64, 8, 16, true, rng);
    run_case({{1, 130}, {2, 900}, {1, 64}, {2, 2}}, window, 64, 8, 32, true, rng);
    run_case({{1, 3000}, {1, 129}}, window, 16, 2, 64, true, rng);
  }
}

// Splits used per (sequence, kv head) by its real length under a launch sized for a graph's bound (max_kv_len
// 131,072: 64 splits), with floors of N tiles per split (AttentionParams::decode_min_tiles_per_split): four
// sequences × 8 kv heads pass two waves (the floor applies: one CTA, no merge, below 2N tiles), one sequence
// does not; either window, both caches; the relaunch on the same workspace (run_case) checks that the arrival
// counters of the used splits come back to zero.
TEST(AttentionDecodeKernel, SplitsByRealLengthMatchReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(25);
  for (const int min_tiles : {1, 2, 4, 8}) {
    for (const int window : {0, 128}) {
      for (const bool fp8 : {false, true}) {
        const WgmmaVariant v{2, 1.0f, min_tiles, 131072};
        run_case({{1, 1}, {1, 300}, {2, 1024}, {1, 5000}}, window, 64, 8, 16, true, rng, PrefillKernel::kMmaSync,
                 Sinks::kNormal, fp8, false, v);
        run_case({{1, 200}}, window, 64, 8, 16, true, rng, PrefillKernel::kMmaSync, Sinks::kLarge, fp8, false, v);
      }
    }
  }
}

// Random decode batches across the split counts (1–64 splits: the last split to arrive merges them) and
// past the one-split threshold (≥ 99 sequences × 8 kv heads: each CTA writes O itself), either window,
// bf16 and FP8 caches.
TEST(AttentionDecodeKernel, RandomBatchesMatchReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(24);
  std::uniform_int_distribution<int> num_seqs(1, 12), q_len(1, kDecodeMaxQ), kv_len(0, 4000), coin(0, 1);
  for (int c = 0; c < 8; ++c) {
    std::vector<std::pair<int, int>> seqs;
    const int n = c == 7 ? 110 : num_seqs(rng);
    for (int i = 0; i < n; ++i) {
      const int q = q_len(rng);
      seqs.emplace_back(q, q + (n > 12 ? kv_len(rng) / 40 : kv_len(rng)));
    }
    run_case(seqs, coin(rng) ? 128 : 0, 64, 8, 16, true, rng, PrefillKernel::kMmaSync, Sinks::kNormal, c % 2 == 1);
  }
}

// The bench's cases whose reference fits the budget (the decode batches and the small prefill chunks; the
// long prefills would take the single-threaded reference minutes), at gpt-oss's heads and page size, on
// every prefill kernel.
TEST(AttentionKernel, GptOssCasesMatchReference) {
  GOSSAMER_REQUIRE_GPU();
  constexpr long long kReferenceBudget = 1 << 18;  // visible positions (× 64 heads × 128 MACs)
  std::mt19937 rng(22);
  int checked = 0;
  for (const gpt_oss::AttentionCase& c : gpt_oss::kAttention) {
    if (gpt_oss::attention_visible(c) > kReferenceBudget) continue;
    const std::vector<std::pair<int, int>> seqs = gpt_oss::attention_seqs(c);
    if (c.decode) {
      run_case(seqs, c.window, kNumQHeads, kNumKvHeads, gpt_oss::kAttentionPage, true, rng);
    } else {
      for (const PrefillKernel k : {PrefillKernel::kMmaSync, PrefillKernel::kWgmma}) {
        run_case(seqs, c.window, kNumQHeads, kNumKvHeads, gpt_oss::kAttentionPage, false, rng, k);
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 7);  // every decode case and two prefill chunks
}

// ---- FP8 KV cache (kv_fp8): every kernel, full and sliding window, chunked prefill over a cached prefix ----

// A mixed step split between the kernels (AttentionParams::decode_rows_apart): decode sequences of 1 and 2
// queries beside prefill chunks (one over a cached prefix), full and window 128, both prefill kernels, bf16
// and FP8 caches: the two launches together write every row, as one prefill launch would.
TEST(AttentionKernel, MixedStepSplitMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(91);
  const std::vector<std::pair<int, int>> seqs = {{1, 300}, {57, 400}, {2, 90}, {1, 1}, {130, 130}, {1, 2000}, {2, 2}};
  for (const int window : {0, 128}) {
    for (const PrefillKernel kernel : {PrefillKernel::kMmaSync, PrefillKernel::kWgmma}) {
      for (const bool kv_fp8 : {false, true}) {
        run_case(seqs, window, 64, 8, 16, false, rng, kernel, Sinks::kNormal, kv_fp8, true);
      }
    }
  }
}

TEST(AttentionDecodeKernel, Fp8KvMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(31);
  const PrefillKernel unused = PrefillKernel::kMmaSync;
  for (const int window : {0, 128}) {
    run_case({{1, 1}}, window, 64, 8, 16, true, rng, unused, Sinks::kNormal, true);
    run_case({{1, 5000}}, window, 64, 8, 16, true, rng, unused, Sinks::kNormal, true);
    run_case({{1, 130}, {2, 900}, {1, 64}, {2, 2}}, window, 64, 8, 32, true, rng, unused, Sinks::kLarge, true);
    run_case({{1, 3000}, {1, 129}}, window, 16, 2, 64, true, rng, unused, Sinks::kNone, true);
  }
}

TEST(AttentionPrefillKernel, Fp8KvMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(32);
  const PrefillKernel k = PrefillKernel::kMmaSync;
  for (const int window : {0, 128}) {
    run_case({{1, 1}}, window, 16, 2, 16, false, rng, k, Sinks::kNormal, true);
    run_case({{70, 70}, {129, 200}, {5, 300}}, window, 16, 2, 16, false, rng, k, Sinks::kNormal, true);
    // chunked prefill: chunks attending to a cached prefix through the cache
    run_case({{64, 1000}, {300, 301}, {1, 77}}, window, 16, 2, 64, false, rng, k, Sinks::kLarge, true);
    run_case({{200, 456}}, window, 64, 8, 32, false, rng, k, Sinks::kNone, true);
  }
}

TEST(AttentionPrefillWgmmaKernel, Fp8KvMatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(33);
  wgmma_cases(rng, {2}, true);
}

// The bench's gpt-oss cases (heads 64/8, its page size) on the FP8 cache, every kernel.
TEST(AttentionKernel, Fp8KvGptOssCasesMatchReference) {
  GOSSAMER_REQUIRE_GPU();
  constexpr long long kReferenceBudget = 1 << 18;
  std::mt19937 rng(34);
  int checked = 0;
  for (const gpt_oss::AttentionCase& c : gpt_oss::kAttention) {
    if (gpt_oss::attention_visible(c) > kReferenceBudget) continue;
    const std::vector<std::pair<int, int>> seqs = gpt_oss::attention_seqs(c);
    if (c.decode) {
      run_case(seqs, c.window, kNumQHeads, kNumKvHeads, gpt_oss::kAttentionPage, true, rng, PrefillKernel::kMmaSync,
               Sinks::kNormal, true);
    } else {
      for (const PrefillKernel k : {PrefillKernel::kMmaSync, PrefillKernel::kWgmma}) {
        run_case(seqs, c.window, kNumQHeads, kNumKvHeads, gpt_oss::kAttentionPage, false, rng, k, Sinks::kNormal, true);
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 7);
}

}  // namespace
}  // namespace gossamer::kernels

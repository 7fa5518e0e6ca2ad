// Prefill and decode attention with sinks over a paged cache (shuffled pages), full and sliding window,
// against the fp32 CPU reference: edge shapes, and the bench's gpt-oss cases (gpt_oss_cases.h).
#include "kernels/attention.h"

#include <algorithm>
#include <numeric>

#include "gpt_oss_cases.h"
#include "kernel_test_utils.h"

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

void run_case(const std::vector<std::pair<int, int>>& seqs, int window, int q_heads, int kv_heads, int page_size,
              bool decode, std::mt19937& rng, int prefill_warps = 4) {
  const Batch b = make_batch(seqs, page_size, rng);
  const int tokens = b.cu_q.back();
  int max_kv = 0;
  for (int kv : b.kv_lens) max_kv = std::max(max_kv, kv);
  auto q = random_bf16(size_t(tokens) * q_heads * 64, rng, 1.0f);
  const size_t cache_elems = size_t(b.num_pages) * page_size * kv_heads * 64;
  auto kc = random_bf16(cache_elems, rng, 1.0f);
  auto vc = random_bf16(cache_elems, rng, 1.0f);
  std::vector<float> sinks(q_heads);
  std::normal_distribution<float> sd(0.f, 2.f);
  for (auto& s : sinks) s = sd(rng);
  DeviceBuffer<uint16_t> dq(q), dkc(kc), dvc(vc), dout(q.size());
  DeviceBuffer<int32_t> dcu(b.cu_q), dkv(b.kv_lens), dpi(b.page_indptr), dpx(b.page_indices);
  DeviceBuffer<float> dsinks(sinks);
  dout.poison();
  AttentionParams p;
  p.q = dq.get();
  p.out = dout.get();
  p.k_cache = dkc.get();
  p.v_cache = dvc.get();
  p.page_indptr = dpi.get();
  p.page_indices = dpx.get();
  p.cu_seqlens_q = dcu.get();
  p.kv_lens = dkv.get();
  p.sinks = dsinks.get();
  p.num_seqs = static_cast<int>(seqs.size());
  p.num_tokens = tokens;
  p.num_q_heads = q_heads;
  p.num_kv_heads = kv_heads;
  p.page_size = page_size;
  p.window = window;
  p.max_kv_len = max_kv;
  p.prefill_warps = prefill_warps;
  DeviceBuffer<uint8_t> ws(decode ? attention_decode_workspace_bytes(p) : 0);
  if (decode) {
    ws.poison();
    p.workspace = ws.get();
    launch_attention_decode(p, nullptr);
  } else {
    launch_attention_prefill(p, nullptr);
  }
  std::vector<uint16_t> ref(q.size());
  AttentionParams r = p;
  r.q = q.data();
  r.out = ref.data();
  r.k_cache = kc.data();
  r.v_cache = vc.data();
  r.page_indptr = b.page_indptr.data();
  r.page_indices = b.page_indices.data();
  r.cu_seqlens_q = b.cu_q.data();
  r.kv_lens = b.kv_lens.data();
  r.sinks = sinks.data();
  attention_cpu(r);
  const double err = rel_error_bf16(dout.download(), ref);
  std::string shape = std::to_string(seqs.size()) + " seqs (q,kv)=";
  for (auto [ql, kv] : seqs) shape += "(" + std::to_string(ql) + "," + std::to_string(kv) + ")";
  shape += " heads " + std::to_string(q_heads) + "/" + std::to_string(kv_heads) + " page " + std::to_string(page_size) +
           " window " + std::to_string(window) + (decode ? "" : " warps " + std::to_string(prefill_warps));
  report(decode ? "attention_decode" : "attention_prefill", shape, err, kTolBf16);
  EXPECT_LT(err, kTolBf16) << shape;
}

TEST(AttentionPrefillKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(20);
  for (const int warps : {4, 8}) {
    for (const int window : {0, 128}) {
      run_case({{1, 1}}, window, 16, 2, 16, false, rng, warps);
      run_case({{70, 70}, {129, 200}, {5, 300}}, window, 16, 2, 16, false, rng, warps);
      run_case({{300, 300}, {64, 64}, {1, 77}}, window, 16, 2, 64, false, rng, warps);
      run_case({{200, 456}}, window, 64, 8, 32, false, rng, warps);
    }
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

// The bench's cases whose reference fits the budget (the decode batches and the small prefill chunks; the
// long prefills would take the single-threaded reference minutes), at gpt-oss's heads and page size.
TEST(AttentionKernel, GptOssCasesMatchReference) {
  GOSSAMER_REQUIRE_GPU();
  constexpr long long kReferenceBudget = 1 << 18;  // visible positions (× 64 heads × 128 MACs)
  std::mt19937 rng(22);
  int checked = 0;
  for (const gpt_oss::AttentionCase& c : gpt_oss::kAttention) {
    if (gpt_oss::attention_visible(c) > kReferenceBudget) continue;
    const std::vector<std::pair<int, int>> seqs(static_cast<size_t>(c.num_seqs), {c.q_len, c.kv_len});
    for (const int warps : c.decode ? std::vector<int>{4} : std::vector<int>{4, 8}) {
      run_case(seqs, c.window, kNumQHeads, kNumKvHeads, gpt_oss::kAttentionPage, c.decode, rng, warps);
    }
    ++checked;
  }
  EXPECT_GE(checked, 7);  // every decode case and two prefill chunks
}

}  // namespace
}  // namespace gossamer::kernels

// Token masks: the kernel writes exactly the CPU reference's bits (only -inf is written), for masked,
// unmasked and shared-mask rows, on the real vocabulary and on ragged sizes; on a rank's vocab slice
// (vocab_begin) it writes the whole row's bits of that slice's columns.
#include "kernels/token_mask.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "kernel_test_utils.h"

namespace gossamer::kernels {
namespace {

using namespace test;

TEST(TokenMaskKernel, MatchesReference) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(16);
  for (const int vocab : {201088, 1000, 33}) {
    const int rows = 6, words = (vocab + 31) / 32, num_masks = 3;
    std::vector<float> logits(size_t(rows) * vocab);
    std::normal_distribution<float> normal(0.f, 2.f);
    for (auto& x : logits) x = normal(rng);
    std::vector<uint32_t> masks(size_t(num_masks) * words);
    for (int m = 0; m < num_masks; ++m) {
      for (int w = 0; w < words; ++w)
        masks[size_t(m) * words + w] = m == 0 ? rng() : m == 1 ? (rng() % 50 == 0 ? 1u : 0u) : ~0u;
    }
    const std::vector<int32_t> mask_rows = {0, -1, 1, 2, 0, 1};  // rows 0 and 4 share a mask; row 1 is free
    DeviceBuffer<float> d_logits(logits);
    DeviceBuffer<uint32_t> d_masks(masks);
    DeviceBuffer<int32_t> d_rows(mask_rows);
    TokenMaskParams p;
    p.logits = d_logits.get();
    p.masks = d_masks.get();
    p.mask_rows = d_rows.get();
    p.num_rows = rows;
    p.vocab = vocab;
    p.words = words;
    launch_token_mask(p, nullptr);
    const std::vector<float> got = d_logits.download();
    std::vector<float> expected = logits;
    p.logits = expected.data();
    p.masks = masks.data();
    p.mask_rows = mask_rows.data();
    token_mask_cpu(p);
    int64_t masked = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(std::memcmp(&got[i], &expected[i], sizeof(float)), 0) << "vocab " << vocab << " element " << i;
      masked += std::isinf(expected[i]);
    }
    EXPECT_GT(masked, 0);
    for (int t = 0; t < vocab; ++t)
      ASSERT_EQ(got[size_t(1) * vocab + t], logits[size_t(1) * vocab + t]);  // unmasked row

    // The same masks on bf16 logits (the device sampler's input).
    std::vector<uint16_t> bf16(logits.size());
    for (size_t i = 0; i < bf16.size(); ++i) bf16[i] = static_cast<uint16_t>(rng() & 0x7f7f);
    DeviceBuffer<uint16_t> d_bf16(bf16);
    TokenMaskParams q = p;
    q.logits = nullptr;
    q.logits_bf16 = d_bf16.get();
    q.masks = d_masks.get();
    q.mask_rows = d_rows.get();
    launch_token_mask(q, nullptr);
    const std::vector<uint16_t> got_bf16 = d_bf16.download();
    q.logits_bf16 = bf16.data();
    q.masks = masks.data();
    q.mask_rows = mask_rows.data();
    token_mask_cpu(q);
    ASSERT_EQ(got_bf16, bf16) << "vocab " << vocab;
  }
}

// Each slice of a tensor-parallel split (gpt-oss's 4 × 50,272; a ragged 1000 over 3 and over 8, slices
// starting inside a mask word) masked with vocab_begin equals the whole row's masking, on the device and
// in the CPU reference, in bf16 (the slices the vocab-parallel sampler reads).
TEST(TokenMaskKernel, SlicesReadTheirBitsOfTheWholeMask) {
  GOSSAMER_REQUIRE_GPU();
  std::mt19937 rng(17);
  for (const auto& [vocab, world] : {std::pair{201088, 4}, std::pair{1000, 3}, std::pair{1000, 8}}) {
    const int rows = 3, words = (vocab + 31) / 32, per_rank = (vocab + world - 1) / world;
    std::vector<uint16_t> whole(size_t(rows) * vocab);
    for (auto& x : whole) x = static_cast<uint16_t>(rng() & 0x7f7f);
    std::vector<uint32_t> masks(size_t(rows) * words);
    for (auto& word : masks) word = rng();
    const std::vector<int32_t> mask_rows = {0, -1, 2};
    std::vector<uint16_t> expected = whole;
    TokenMaskParams p;
    p.logits_bf16 = expected.data();
    p.masks = masks.data();
    p.mask_rows = mask_rows.data();
    p.num_rows = rows;
    p.vocab = vocab;
    p.words = words;
    token_mask_cpu(p);
    DeviceBuffer<uint32_t> d_masks(masks);
    DeviceBuffer<int32_t> d_rows(mask_rows);
    for (int rank = 0; rank < world; ++rank) {
      const int begin = rank * per_rank, cols = std::min(vocab, begin + per_rank) - begin;
      std::vector<uint16_t> slice(size_t(rows) * cols), want(slice.size());
      for (int r = 0; r < rows; ++r) {
        std::copy_n(whole.begin() + size_t(r) * vocab + begin, cols, slice.begin() + size_t(r) * cols);
        std::copy_n(expected.begin() + size_t(r) * vocab + begin, cols, want.begin() + size_t(r) * cols);
      }
      DeviceBuffer<uint16_t> d_slice(slice);
      TokenMaskParams q = p;
      q.logits_bf16 = d_slice.get();
      q.masks = d_masks.get();
      q.mask_rows = d_rows.get();
      q.vocab = cols;
      q.vocab_begin = begin;
      launch_token_mask(q, nullptr);
      ASSERT_EQ(d_slice.download(), want) << "vocab " << vocab << " rank " << rank << " of " << world;
      q.logits_bf16 = slice.data();
      q.masks = masks.data();
      q.mask_rows = mask_rows.data();
      token_mask_cpu(q);
      ASSERT_EQ(slice, want) << "CPU reference, vocab " << vocab << " rank " << rank << " of " << world;
    }
  }
}

}  // namespace
}  // namespace gossamer::kernels

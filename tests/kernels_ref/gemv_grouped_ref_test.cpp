// The decode GEMVs' grouped-mode contract (kernels/gemv_grouped.h), checked on the host before any launch: the
// grid's expert slots, and the refusals (a pair count outside 1–32, pair_row written before the PDL wait).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "kernels/gemv_fp8.h"
#include "kernels/gemv_grouped.h"

namespace gossamer::kernels {
namespace {

GemvFp8Params grouped(int pairs, int local) {
  static const int32_t ids[kGemvMaxPairs] = {};
  GemvFp8Params p;
  p.topk_ids = ids;
  p.num_pairs = pairs;
  p.num_local_experts = local;
  return p;
}

void expect_refused(const GemvFp8Params& p, const std::string& says) {
  try {
    gemv_grouped_slots(p, "gemv_fp8");
    ADD_FAILURE() << "accepted; expected a refusal saying " << says;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(GemvGrouped, SlotsBoundTheUsedExperts) {
  EXPECT_EQ(gemv_grouped_slots(grouped(4, 32), "gemv_fp8"), 4);    // one token: ≤ 4 experts
  EXPECT_EQ(gemv_grouped_slots(grouped(32, 32), "gemv_fp8"), 32);  // 8 tokens: ≤ 32 slots
  EXPECT_EQ(gemv_grouped_slots(grouped(32, 2), "gemv_fp8"), 8);    // 2 experts × ⌈32 / 8⌉ chunks
  EXPECT_EQ(gemv_grouped_slots(grouped(12, 1), "gemv_fp8"), 2);
}

TEST(GemvGrouped, RefusesBadContracts) {
  int32_t pair_row[kGemvMaxPairs];
  expect_refused(grouped(0, 32), "num_pairs 0 not in [1, 32]");
  expect_refused(grouped(kGemvMaxPairs + 1, 32), "not in [1, 32]");
  expect_refused(grouped(4, 0), "bad grouped parameters");

  GemvFp8Params early_outputs = grouped(4, 32);
  early_outputs.topk_from_earlier_kernel = true;
  early_outputs.pair_row = pair_row;
  expect_refused(early_outputs, "pair_row needs topk_from_earlier_kernel off");
  early_outputs.pair_row = nullptr;
  EXPECT_EQ(gemv_grouped_slots(early_outputs, "gemv_fp8"), 4);  // the down projection's form

  EXPECT_TRUE(gemv_grouped(grouped(4, 32)));
  EXPECT_FALSE(gemv_grouped(GemvFp8Params{}));
}

}  // namespace
}  // namespace gossamer::kernels

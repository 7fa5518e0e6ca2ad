// The decode GEMVs' grouped-mode contract (kernels/gemv_grouped.h), checked on the host before any launch: the
// grid's expert slots, and the refusals (both routings at once, routing in the kernel without whole tokens or
// with an expert count outside 4–256, outputs written before the PDL wait, routing outputs without routing).
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

TEST(GemvGrouped, RefusesContradictoryRouting) {
  const uint16_t logits[4 * 32] = {};
  int32_t ids_out[kGemvMaxPairs];
  float weights_out[kGemvMaxPairs];
  int32_t pair_row[kGemvMaxPairs];

  GemvFp8Params both = grouped(4, 32);
  both.router_logits = logits;
  both.num_experts = 32;
  expect_refused(both, "topk_ids or router_logits, not both");

  GemvFp8Params routed = grouped(4, 32);
  routed.topk_ids = nullptr;
  routed.router_logits = logits;
  routed.num_experts = 32;
  EXPECT_EQ(gemv_grouped_slots(routed, "gemv_fp8"), 4);
  EXPECT_TRUE(gemv_grouped(routed));

  GemvFp8Params partial = routed;
  partial.num_pairs = 6;  // a token and a half
  expect_refused(partial, "whole tokens");
  GemvFp8Params too_many = routed;
  too_many.num_experts = 257;
  expect_refused(too_many, "4–256 experts");

  GemvFp8Params early_outputs = routed;
  early_outputs.topk_from_earlier_kernel = true;
  early_outputs.topk_ids_out = ids_out;
  expect_refused(early_outputs, "need topk_from_earlier_kernel off");
  early_outputs.topk_ids_out = nullptr;
  early_outputs.pair_row = pair_row;
  expect_refused(early_outputs, "need topk_from_earlier_kernel off");
  early_outputs.pair_row = nullptr;
  EXPECT_EQ(gemv_grouped_slots(early_outputs, "gemv_fp8"), 4);  // the down projection's form

  GemvFp8Params outputs_without_routing = grouped(4, 32);
  outputs_without_routing.topk_weights_out = weights_out;
  expect_refused(outputs_without_routing, "need router_logits");

  EXPECT_FALSE(gemv_grouped(GemvFp8Params{}));
}

}  // namespace
}  // namespace gossamer::kernels

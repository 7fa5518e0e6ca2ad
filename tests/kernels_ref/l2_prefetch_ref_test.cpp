// The decode GEMVs' L2 prefetch ranges (kernels/l2_prefetch.h), on the host: the launchers' refusals, the split
// of a range over a grid's CTAs and lanes, and the ranges the MoE decode block gives its two GEMVs.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/fp8_tiled.h"
#include "kernels/l2_prefetch.h"
#include "kernels/moe.h"
#include "kernels/mxfp4_tiled.h"

namespace gossamer::kernels {
namespace {

void expect_refused(const L2Prefetch& r, bool grouped, const std::string& says) {
  try {
    check_l2_prefetch(r, grouped, "gemv_fp8");
    ADD_FAILURE() << "accepted; expected a refusal saying " << says;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(L2Prefetch, LaunchersRefuseMisalignedRanges) {
  alignas(16) static const uint8_t bytes[4096] = {};
  check_l2_prefetch({}, false, "gemv_fp8");                        // none
  check_l2_prefetch({bytes, 4096, 0}, false, "gemv_fp8");          // a plain range
  check_l2_prefetch({bytes, 1024, 1024}, true, "gemv_fp8");        // one per expert
  expect_refused({bytes + 8, 1024, 0}, false, "16-byte aligned");  // pointer
  expect_refused({bytes, 1000, 0}, false, "16-byte aligned");      // size
  expect_refused({bytes, 1024, 1000}, true, "16-byte aligned");    // group stride
  expect_refused({bytes, 1024, 1024}, false, "needs a grouped GEMV");
  EXPECT_FALSE(l2_prefetch_wanted({bytes, 0, 0}));
}

// Every unit of the range is asked for exactly once, whatever the grid, including ranges shorter than it.
TEST(L2Prefetch, PiecesCoverTheRangeOnce) {
  for (const int64_t units : {int64_t{0}, int64_t{1}, int64_t{31}, int64_t{1000}, int64_t{737'280}}) {
    for (const int64_t parts : {int64_t{1}, int64_t{7}, int64_t{90}, int64_t{360}}) {
      std::vector<int> asked(static_cast<size_t>(units), 0);
      for (int64_t part = 0; part < parts; ++part) {
        for (int lane = 0; lane < 32; ++lane) {
          const L2PrefetchPiece piece = l2_prefetch_piece(units, part, parts, lane);
          ASSERT_LE(piece.begin, piece.end);
          for (int64_t u = piece.begin; u < piece.end; ++u) ++asked[static_cast<size_t>(u)];
        }
      }
      for (int64_t u = 0; u < units; ++u) ASSERT_EQ(asked[static_cast<size_t>(u)], 1) << units << " units, " << parts;
    }
  }
}

// The MoE decode block: gate_up asks for each CTA's expert's down weights (decode_prefetch_down, one group of
// w2 per local expert), down for decode_prefetch_next; both take decode_prefetch_own.
TEST(L2Prefetch, MoeDecodeGivesGateUpTheDownWeights) {
  alignas(16) static const uint8_t w1[16] = {}, w2[16] = {}, next[16] = {};
  MoeParams p;
  p.num_tokens = 1;
  p.num_experts = 32;
  p.num_local_experts = 32;
  p.hidden = 2880;
  p.inter = 2880;
  p.w1 = w1;
  p.w2 = w2;
  const int32_t ids[4] = {0, 1, 2, 3};
  const MoeDecodeRouting routing{const_cast<int32_t*>(ids), nullptr};
  EXPECT_FALSE(l2_prefetch_wanted(moe_decode_projection(p, true, routing, nullptr, nullptr, nullptr).prefetch_next));

  p.decode_prefetch_own = true;
  p.decode_prefetch_down = true;
  p.decode_prefetch_next = {next, 4096, 0};
  for (const bool mxfp4 : {true, false}) {
    p.weights_mxfp4 = mxfp4;
    p.weights_tiled = !mxfp4;
    const int64_t group = mxfp4 ? mxfp4_tiled_group_bytes(2880, 2880) : fp8_tiled_group_bytes(2880, 2880);
    const GemvFp8Params up = moe_decode_projection(p, true, routing, nullptr, nullptr, nullptr);
    EXPECT_TRUE(up.prefetch_own);
    EXPECT_EQ(up.prefetch_next.ptr, w2);
    EXPECT_EQ(up.prefetch_next.bytes, group);
    EXPECT_EQ(up.prefetch_next.group_stride, group);
    check_l2_prefetch(up.prefetch_next, true, "gemv_fp8");
    const GemvFp8Params down = moe_decode_projection(p, false, routing, nullptr, nullptr, nullptr);
    EXPECT_TRUE(down.prefetch_own);
    EXPECT_EQ(down.prefetch_next.ptr, next);
    EXPECT_EQ(down.prefetch_next.bytes, 4096);
  }
}

}  // namespace
}  // namespace gossamer::kernels

// Host-side launch-shape rules of the decode GEMVs (kernels/gemv_launch.h): no GPU needed.
#include <gtest/gtest.h>

#include "kernels/gemv_launch.h"

namespace gossamer::kernels {
namespace {

// The rule's cluster (gemv_cluster_size) on an H200 (132 SMs, 8-warp CTAs) at the gemv-tune shapes: one
// token's 4 experts (K = 2880: 23 K steps of 128), gate_up 360 row tiles, down 180.
TEST(GemvLaunchShape, RuleClusterKeepsOneCtaPerSmAndTwoStepsPerWarp) {
  const int sms = 132, k_steps = 23;
  EXPECT_EQ(gemv_cluster_size(360, 1, k_steps, 8, sms, 0, "test"), 1);  // 720 > 132
  EXPECT_EQ(gemv_cluster_size(180, 1, k_steps, 8, sms, 0, "test"), 1);  // 360 > 132
  EXPECT_EQ(gemv_cluster_size(16, 1, 128, 8, sms, 0, "test"), 8);       // small N, long K: up to 8
  EXPECT_EQ(gemv_cluster_size(16, 1, 23, 8, sms, 0, "test"), 2);        // every warp keeps 2 K steps
  EXPECT_EQ(gemv_cluster_size(360, 1, k_steps, 8, sms, 4, "test"), 4);  // a requested cluster wins
  EXPECT_THROW(gemv_cluster_size(360, 1, k_steps, 8, sms, 3, "test"), std::exception);
}

}  // namespace
}  // namespace gossamer::kernels

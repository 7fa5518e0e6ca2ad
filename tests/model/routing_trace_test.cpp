// RoutingTrace and routing_spread (model/routing_trace.h): each token's top-k counted per layer with the kernels'
// selection, and the spread's means against a hand count.
#include "model/routing_trace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"

namespace gossamer::model {
namespace {

TEST(RoutingTrace, CountsEachTokensTopKPerLayer) {
  RoutingTrace trace;
  trace.begin_step();
  // 3 tokens × 4 experts, top 2. Layer 0: token 0 → {1, 3}, token 1 → {1, 2}, token 2 → {0, 1} (a tie between
  // experts 0 and 2 goes to the lower index).
  trace.add_layer(std::vector<float>{0, 5, 1, 4, /**/ -1, 3, 2, 0, /**/ 2, 7, 2, -3}, 3, 4, 2);
  // Layer 1: every token → {2, 3}.
  trace.add_layer(std::vector<float>{0, 0, 9, 8, /**/ 1, 1, 5, 6, /**/ -2, -2, 0, 0}, 3, 4, 2);
  const RoutingCounts& counts = trace.counts();
  ASSERT_TRUE(counts.valid());
  EXPECT_EQ(counts.tokens, 3);
  EXPECT_EQ(counts.experts, 4);
  EXPECT_EQ(counts.top_k, 2);
  ASSERT_EQ(counts.rows.size(), 2u);
  EXPECT_EQ(counts.rows[0], (std::vector<int32_t>{1, 3, 1, 1}));
  EXPECT_EQ(counts.rows[1], (std::vector<int32_t>{0, 0, 3, 3}));

  const RoutingSpread spread = routing_spread(counts);
  EXPECT_DOUBLE_EQ(spread.experts_touched, (4.0 + 2.0) / 2);
  EXPECT_DOUBLE_EQ(spread.busiest_rows, (3.0 + 3.0) / 2);
  EXPECT_DOUBLE_EQ(spread.mean_rows, 3.0 * 2 / 4);
  EXPECT_NEAR(spread.uniform_touched, 4.0 * (1.0 - std::pow(0.5, 3)), 1e-12);

  trace.begin_step();
  EXPECT_FALSE(trace.counts().valid()) << "a new step forgets the last one's layers";
  EXPECT_DOUBLE_EQ(routing_spread(trace.counts()).experts_touched, 0.0);
}

TEST(RoutingTrace, RefusesMismatchedShapes) {
  RoutingTrace trace;
  trace.begin_step();
  EXPECT_THROW(trace.add_layer(std::vector<float>(7), 2, 4, 2), Error) << "7 logits for 2 × 4";
  EXPECT_THROW(trace.add_layer(std::vector<float>(8), 2, 4, 5), Error) << "top 5 of 4 experts";
  trace.add_layer(std::vector<float>(8), 2, 4, 2);
  EXPECT_THROW(trace.add_layer(std::vector<float>(12), 3, 4, 2), Error) << "a layer with other tokens in one step";
}

}  // namespace
}  // namespace gossamer::model

// The gossamer-only metrics of /metrics (server/metrics.h): token masks: only steps with masks are observed, only under
// `gossamer:` (vLLM has no such metric), as a histogram of seconds plus a counter of rows; the engine
// thread's seconds by phase.
#include "server/metrics.h"

#include <gtest/gtest.h>

namespace gossamer::server {
namespace {

TEST(Metrics, TokenMaskFillTimePerMaskedStep) {
  Metrics metrics("m", 1024, true);
  engine::StepInfo unmasked;
  unmasked.num_tokens = 64;
  metrics.observe_step(unmasked);
  engine::StepInfo masked = unmasked;
  masked.num_constrained_rows = 64;
  masked.token_mask_seconds = 0.002;
  metrics.observe_step(masked);
  masked.token_mask_seconds = 0.0004;
  metrics.observe_step(masked);
  const std::string text = metrics.render(nullptr);
  EXPECT_NE(text.find("# TYPE gossamer:token_mask_fill_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("gossamer:token_mask_fill_seconds_count{model_name=\"m\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gossamer:token_mask_fill_seconds_sum{model_name=\"m\"} 0.0024"), std::string::npos);
  EXPECT_NE(text.find("gossamer:token_mask_fill_seconds_bucket{model_name=\"m\",le=\"0.00050000000000000001\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("gossamer:token_mask_fill_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("gossamer:token_mask_rows_total{model_name=\"m\"} 128\n"), std::string::npos);
  EXPECT_EQ(text.find("vllm:token_mask"), std::string::npos);
  EXPECT_NE(text.find("vllm:iteration_tokens_total_count{model_name=\"m\"} 3\n"), std::string::npos);
}

TEST(Metrics, EngineLoopSecondsByPhase) {
  Metrics metrics("m", 1024, true);
  engine::EngineStats stats;
  stats.loop.wait = 1.5;
  stats.loop.launch = 0.25;
  stats.num_steps_launched_ahead_total = 7;
  const std::string text = metrics.render(&stats);
  EXPECT_NE(text.find("# TYPE gossamer:engine_loop_seconds_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("gossamer:engine_loop_seconds_total{model_name=\"m\",phase=\"wait\"} 1.5\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gossamer:engine_loop_seconds_total{model_name=\"m\",phase=\"launch\"} 0.25\n"),
            std::string::npos);
  EXPECT_NE(text.find("gossamer:engine_loop_seconds_total{model_name=\"m\",phase=\"idle\"} 0\n"), std::string::npos);
  EXPECT_EQ(text.find("vllm:engine_loop"), std::string::npos);  // vLLM has no such metric
  EXPECT_NE(text.find("gossamer:engine_steps_launched_ahead_total{model_name=\"m\"} 7\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace gossamer::server
